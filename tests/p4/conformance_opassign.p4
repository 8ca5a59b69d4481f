// p4sim conformance: compound assignment (P4_16 v1.2.4, `a op= b` is `a = a op b` with `a`
// evaluated once): += -= *= /= %= &= |= ^= <<= >>= |+|= |-|= on header fields, a slice, a
// signed field, and a header stack element indexed at run time by an int<8> field.
#include <core.p4>
#include <v1model.p4>

header in_t { bit<8> x; bit<8> y; int<8> idx; }
header res_t {
    bit<8> add; bit<8> sub; bit<8> mul; bit<8> band; bit<8> bor; bit<8> bxor;
    bit<8> shl; bit<8> shr; bit<8> sadd; bit<8> ssub; bit<8> div; bit<8> mod;
    bit<8> sl; int<8> sgn;
}
header elem_t { bit<8> v; }
struct headers { in_t i; elem_t[3] s; res_t r; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.i);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        pkt.extract(hdr.s.next);
        transition accept;
    }
}

control VC(inout headers hdr, inout meta_t meta) { apply { } }

control Ing(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> x = hdr.i.x;
        bit<8> y = hdr.i.y;
        hdr.r.setValid();
        hdr.r.add = x;  hdr.r.add += y;
        hdr.r.sub = x;  hdr.r.sub -= y;
        hdr.r.mul = x;  hdr.r.mul *= y;
        hdr.r.band = x; hdr.r.band &= y;
        hdr.r.bor = x;  hdr.r.bor |= y;
        hdr.r.bxor = x; hdr.r.bxor ^= y;
        hdr.r.shl = x;  hdr.r.shl <<= 2;
        hdr.r.shr = x;  hdr.r.shr >>= 3;
        hdr.r.sadd = x; hdr.r.sadd |+|= y;
        hdr.r.ssub = y; hdr.r.ssub |-|= x;
        hdr.r.div = x;  hdr.r.div /= 4;
        hdr.r.mod = x;  hdr.r.mod %= 8;
        hdr.r.sl = x;   hdr.r.sl[3:0] += 0xf;
        hdr.r.sgn = (int<8>)x; hdr.r.sgn |-|= 100;
        hdr.s[hdr.i.idx].v += 0x10;
        sm.egress_spec = 1;
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.i);
        pkt.emit(hdr.s);
        pkt.emit(hdr.r);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
