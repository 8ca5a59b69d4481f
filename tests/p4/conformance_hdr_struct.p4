// p4sim conformance: header fields whose type is a struct of bit fields (P4_16 1.2.x; also
// through a typedef), laid out in the header as their fields in order: extracted, matched in a
// table key, assigned as a whole, and emitted.
#include <core.p4>
#include <v1model.p4>

struct pair_t { bit<4> hi; bit<4> lo; }
typedef pair_t pair_alias_t;
struct row_t { bit<8> key; pair_alias_t p; bit<16> val; }

header row_h { row_t row; bit<8> tail; }
struct headers { row_h h; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers hdr, inout meta_t meta) { apply { } }

control Ing(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action fwd(bit<9> port) { sm.egress_spec = port; }
    action swap() {
        pair_t p = { hdr.h.row.p.lo, hdr.h.row.p.hi };
        hdr.h.row.p = p;
        sm.egress_spec = 3;
    }
    table t {
        key = { hdr.h.row.key : exact; hdr.h.row.p.lo : exact; }
        actions = { fwd; swap; }
        default_action = fwd(1);
        const entries = {
            (0x01, 0x2) : fwd(2);
            (0x02, 0x5) : swap();
        }
    }
    apply {
        t.apply();
        hdr.h.row.val = hdr.h.row.val + 1;
        hdr.h.tail = (bit<8>)hdr.h.row.p.hi;
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
