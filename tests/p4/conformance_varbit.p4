// p4sim conformance: varbit header fields. extract(hdr, bits) with a run-time size, the errors
// it raises (HeaderTooShort: more bits than the field holds; PacketTooShort), == on varbit
// fields, assignment of a varbit field, emit of its current bytes, and a checksum over a
// field list with a varbit field (its current bits).
#include <core.p4>
#include <v1model.p4>

header len_t { bit<8> len; bit<8> kind; }      // len: bytes of option data in a and in b
header opt_t { bit<8> tag; varbit<32> data; }
header res_t { bit<8> err; bit<8> eq; bit<16> csum; }
struct headers { len_t l; opt_t a; opt_t b; res_t res; }
struct meta_t { }

parser P(packet_in pkt, out headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.l);
        bit<32> bits = ((bit<32>)hdr.l.len) << 3;
        pkt.extract(hdr.a, bits);
        pkt.extract(hdr.b, bits);
        transition accept;
    }
}

control VC(inout headers hdr, inout meta_t meta) { apply { } }

control Ing(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.res.setValid();
        hdr.res.csum = 0;
        hdr.res.eq = 0;
        if (sm.parser_error == error.NoError) {
            hdr.res.err = 0;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.res.err = 1;
        } else if (sm.parser_error == error.HeaderTooShort) {
            hdr.res.err = 4;
        } else {
            hdr.res.err = 0xff;
        }
        if (hdr.a.isValid() && hdr.b.isValid()) {
            if (hdr.a.data == hdr.b.data) {
                hdr.res.eq = 1;
            }
            if (hdr.l.kind == 1) {
                hdr.b.data = hdr.a.data;
            }
        }
        sm.egress_spec = 1;
    }
}

control Eg(inout headers hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }

control CC(inout headers hdr, inout meta_t meta) {
    apply {
        update_checksum(hdr.a.isValid(), { hdr.a.tag, hdr.a.data }, hdr.res.csum, HashAlgorithm.csum16);
    }
}

control D(packet_out pkt, in headers hdr) {
    apply {
        pkt.emit(hdr.l);
        pkt.emit(hdr.a);
        pkt.emit(hdr.b);
        pkt.emit(hdr.res);
    }
}

V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
