// p4sim corpus (conformance sweep fixes), in the v1model API p4c's bmv2 back end supports
// (V1MODEL_VERSION 20200408 externs; the deprecated resubmit(data)/clone3(type, session, data)
// are "unknown extern function"s for p4c-bm2-ss): @field_list on fields of a nested metadata
// struct (as in p4-learning's resubmit example) is preserved by resubmit_preserving_field_list;
// a field list index that tags no field (p4c warns and uses an empty list) preserves no
// metadata, for resubmit_preserving_field_list and clone_preserving_field_list alike.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t { bit<8> op; bit<8> passes; bit<8> kept; bit<8> lost; bit<8> itype; }
struct headers { h_t h; }
struct counters_t {
    @field_list(0)
    bit<8> i;
    bit<8> not_kept;
}
struct meta_t { counters_t c; }

const bit<8> FL_COUNTERS = 0;   // tags meta.c.i
const bit<8> FL_NOTHING = 1;    // tags no field

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
            resubmit_preserving_field_list(FL_COUNTERS);
        } else if (hdr.h.op == 2 && sm.instance_type == 0) {
            meta.c.i = 9;
            resubmit_preserving_field_list(FL_NOTHING);
        } else if (hdr.h.op == 3) {
            meta.c.i = 9;
            clone_preserving_field_list(CloneType.I2E, 32w5, FL_NOTHING);
        }
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        // the clone (instance type 1) shows that meta.c.i was not preserved into it
        if (sm.instance_type == 1) { hdr.h.kept = meta.c.i; }
    }
}
control CC(inout headers hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
