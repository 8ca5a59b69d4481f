// p4sim corpus (conformance sweep fixes): @field_list on fields of a nested metadata struct (as in
// p4-learning's resubmit example) is preserved by resubmit_preserving_field_list; the deprecated
// resubmit({}) and clone3(type, session, {}) forms with an empty list (as in p4c's
// v1model-special-ops-bmv2) preserve no metadata.
#include <core.p4>
#include <v1model.p4>

header h_t { bit<8> op; bit<8> passes; bit<8> kept; bit<8> lost; bit<8> itype; }
struct headers { h_t h; }
struct counters_t {
    @field_list(0)
    bit<8> i;
    bit<8> not_kept;
}
struct meta_t { counters_t c; }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers hdr, inout meta_t meta) { apply { } }

control Ing(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.kept = meta.c.i;
        hdr.h.lost = meta.c.not_kept;
        hdr.h.itype = (bit<8>) sm.instance_type;
        if (hdr.h.op == 1 && meta.c.i < hdr.h.passes) {
            meta.c.i = meta.c.i + 1;
            meta.c.not_kept = 0xee;
            resubmit_preserving_field_list(0);
        } else if (hdr.h.op == 2 && sm.instance_type == 0) {
            meta.c.i = 9;
            resubmit({});
        } else if (hdr.h.op == 3) {
            clone3(CloneType.I2E, 32w5, {});
        }
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
