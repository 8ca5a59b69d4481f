// p4sim conformance: P4's evaluation order and copy-in/copy-out. A binary operation reads its
// left operand before a function call on the right changes it; an action's inout struct
// parameter is a copy, written back at the end (overwriting what the action wrote through the
// control's own parameter); assigning a whole struct to an inout parameter of the control
// changes the caller's headers.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> a; bit<8> b; bit<8> c; bit<8> d; }
struct headers { h_t h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers hdr, inout meta_t meta) { apply { } }

bit<8> bump(inout bit<8> v) {
    v = v + 0x10;
    return 1;
}

control Ing(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action touch(inout headers copy) {
        hdr.h.c = 0xee;            // lost: copy (taken before) is written back to hdr
        copy.h.d = copy.h.d + 1;
    }
    apply {
        bit<8> x = hdr.h.a;
        hdr.h.b = x + bump(x);     // old x + 1; x is now x + 0x10
        hdr.h.a = x;
        touch(hdr);
        headers n = hdr;
        n.h.c = n.h.c + 2;
        hdr = n;                   // whole-struct assignment to the inout parameter
        sm.egress_spec = 1;
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
