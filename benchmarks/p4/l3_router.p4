// Benchmark: a 3-table IPv4 router (LPM → next hop → source MAC), with TTL and checksum update.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header ipv4_t {
    bit<4> version; bit<4> ihl; bit<8> diffserv; bit<16> total_len; bit<16> identification;
    bit<3> flags; bit<13> frag_offset; bit<8> ttl; bit<8> protocol; bit<16> checksum;
    bit<32> src; bit<32> dst;
}
struct headers_t { ethernet_t ethernet; ipv4_t ipv4; }
struct meta_t { bit<16> nexthop; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x0800: parse_ipv4; default: accept; }
    }
    state parse_ipv4 { pkt.extract(hdr.ipv4); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action drop() { mark_to_drop(sm); }
    action set_nexthop(bit<16> nexthop) { meta.nexthop = nexthop; hdr.ipv4.ttl = hdr.ipv4.ttl - 1; }
    action set_port_dmac(bit<9> port, bit<48> dmac) { sm.egress_spec = port; hdr.ethernet.dst = dmac; }
    action set_smac(bit<48> smac) { hdr.ethernet.src = smac; }
    table ipv4_lpm { key = { hdr.ipv4.dst : lpm; } actions = { set_nexthop; drop; } default_action = drop(); size = 16384; }
    table nexthop { key = { meta.nexthop : exact; } actions = { set_port_dmac; drop; } default_action = drop(); }
    table smac { key = { sm.egress_spec : exact; } actions = { set_smac; NoAction; } }
    apply {
        if (hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            ipv4_lpm.apply();
            nexthop.apply();
            smac.apply();
        } else {
            drop();
        }
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid(),
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src, hdr.ipv4.dst },
            hdr.ipv4.checksum, HashAlgorithm.csum16);
    }
}
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.ethernet); pkt.emit(hdr.ipv4); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
