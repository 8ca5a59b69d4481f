// p4sim corpus: P4 functions (with return), exit (in apply and in an action called by a
// table; egress still runs), return in a control, and nested control instantiation with
// constructor parameters.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t {
    bit<8> op;
    bit<8> v;
    bit<8> w;
    bit<8> ig;   // out: set by ingress; 0x01 means ingress ran to its end
    bit<8> eg;   // out: 0xE9 when egress ran
}

struct headers_t {
    h_t h;
}

struct meta_t { }

bit<8> max8(in bit<8> x, in bit<8> y) {
    return x > y ? x : y;
}

bit<8> clamp(in bit<8> x, in bit<8> hi) {
    if (x > hi) {
        return hi;
    }
    return x;
}

void bump(inout bit<8> x) {
    x = x + 1;
}

control Adder(inout bit<8> v)(bit<8> k) {
    apply {
        v = v + k;
    }
}

control Twice(inout bit<8> v)(bit<8> k1, bit<8> k2) {
    Adder(k1) first;
    Adder(k2) second;
    apply {
        first.apply(v);
        second.apply(v);
    }
}

control Early(inout bit<8> v) {
    apply {
        if (v == 0) {
            return;
        }
        v = v - 1;
    }
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Twice(8w1, 8w10) tw;
    Early() early;

    action stop_here() {
        hdr.h.ig = 0xEE;
        exit;
    }

    table t_stop {
        key = { hdr.h.op: exact; }
        actions = { stop_here; NoAction; }
        default_action = NoAction();
        const entries = {
            3 : stop_here();
        }
    }

    apply {
        sm.egress_spec = 1;
        hdr.h.ig = 0;
        if (hdr.h.op == 1) {
            tw.apply(hdr.h.v);
        } else if (hdr.h.op == 2) {
            hdr.h.v = max8(hdr.h.v, hdr.h.w);
            hdr.h.w = clamp(hdr.h.w, 0x40);
            bump(hdr.h.v);
        } else if (hdr.h.op == 4) {
            hdr.h.ig = 0x44;
            exit;
        }
        t_stop.apply();
        early.apply(hdr.h.w);
        hdr.h.ig = hdr.h.ig | 0x01;
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.eg = 0xE9;
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
