// p4sim corpus: bit<N>/int<N> arithmetic with wrap-around at odd widths, saturating
// arithmetic, shifts, slices (read and write), concatenation and casts.
// The input header `inp` is followed by a result header `res` built in ingress; the
// expected values are computed in expected_values.py (plain Python, no p4sim).
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header inp_t {
    bit<8>  a;
    bit<8>  b;
    bit<16> c;
    bit<64> d;
}

header res_t {
    bit<3>  r3;      // a[2:0] + 7                 (wraps at 3 bits)
    bit<13> r13;     // (bit<13>) c * 3            (wraps at 13 bits)
    bit<48> r48;     // (bit<48>) d + 0xFFFFFFFFFFFF
    bit<64> m64;     // d * 3
    bit<64> s64;     // d + 0x8000000000000001
    int<8>  s1;      // (int<8>) a - 100
    int<8>  s2;      // s1 >> 2                    (arithmetic shift)
    bit<8>  sat1;    // a |+| b
    bit<8>  sat2;    // a |-| b
    int<8>  sat3;    // (int<8>) a |+| 100
    int<8>  sat4;    // (int<8>) a |-| 100
    bit<8>  sh1;     // a << 3
    bit<8>  sh2;     // a >> 2
    bit<16> sh3;     // c << b[3:0]
    bit<8>  sh4;     // a << b                     (0 once b >= 8)
    bit<8>  sl;      // c[11:4]
    bit<16> sw;      // c with [7:4] := 0xA
    bit<16> cat;     // a ++ b
    bit<8>  cat2;    // a[3:0] ++ b[7:4]
    bit<8>  nar;     // (bit<8>) c
    bit<8>  s2u;     // (bit<8>) s1
    bit<16> sext;    // (bit<16>) (int<16>) s1
    bit<1>  gt;      // (bit<1>) (a > b)
    bit<1>  lsb;     // (bool) b[0:0] ? 1 : 0
    bit<1>  neg1;    // s1 < 0
    bit<1>  big;     // d > 0x7FFFFFFFFFFFFFFF
    bit<4>  pad;
    bit<8>  neg;     // -a
    bit<8>  inv;     // ~a
    int<8>  mul;     // s1 * 3
    bit<8>  bits;    // (a & 0xF0) | (b ^ 0x0F)
}

struct headers_t {
    inp_t inp;
    res_t res;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.inp);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 2;
        hdr.res.setValid();
        bit<8> a = hdr.inp.a;
        bit<8> b = hdr.inp.b;
        bit<16> c = hdr.inp.c;
        bit<64> d = hdr.inp.d;

        hdr.res.r3 = a[2:0] + 7;
        hdr.res.r13 = ((bit<13>) c) * 3;
        hdr.res.r48 = (bit<48>) d + 48w0xFFFFFFFFFFFF;
        hdr.res.m64 = d * 3;
        hdr.res.s64 = d + 64w0x8000000000000001;

        int<8> s = (int<8>) a;
        hdr.res.s1 = s - 100;
        hdr.res.s2 = hdr.res.s1 >> 2;
        hdr.res.sat1 = a |+| b;
        hdr.res.sat2 = a |-| b;
        hdr.res.sat3 = s |+| 100;
        hdr.res.sat4 = s |-| 100;

        hdr.res.sh1 = a << 3;
        hdr.res.sh2 = a >> 2;
        hdr.res.sh3 = c << b[3:0];
        hdr.res.sh4 = a << b;

        hdr.res.sl = c[11:4];
        bit<16> t = c;
        t[7:4] = 4w0xA;
        hdr.res.sw = t;
        hdr.res.cat = a ++ b;
        hdr.res.cat2 = a[3:0] ++ b[7:4];

        hdr.res.nar = (bit<8>) c;
        hdr.res.s2u = (bit<8>) hdr.res.s1;
        hdr.res.sext = (bit<16>) ((int<16>) hdr.res.s1);
        hdr.res.gt = (bit<1>) (a > b);
        hdr.res.lsb = ((bool) b[0:0]) ? 1w1 : 1w0;
        hdr.res.neg1 = hdr.res.s1 < 0 ? 1w1 : 1w0;
        hdr.res.big = d > 64w0x7FFFFFFFFFFFFFFF ? 1w1 : 1w0;
        hdr.res.pad = 0;

        hdr.res.neg = -a;
        hdr.res.inv = ~a;
        hdr.res.mul = hdr.res.s1 * 3;
        hdr.res.bits = (a & 0xF0) | (b ^ 0x0F);
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
        pkt.emit(hdr.inp);
        pkt.emit(hdr.res);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
