/* v1model program for the finsy end-to-end test of `p4sim serve`:
 *   - table `dmac` (exact on the destination MAC): forward / flood (multicast group) /
 *     to_cpu (PacketIn) / drop (default);
 *   - PacketOut: the packet_out header names the egress port;
 *   - frames with etherType 0x88B5 carry a `tag` header that the switch fills with the value
 *     of register tag_reg[0], the ingress port and (in egress) the egress port, so the test
 *     sees register writes and each multicast copy's port on the wire. */
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#define CPU_PORT 255

@controller_header("packet_in")
header packet_in_t {
    bit<9> ingress_port;
    bit<7> _pad;
}

@controller_header("packet_out")
header packet_out_t {
    bit<9> egress_port;
    bit<7> _pad;
}

header ethernet_t {
    bit<48> dstAddr;
    bit<48> srcAddr;
    bit<16> etherType;
}

header tag_t {
    bit<32> reg_value;
    bit<16> ingress_port;
    bit<16> egress_port;
}

struct headers_t {
    packet_out_t packet_out;
    packet_in_t  packet_in;
    ethernet_t   ethernet;
    tag_t        tag;
}

struct meta_t { }

parser L2Parser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        transition select(sm.ingress_port) {
            CPU_PORT: parse_packet_out;
            default: parse_ethernet;
        }
    }
    state parse_packet_out {
        pkt.extract(hdr.packet_out);
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.etherType) {
            0x88B5: parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        pkt.extract(hdr.tag);
        transition accept;
    }
}

control L2Verify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control L2Ingress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>, bit<32>>(8) tag_reg;

    action forward(bit<9> port) {
        sm.egress_spec = port;
    }
    action flood(bit<16> group) {
        sm.mcast_grp = group;
    }
    action to_cpu() {
        sm.egress_spec = CPU_PORT;
    }
    action drop() {
        mark_to_drop(sm);
    }
    table dmac {
        key = { hdr.ethernet.dstAddr : exact; }
        actions = { forward; flood; to_cpu; drop; }
        default_action = drop();
        size = 64;
    }
    apply {
        if (hdr.packet_out.isValid()) {
            sm.egress_spec = hdr.packet_out.egress_port;
            hdr.packet_out.setInvalid();
        } else {
            dmac.apply();
        }
        if (hdr.tag.isValid()) {
            bit<32> v;
            tag_reg.read(v, 0);
            hdr.tag.reg_value = v;
            hdr.tag.ingress_port = (bit<16>)sm.ingress_port;
        }
    }
}

control L2Egress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.egress_port == CPU_PORT) {
            hdr.packet_in.setValid();
            hdr.packet_in.ingress_port = sm.ingress_port;
            hdr.packet_in._pad = 0;
        } else if (hdr.tag.isValid()) {
            hdr.tag.egress_port = (bit<16>)sm.egress_port;
        }
    }
}

control L2Compute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control L2Deparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.packet_in);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.tag);
    }
}

V1Switch(L2Parser(), L2Verify(), L2Ingress(), L2Egress(), L2Compute(), L2Deparser()) main;
