// Pre-2020 v1model externs (register<T>, counter, meter with bit<32> indices): the default
// V1MODEL_VERSION, as with p4c.
#include <core.p4>
#include <v1model.p4>
header h_t { bit<32> v; }
struct hs_t { h_t h; }
struct m_t { }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control Ing(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    register<bit<32>>(8) r;
    counter(8, CounterType.packets) c;
    apply { bit<32> x; r.read(x, 1); r.write(1, x + hdr.h.v); hdr.h.v = x; c.count(2); sm.egress_spec = 1; }
}
control Eg(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
