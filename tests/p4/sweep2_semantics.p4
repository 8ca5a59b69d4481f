// p4sim corpus: table.apply()/out-argument calls inside && || ?: run only when evaluated;
// exit in an action still copies out its inout arguments; a run-time header stack index out
// of range reads an invalid header and writes nothing; p4c's @priority(N) on const entries;
// an unused typedef that mentions varbit is accepted; an int literal compared with a bit<N>
// constant is converted to bit<N> first (8w255 == -1).
// Not runnable on real bmv2: with the run-time stack index (op 4), p4c 34b86e9bac's JSON
// makes simple_switch 1.15.5 abort at load (Json::LogicError "Type is not convertible to
// string"); without op 4 it loads.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> a; bit<8> b; bit<8> c; bit<8> idx; }
header e_t { bit<8> v; }
struct headers_t { h_t h; e_t[2] s; }
struct meta_t { }

typedef tuple<bit<4>, varbit<56>> unused_t;

bit<8> bump(inout bit<8> x) { x = x + 1; return x; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); pkt.extract(hdr.s.next); pkt.extract(hdr.s.next); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); pkt.emit(hdr.s); } }

control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action mark() { hdr.h.c = hdr.h.c + 1; }
    table t { key = { hdr.h.a : exact; } actions = { mark; NoAction; } const default_action = NoAction;
              const entries = { 1 : mark(); } }
    action set_and_exit(inout bit<8> v) { v = 0x77; exit; }
    action port(bit<9> p) { sm.egress_spec = p; }
    table prio { key = { hdr.h.b : ternary; } actions = { port; } default_action = port(9);
        const entries = {
            0x10 &&& 0xf0 : port(1) @priority(3);
            0x11          : port(2);
            0x11 &&& 0x0f : port(3) @priority(1);
        } }
    apply {
        sm.egress_spec = 0;
        if (hdr.h.op == 1) {
            // only the table of the taken operand is applied
            hdr.h.b = (hdr.h.b == 0 || t.apply().hit) ? 8w0xAA : 8w0xBB;
        } else if (hdr.h.op == 2) {
            hdr.h.b = hdr.h.b != 0 ? bump(hdr.h.c) : 8w0;
        } else if (hdr.h.op == 3) {
            set_and_exit(hdr.h.b);
        } else if (hdr.h.op == 4) {
            hdr.s[hdr.h.idx].v = 0x55;
            hdr.h.c = hdr.s[hdr.h.idx].isValid() ? hdr.s[hdr.h.idx].v : 8w0xEE;
        } else if (hdr.h.op == 5) {
            prio.apply();
        } else if (hdr.h.op == 6) {
            hdr.h.c = (8w255 == -1 ? 8w1 : 8w2) + (8w5 > -1 ? 8w0x10 : 8w0x20);
        }
    }
}
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
