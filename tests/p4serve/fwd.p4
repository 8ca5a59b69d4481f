/* Minimal v1model program for the `p4sim serve` integration tests: port 1 <-> port 2 by
 * const table entries, everything else dropped. */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

struct headers_t {
    ethernet_t ethernet;
}

struct meta_t { }

parser FwdParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                 inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control FwdVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control FwdIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_port(bit<9> port) {
        sm.egress_spec = port;
    }
    action drop() {
        mark_to_drop(sm);
    }
    table fwd {
        key = { sm.ingress_port : exact; }
        actions = { set_port; drop; }
        const entries = {
            1 : set_port(2);
            2 : set_port(1);
        }
        default_action = drop();
    }
    apply {
        fwd.apply();
    }
}

control FwdEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control FwdCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control FwdDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(FwdParser(), FwdVerify(), FwdIngress(), FwdEgress(), FwdCompute(), FwdDeparser()) main;
