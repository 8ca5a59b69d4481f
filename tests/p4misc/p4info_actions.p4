// Which actions p4c's P4Info lists, and with which parameters (tests/test_p4info.py).
#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs_t { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control Ing(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    action helper() { hdr.h.b = 1; }                          // only called by actions: absent
    action unused() { hdr.h.b = 2; }                          // never used: absent
    action set_a(bit<8> v) { hdr.h.a = v; helper(); }         // table action: keeps v
    action bump(inout bit<8> f, bit<8> step) { f = f + step; }  // table, f bound: keeps step
    action direct(bit<8> v) { hdr.h.b = v; }                  // apply block only: no params
    action both(bit<8> v) { hdr.h.b = v; }                    // table and apply: keeps v
    table t {
        key = { hdr.h.a: exact; }
        actions = { set_a; bump(meta.x); both; NoAction; }
        default_action = NoAction();
    }
    apply { t.apply(); direct(7); both(3); sm.egress_spec = 1; }
}
control Eg(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
