// p4sim corpus: header unions. At most one member is valid; making one member valid
// invalidates the others; emitting the union emits its valid member.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header ty_t {
    bit<8> t;       // 4: a v4 member follows, 6: a v6 member follows
    bit<8> res;     // out: 0x01 v4 valid, 0x02 v6 valid, 0x10 union valid (as parsed),
                    //      0x20 v4 invalid after the conversion to v6
}

header v4_t {
    bit<8>  tag;
    bit<32> addr;
}

header v6_t {
    bit<8>  tag;
    bit<64> addr;
}

header_union addr_u {
    v4_t v4;
    v6_t v6;
}

struct headers_t {
    ty_t   ty;
    addr_u u;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ty);
        transition select(hdr.ty.t) {
            4: parse_v4;
            6: parse_v6;
            default: accept;
        }
    }
    state parse_v4 {
        pkt.extract(hdr.u.v4);
        transition accept;
    }
    state parse_v6 {
        pkt.extract(hdr.u.v6);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 3;
        bit<8> r = 0;
        if (hdr.u.v4.isValid()) { r = r | 0x01; }
        if (hdr.u.v6.isValid()) { r = r | 0x02; }
        if (hdr.u.isValid()) { r = r | 0x10; }
        if (hdr.u.v4.isValid()) {
            // Convert to v6: read the v4 member before making v6 valid.
            bit<32> a = hdr.u.v4.addr;
            hdr.u.v6.setValid();
            hdr.u.v6.tag = 6;
            hdr.u.v6.addr = (bit<64>) a;
            if (!hdr.u.v4.isValid()) { r = r | 0x20; }
        } else if (hdr.u.v6.isValid()) {
            hdr.u.v6.setInvalid();
        }
        hdr.ty.res = r;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ty);
        pkt.emit(hdr.u);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
