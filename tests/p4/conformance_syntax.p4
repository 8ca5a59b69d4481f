// p4sim corpus: syntax common in real v1model programs (tutorials, p4c samples, p4-guide): @name on
// tables/actions/keys/params, `default_action = NoAction;`, @defaultonly, const default_action,
// size, initialised locals, casts, nested structs, stack[i].f, lookahead<bit<8>>, select on a
// tuple with _, serializable enum casts and switch, switch on a value, tuple types, log_msg,
// .hit/.miss, error in select/comparisons, verify, parser_error; and what the conformance sweep
// fixed: a PortId_t typedef of the program's own (v1model.p4 declares one only for
// V1MODEL_VERSION >= 20200408), @atomic blocks, == / != on headers,
// structs and stacks, minSizeInBytes(), parser-state locals used in the transition select,
// @name on action parameters (the control-plane name, used by the STF `add` below).
#include <core.p4>
#include <v1model.p4>

typedef bit<9> PortId_t;    // the default V1MODEL_VERSION (20180101) declares none

header eth_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<8> kind; bit<8> val; }
header res_t { bit<8> x; bit<8> eq; bit<8> size; }
enum bit<8> Kind { A = 1, B = 2 }
enum Color { RED, GREEN }
struct inner_t { bit<8> a; bit<8> b; }
struct outer_t { inner_t in1; inner_t in2; bit<8> c; }
struct headers { eth_t eth; tag_t[3] tags; res_t res; }
struct meta_t { outer_t o; bit<8> la; tuple<bit<8>, bool> tp; }
error { BadKind }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.eth);
        meta.la = pkt.lookahead<bit<8>>();
        transition select(hdr.eth.type, meta.la) {
            (0x1234, 1): tags;
            (0x1234, _): tags;
            default: accept;
        }
    }
    state tags {
        bit<8> kind = pkt.lookahead<bit<8>>();   // a state local, in scope in the select
        pkt.extract(hdr.tags.next);
        verify(kind != 0xff, error.BadKind);
        transition select(kind) {
            1: tags;
            default: accept;
        }
    }
}

control VC(inout headers hdr, inout meta_t meta) { apply { } }

control Ing(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    @name("ingress.set_port") action set_port(@name("p") PortId_t port) { sm.egress_spec = port; }
    action mark(bit<8> v) { hdr.eth.src = (bit<48>) v; }
    table t1 {
        key = { hdr.eth.dst : exact @name("dst"); }
        actions = { set_port; @defaultonly NoAction; }
        default_action = NoAction;
        size = 1024;
    }
    @name("ingress.t2") table t2 {
        key = { hdr.eth.type : ternary; }
        actions = { mark; NoAction; }
        const default_action = mark(7);
    }
    apply {
        bit<8> x = 8w0;
        bool b = true;
        meta.tp = { 8w3, true };
        Color c = Color.GREEN;
        if (sm.parser_error == error.PacketTooShort) { hdr.eth.type = 0xdead; }
        if (sm.parser_error == error.BadKind) { hdr.eth.type = 0xbad0; }
        meta.o.in1.a = 5;
        meta.o.in2 = meta.o.in1;
        if (meta.o.in1 == meta.o.in2) { x = x + 1; }
        Kind k = (Kind) hdr.tags[0].kind;
        switch (k) {
            Kind.A: { x = x + 0x10; }
            Kind.B: { x = x + 0x20; }
        }
        switch (x) {
            0x11: { x = x | 0x80; }
            default: { }
        }
        log_msg("x = {}", {x});
        @atomic {
            if (t1.apply().hit) { x = x + 2; }
            if (t2.apply().miss) { x = x + 4; }
        }
        if (c == Color.GREEN && b) { hdr.eth.dst = (bit<48>) x; }
        // == on headers (both invalid, or both valid with equal fields), structs and stacks
        bit<8> eq = 0;
        tag_t t = { 1, 5 };                       // a list-initialised header is valid
        if (t == hdr.tags[0]) { eq = eq | 1; }
        if (hdr.tags[0] == {1, 5}) { eq = eq | 0x10; }   // the list takes the header's type
        if (hdr.tags[1] != hdr.tags[2]) { eq = eq | 2; }
        tag_t[3] copy = hdr.tags;
        if (copy == hdr.tags) { eq = eq | 4; }
        copy[0].setInvalid();
        if (copy != hdr.tags) { eq = eq | 8; }
        hdr.res.setValid();
        hdr.res.x = x;
        hdr.res.eq = eq;
        hdr.res.size = (bit<8>) hdr.tags[0].minSizeInBytes() + (bit<8>) hdr.eth.minSizeInBits();
        if (sm.egress_spec == 0) { sm.egress_spec = 1; }
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
