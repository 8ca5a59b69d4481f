// p4sim corpus: the v1model hash extern with crc16, crc32, csum16, identity and xor16
// (bmv2's algorithms), result = base + (hash mod max). Expected values are computed in
// expected_values.py with zlib.crc32 and small reference implementations.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header hin_t {
    bit<32> a;
    bit<16> b;
    bit<8>  c;
    bit<8>  d;
}

header hout_t {
    bit<16> h16;    // crc16 {a, b, c, d}
    bit<32> h32;    // crc32 {a, b, c, d}
    bit<16> cs;     // csum16 {a, b, c, d}
    bit<32> id;     // identity {a}
    bit<16> x16;    // xor16 {a, b, c, d}
    bit<16> hm;     // 7 + crc32 {b, c, d} mod 1000
}

struct headers_t {
    hin_t  hin;
    hout_t hout;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.hin);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.hout.setValid();
        hash(hdr.hout.h16, HashAlgorithm.crc16, 16w0,
             { hdr.hin.a, hdr.hin.b, hdr.hin.c, hdr.hin.d }, 32w65536);
        hash(hdr.hout.h32, HashAlgorithm.crc32, 32w0,
             { hdr.hin.a, hdr.hin.b, hdr.hin.c, hdr.hin.d }, 64w4294967296);
        hash(hdr.hout.cs, HashAlgorithm.csum16, 16w0,
             { hdr.hin.a, hdr.hin.b, hdr.hin.c, hdr.hin.d }, 32w65536);
        hash(hdr.hout.id, HashAlgorithm.identity, 32w0,
             { hdr.hin.a }, 64w4294967296);
        hash(hdr.hout.x16, HashAlgorithm.xor16, 16w0,
             { hdr.hin.a, hdr.hin.b, hdr.hin.c, hdr.hin.d }, 32w65536);
        hash(hdr.hout.hm, HashAlgorithm.crc32, 16w7,
             { hdr.hin.b, hdr.hin.c, hdr.hin.d }, 16w1000);
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
        pkt.emit(hdr.hin);
        pkt.emit(hdr.hout);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
