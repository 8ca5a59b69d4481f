// p4sim corpus: p4lang-tutorials-style calculator (lookahead in select, @name, const entries,
// const default_action, legacy register, hash with cast arguments, digest<T> with a list).
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dstAddr; bit<48> srcAddr; bit<16> etherType; }
header p4calc_t { bit<8> p; bit<8> four; bit<8> ver; bit<8> op; bit<32> operand_a; bit<32> operand_b; bit<32> res; }
struct headers { ethernet_t ethernet; p4calc_t p4calc; }
struct metadata { }
struct learn_t { bit<48> src; bit<9> port; }
const bit<16> P4CALC_ETYPE = 0x1234;
const bit<8>  P4CALC_P     = 0x50;
const bit<8>  P4CALC_4     = 0x34;
const bit<8>  P4CALC_VER   = 0x01;
const bit<8>  P4CALC_PLUS  = 0x2b;
const bit<8>  P4CALC_MINUS = 0x2d;
const bit<8>  P4CALC_AND   = 0x26;

parser MyParser(packet_in packet, out headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            P4CALC_ETYPE : check_p4calc;
            default      : accept;
        }
    }
    state check_p4calc {
        transition select(packet.lookahead<p4calc_t>().p, packet.lookahead<p4calc_t>().four, packet.lookahead<p4calc_t>().ver) {
            (P4CALC_P, P4CALC_4, P4CALC_VER) : parse_p4calc;
            default                          : accept;
        }
    }
    state parse_p4calc { packet.extract(hdr.p4calc); transition accept; }
}
control MyVerifyChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyIngress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) {
    register<bit<32>>(16) hits;
    action send_back(bit<32> result) {
        bit<48> tmp;
        hdr.p4calc.res = result;
        tmp = hdr.ethernet.dstAddr;
        hdr.ethernet.dstAddr = hdr.ethernet.srcAddr;
        hdr.ethernet.srcAddr = tmp;
        standard_metadata.egress_spec = standard_metadata.ingress_port;
    }
    action operation_add() { send_back(hdr.p4calc.operand_a + hdr.p4calc.operand_b); }
    action operation_sub() { send_back(hdr.p4calc.operand_a - hdr.p4calc.operand_b); }
    action operation_and() { send_back(hdr.p4calc.operand_a & hdr.p4calc.operand_b); }
    action operation_drop() { mark_to_drop(standard_metadata); }
    @name(".calculate") table calculate {
        key = { hdr.p4calc.op : exact @name("op"); }
        actions = { operation_add; operation_sub; operation_and; operation_drop; }
        const default_action = operation_drop();
        const entries = {
            P4CALC_PLUS : operation_add();
            P4CALC_MINUS: operation_sub();
            P4CALC_AND  : operation_and();
        }
    }
    apply {
        if (hdr.p4calc.isValid()) {
            calculate.apply();
            bit<32> h;
            hash(h, HashAlgorithm.crc16, (bit<1>)0, { hdr.p4calc.operand_a, hdr.p4calc.operand_b }, (bit<5>)16);
            bit<32> n; hits.read(n, h); hits.write(h, n + 1);
            digest<learn_t>(1, {hdr.ethernet.srcAddr, standard_metadata.ingress_port});
        } else {
            operation_drop();
        }
    }
}
control MyEgress(inout headers hdr, inout metadata meta, inout standard_metadata_t standard_metadata) { apply { } }
control MyComputeChecksum(inout headers hdr, inout metadata meta) { apply { } }
control MyDeparser(packet_out packet, in headers hdr) { apply { packet.emit(hdr.ethernet); packet.emit(hdr.p4calc); } }
V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(), MyDeparser()) main;
