/* Test program for the P4Runtime server: exact, lpm and ternary+range+optional tables, a const
 * table, a register, an indexed counter, a digest, multicast/clone actions and controller
 * headers (direct counters are in direct_counter.p4). Port 255 is the CPU port. */
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

const bit<9> CPU_PORT = 255;

@controller_header("packet_in")
header packet_in_h {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_h {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header ipv4_t {
    bit<4>  version;
    bit<4>  ihl;
    bit<8>  diffserv;
    bit<16> totalLen;
    bit<16> identification;
    bit<3>  flags;
    bit<13> fragOffset;
    bit<8>  ttl;
    bit<8>  protocol;
    bit<16> hdrChecksum;
    bit<32> srcAddr;
    bit<32> dstAddr;
}

struct learn_digest_t {
    bit<48> srcAddr;
    bit<9>  ingress_port;
}

struct headers {
    packet_out_h packet_out;
    packet_in_h  packet_in;
    ethernet_t   ethernet;
    ipv4_t       ipv4;
}

struct metadata {
    learn_digest_t learn;
}

parser MyParser(packet_in packet, out headers hdr, inout metadata meta,
                inout standard_metadata_t standard_metadata) {
    state start {
        transition select(standard_metadata.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        packet.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x0800: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition accept;
    }
}

control MyVerifyChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyIngress(inout headers hdr, inout metadata meta,
                  inout standard_metadata_t standard_metadata) {
    counter<bit<32>>(16, CounterType.packets_and_bytes) port_counter;
    register<bit<32>, bit<32>>(8) pkt_count;

    action drop() {
        mark_to_drop(standard_metadata);
    }
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }
    action to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
    }
    action set_mcast(bit<16> group) {
        standard_metadata.mcast_grp = group;
    }
    action clone_to(bit<32> session) {
        clone(CloneType.I2E, session);
    }
    action learn() {
        meta.learn.srcAddr = hdr.ethernet.srcAddr;
        meta.learn.ingress_port = standard_metadata.ingress_port;
        digest<learn_digest_t>(1, meta.learn);
    }

    table learn_t {
        key = { hdr.ethernet.srcAddr: exact; }
        actions = { learn; NoAction; }
        default_action = learn();
    }
    table exact_t {
        key = { hdr.ethernet.dstAddr: exact; }
        actions = { forward; set_mcast; clone_to; to_cpu; drop; NoAction; }
        default_action = NoAction();
    }
    table lpm_t {
        key = { hdr.ipv4.dstAddr: lpm; }
        actions = { forward; drop; @defaultonly NoAction; }
        default_action = NoAction();
        size = 512;
    }
    table acl_t {
        key = {
            hdr.ipv4.srcAddr: ternary;
            hdr.ipv4.ttl: range;
            hdr.ipv4.protocol: optional;
        }
        actions = { forward; drop; @tableonly to_cpu; NoAction; }
        default_action = NoAction();
    }
    table const_t {
        key = { hdr.ethernet.etherType: exact; }
        actions = { drop; NoAction; }
        const default_action = NoAction();
        const entries = {
            0x88cc: drop();
        }
    }

    apply {
        if (hdr.packet_out.isValid()) {
            standard_metadata.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            port_counter.count((bit<32>) standard_metadata.ingress_port);
            bit<32> n;
            pkt_count.read(n, 0);
            pkt_count.write(0, n + 1);
            learn_t.apply();
            exact_t.apply();
            if (hdr.ipv4.isValid()) {
                lpm_t.apply();
                acl_t.apply();
            }
            const_t.apply();
        }
    }
}

control MyEgress(inout headers hdr, inout metadata meta,
                 inout standard_metadata_t standard_metadata) {
    apply {
        if (standard_metadata.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = standard_metadata.ingress_port;
            hdr.packet_in._pad = 0;
        }
    }
}

control MyComputeChecksum(inout headers hdr, inout metadata meta) {
    apply { }
}

control MyDeparser(packet_out packet, in headers hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.ipv4);
    }
}

V1Switch(MyParser(), MyVerifyChecksum(), MyIngress(), MyEgress(), MyComputeChecksum(),
         MyDeparser()) main;
