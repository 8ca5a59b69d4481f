// p4sim corpus: lookahead<T>() of a struct of scalar fields (read like a header, nothing
// consumed), as a statement too; a packet shorter than T sets PacketTooShort.
#include <core.p4>
#include <v1model.p4>

struct peek_t { bit<8> a; bit<4> b; bit<4> c; }
header h_t { bit<8> a; bit<8> bc; bit<8> res; }
struct headers_t { h_t h; }
struct meta_t { bit<4> b; bit<4> c; }

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.lookahead<peek_t>();
        peek_t p = pkt.lookahead<peek_t>();
        meta.b = p.b;
        meta.c = p.c;
        pkt.extract(hdr.h);
        transition accept;
    }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (sm.parser_error == error.PacketTooShort) {
            sm.egress_spec = 2;
        } else {
            sm.egress_spec = 1;
            hdr.h.res = meta.c ++ meta.b;
        }
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
