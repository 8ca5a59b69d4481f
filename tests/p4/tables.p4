// p4sim corpus: tables with exact, ternary, lpm, range and optional keys; const entries
// (first listed wins); default_action with and without arguments (and const);
// apply().hit / .miss; switch on apply().action_run; a direct counter (check_counter).
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t {
    bit<8>  a;
    bit<8>  b;
    bit<8>  c;
    bit<8>  d;
    bit<8>  e;
    bit<32> ip;
}

header out_t {
    bit<8> x;       // t_exact
    bit<8> y;       // t_tern
    bit<8> z;       // t_lpm
    bit<8> r;       // t_range
    bit<8> o;       // t_opt
    bit<8> sw;      // t_sw
    bit<8> flags;   // 0x01 t_exact hit, 0x02 t_lpm miss, 0x10/0x20/0x40 action_run branch
}

struct headers_t {
    h_t   h;
    out_t o;
}

struct meta_t { }

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
    direct_counter(CounterType.packets_and_bytes) dc;

    action set_x(bit<8> v) { hdr.o.x = v; }
    action set_y(bit<8> v) { hdr.o.y = v; }
    action set_z(bit<8> v) { hdr.o.z = v; }
    action set_r(bit<8> v) { hdr.o.r = v; }
    action set_o(bit<8> v) { hdr.o.o = v; }
    action sw_a() { hdr.o.sw = 0xA1; }
    action sw_b(bit<8> v) { hdr.o.sw = v; }
    action sw_c() { }

    table t_exact {
        key = { hdr.h.a: exact; }
        actions = { set_x; NoAction; }
        default_action = NoAction();
        counters = dc;
    }

    table t_tern {
        key = { hdr.h.b: ternary; }
        actions = { set_y; }
        default_action = set_y(0xEE);
    }

    table t_lpm {
        key = { hdr.h.ip: lpm; }
        actions = { set_z; NoAction; }
        default_action = NoAction();
    }

    table t_range {
        key = { hdr.h.c: range; }
        actions = { set_r; }
        const default_action = set_r(0);
        const entries = {
            0x00 .. 0x0F : set_r(1);
            0x10 .. 0x7F : set_r(2);
            0x40 .. 0x4F : set_r(3);    // shadowed by the entry above
        }
    }

    table t_opt {
        key = {
            hdr.h.d: optional;
            hdr.h.e: exact;
        }
        actions = { set_o; }
        default_action = set_o(0);
        const entries = {
            (0x05, 0x01) : set_o(1);
            (_, 0x01)    : set_o(2);
            (0x05, 0x02) : set_o(3);
        }
    }

    table t_sw {
        key = { hdr.h.a: exact; }
        actions = { sw_a; sw_b; sw_c; }
        default_action = sw_c();
    }

    apply {
        sm.egress_spec = 1;
        hdr.o.setValid();
        hdr.o.x = 0;
        hdr.o.y = 0;
        hdr.o.z = 0;
        hdr.o.r = 0;
        hdr.o.o = 0;
        hdr.o.sw = 0;
        bit<8> flags = 0;
        if (t_exact.apply().hit) {
            flags = flags | 0x01;
        }
        t_tern.apply();
        if (t_lpm.apply().miss) {
            flags = flags | 0x02;
        }
        t_range.apply();
        t_opt.apply();
        switch (t_sw.apply().action_run) {
            sw_a: { flags = flags | 0x10; }
            sw_b: { flags = flags | 0x20; }
            default: { flags = flags | 0x40; }
        }
        hdr.o.flags = flags;
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
        pkt.emit(hdr.o);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
