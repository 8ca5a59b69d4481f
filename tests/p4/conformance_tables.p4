// p4sim corpus (conformance sweep fixes): a table with neither default_action nor NoAction in its
// actions (p4c adds NoAction, @defaultonly) as in the tutorials' load_balance; directional action
// parameters bound in the actions list (`set_byte(hdr.h.b1);`, `my_drop(sm)`, also in
// default_action); a header stack indexed by a bit<8> value; the left-hand side of an assignment
// (its stack index) evaluated before a call on the right-hand side.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> b1; bit<8> b2; bit<8> idx; }
header e_t { bit<8> v; }
struct headers { h_t h; e_t[4] st; }
struct meta_t { bit<8> i; }

action my_drop(inout standard_metadata_t smeta) { mark_to_drop(smeta); }

bit<8> bump(inout bit<8> i) {
    i = i + 1;
    return 0xb0 + i;
}

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        pkt.extract(hdr.st.next);
        pkt.extract(hdr.st.next);
        pkt.extract(hdr.st.next);
        pkt.extract(hdr.st.next);
        transition accept;
    }
}

control VC(inout headers hdr, inout meta_t meta) { apply { } }

control Ing(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action set_byte(out bit<8> dst, bit<8> v) { dst = v; }
    action fwd(bit<9> port) { sm.egress_spec = port; }

    table no_default {                       // miss: the implicit NoAction
        key = { hdr.h.op : exact; }
        actions = { fwd; }
    }
    table t_b1 {
        key = { hdr.h.op : exact; }
        actions = { set_byte(hdr.h.b1); my_drop(sm); }
        default_action = my_drop(sm);
    }
    table t_b2 {
        key = { hdr.h.op : exact; }
        actions = { set_byte(hdr.h.b2); NoAction; }
        default_action = set_byte(hdr.h.b2, 0x77);
    }
    apply {
        sm.egress_spec = 1;
        no_default.apply();
        t_b1.apply();
        t_b2.apply();
        meta.i = hdr.h.idx;
        hdr.st[meta.i].v = hdr.st[meta.i].v + 1;   // run-time index of type bit<8>
        hdr.st[meta.i].v = bump(meta.i);           // index read before bump() increments it
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
