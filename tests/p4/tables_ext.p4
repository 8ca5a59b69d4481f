// p4sim corpus: runtime entries the STF runner builds with its documented extensions:
// range keys (LOW..HIGH), optional keys, VALUE&&&MASK, ternary entries without a priority
// (earlier entries win), a header stack element key (st$1.f), an isValid() key (opt.$valid$ /
// opt.valid), 'remove all' and setdefault.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t {
    bit<8>  k;      // 0xFF: an opt header follows the stack
    bit<16> r;
    bit<8>  o;
}

header s_t {
    bit<8> f;
}

header res_t {
    bit<8> a;       // t_range
    bit<8> b;       // t_stack
}

struct headers_t {
    h_t      h;
    s_t[2]   st;
    s_t      opt;
    res_t    res;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.st.next);
        pkt.extract(hdr.st.next);
        transition select(hdr.h.k) {
            0xFF: parse_opt;
            default: accept;
        }
    }
    state parse_opt {
        pkt.extract(hdr.opt);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_a(bit<8> v) { hdr.res.a = v; }
    action set_b(bit<8> v) { hdr.res.b = v; }

    table t_range {
        key = {
            hdr.h.r: range;
            hdr.h.o: optional;
        }
        actions = { set_a; }
        default_action = set_a(0);
    }

    table t_stack {
        key = {
            hdr.st[1].f: ternary;
            hdr.opt.isValid(): exact;
        }
        actions = { set_b; }
        default_action = set_b(0);
    }

    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        t_range.apply();
        t_stack.apply();
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
        pkt.emit(hdr.h);
        pkt.emit(hdr.st);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.res);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
