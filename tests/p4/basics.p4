// p4sim corpus: headers, structs, typedef/type/const, enums (plain and serializable),
// error, isValid/setValid/setInvalid, struct and tuple-style initializers, return.
// Results are written into the demo header (see basics.stf).
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

typedef bit<48> mac_t;
type bit<16> etype_t;
const bit<16> TYPE_DEMO = 0x88B5;

enum Color { Red, Green, Blue }
enum bit<8> Op { Add = 1, Sub = 2, Nop = 0x10 }

error { BadOp }

header ethernet_t {
    mac_t    dst;
    mac_t    src;
    bit<16>  etherType;
}

header demo_t {
    bit<8> op;
    bit<8> a;
    bit<8> b;
    bit<8> res;
    bit<8> flags;
    bit<8> color;
}

header extra_t {
    bit<16> x;
}

struct headers_t {
    ethernet_t eth;
    demo_t     demo;
    extra_t    extra;
}

struct pair_t {
    bit<8> lo;
    bit<8> hi;
}

struct meta_t {
    pair_t p;
    error  err;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        transition select(hdr.eth.etherType) {
            TYPE_DEMO: parse_demo;
            default: accept;
        }
    }
    state parse_demo {
        pkt.extract(hdr.demo);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        meta.err = error.NoError;
        if (!hdr.demo.isValid()) {
            // Not a demo packet: append the extra header and stop here.
            hdr.extra.setValid();
            hdr.extra.x = 0xABCD;
            return;
        }
        Op op = (Op) hdr.demo.op;
        bit<8> r;
        if (op == Op.Add) {
            r = hdr.demo.a + hdr.demo.b;
        } else if (op == Op.Sub) {
            r = hdr.demo.a - hdr.demo.b;
        } else {
            r = 0;
            meta.err = error.BadOp;
        }
        hdr.demo.res = r;

        Color c = Color.Blue;
        if (hdr.demo.a > hdr.demo.b) {
            c = Color.Red;
        }
        hdr.demo.color = c == Color.Red ? 8w1 : (c == Color.Green ? 8w2 : 8w3);

        meta.p = { lo = hdr.demo.a, hi = hdr.demo.b };   // struct initializer
        pair_t q = { hdr.demo.b, hdr.demo.a };            // tuple-style initializer
        hdr.demo.flags = 0;
        if (meta.err == error.BadOp) {
            hdr.demo.flags = hdr.demo.flags | 0x80;
        }
        if (meta.p.lo == q.hi && meta.p.hi == q.lo) {
            hdr.demo.flags = hdr.demo.flags | 0x01;
        }
        if ((bit<8>) Op.Nop == 0x10) {
            hdr.demo.flags = hdr.demo.flags | 0x02;
        }
        if (hdr.extra.isValid()) {
            hdr.demo.flags = hdr.demo.flags | 0x04;
        }
        etype_t et = (etype_t) hdr.eth.etherType;
        if (et == (etype_t) TYPE_DEMO) {
            hdr.demo.flags = hdr.demo.flags | 0x08;
        }

        mac_t tmp = hdr.eth.dst;
        hdr.eth.dst = hdr.eth.src;
        hdr.eth.src = tmp;

        if (op == Op.Nop) {
            hdr.demo.setInvalid();
        }
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
        pkt.emit(hdr.eth);
        pkt.emit(hdr.demo);
        pkt.emit(hdr.extra);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
