// p4sim conformance: instances the sweep over p4c's samples needed: `Type.apply(...)` of a
// control (an instance at that site, as p4c's InstantiateDirectCalls), a control instance passed
// as a constructor argument to another control (control-typed constructor parameter), a
// register declared at the top level and used by both ingress and egress, and
// `extract<T>(_)` (extract and discard).
#include <core.p4>
#include <v1model.p4>

header skip_t { bit<16> junk; }
header h_t { bit<8> idx; bit<8> a; bit<8> b; bit<8> prev; }
struct headers { h_t h; }
struct meta_t { }

register<bit<8>>(4) shared;

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract<skip_t>(_);
        pkt.extract(hdr.h);
        transition accept;
    }
}

control VC(inout headers hdr, inout meta_t meta) { apply { } }

control step_t(inout bit<8> v);

control AddOne(inout bit<8> v) { apply { v = v + 1; } }

control Twice(inout bit<8> v)(step_t s) {
    apply {
        s.apply(v);
        s.apply(v);
    }
}

control Inner(inout bit<8> v) {
    AddOne() one;
    Twice(one) two;
    apply {
        two.apply(v);       // + 2
        v = v << 1;
    }
}

control Ing(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        Inner.apply(hdr.h.a);          // (a + 2) * 2
        bit<8> old;
        shared.read(old, (bit<32>)hdr.h.idx);
        hdr.h.prev = old;
        shared.write((bit<32>)hdr.h.idx, hdr.h.a);
        sm.egress_spec = 2;
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        bit<8> v;
        shared.read(v, (bit<32>)hdr.h.idx);    // what ingress wrote
        hdr.h.b = v;
        AddOne.apply(hdr.h.b);
    }
}

control CC(inout headers hdr, inout meta_t meta) { apply { } }

control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr.h); } }

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
