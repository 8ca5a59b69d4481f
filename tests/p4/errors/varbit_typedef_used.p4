// expect-error: type 'opts_t' contains varbit, which is not supported by p4sim
// p4sim corpus, negative case: a typedef mentioning varbit is accepted while unused (see
// sweep2_semantics.p4) but rejected where a declaration uses it.
#include <core.p4>
#include <v1model.p4>
typedef tuple<bit<8>, varbit<32>> opts_t;
struct H { }
struct M { }
parser P(packet_in b, out H h, inout M m, inout standard_metadata_t s) {
    state start { opts_t o; transition accept; }
}
control C(inout H h, inout M m) { apply { } }
control I(inout H h, inout M m, inout standard_metadata_t s) { apply { } }
control D(packet_out b, in H h) { apply { } }
V1Switch(P(), C(), I(), I(), C(), D()) main;
