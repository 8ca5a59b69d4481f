// p4sim corpus: parser select on tuples with exact values, masks (&&&), ranges (..),
// don't-care (_) and default; select without a matching case (error.NoMatch); lookahead
// and advance; verify with a program-defined error; extract past the end of the packet
// (error.PacketTooShort). standard_metadata.parser_error is reported by ingress: in v1model
// a parser error does not drop the packet.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

error { BadSub }

header h_t {
    bit<8> kind;
    bit<8> sub;
}

header big_t {
    bit<64> x;
}

header res_t {
    bit<8>  mark;   // which parser state ran last (0: start only)
    bit<8>  err;    // 0 NoError, 1 PacketTooShort, 2 NoMatch, 3 BadSub, 0xFF other
    bit<16> look;   // value seen by lookahead
}

struct headers_t {
    h_t   h;
    res_t res;
    big_t big;
}

struct meta_t {
    bit<8>  mark;
    bit<16> look;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        meta.mark = 0;
        meta.look = 0;
        transition select(hdr.h.kind, hdr.h.sub) {
            (0x10, 0x01): s_exact;
            (0x20 &&& 0xF0, _): s_mask;
            (0x30 .. 0x3F, 0x00 .. 0x0F): s_range;
            (0x30 .. 0x3F, _): s_range_any;
            (0x40, _): s_look;
            (0x50, _): s_verify;
            (0x60, _): s_short;
            (0x80, _): s_nomatch;
            default: accept;
        }
    }
    state s_exact { meta.mark = 1; transition accept; }
    state s_mask { meta.mark = 2; transition accept; }
    state s_range { meta.mark = 3; transition accept; }
    state s_range_any { meta.mark = 4; transition accept; }
    state s_look {
        meta.mark = 5;
        meta.look = pkt.lookahead<bit<16>>();
        pkt.advance(16);
        transition accept;
    }
    state s_verify {
        meta.mark = 6;
        verify(hdr.h.sub == 0x55, error.BadSub);
        transition accept;
    }
    state s_short {
        meta.mark = 7;
        pkt.extract(hdr.big);
        transition accept;
    }
    state s_nomatch {
        meta.mark = 8;
        transition select(hdr.h.sub) {
            1: accept;
            2: accept;
        }
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.res.setValid();
        hdr.res.mark = meta.mark;
        hdr.res.look = meta.look;
        if (sm.parser_error == error.NoError) {
            hdr.res.err = 0;
        } else if (sm.parser_error == error.PacketTooShort) {
            hdr.res.err = 1;
        } else if (sm.parser_error == error.NoMatch) {
            hdr.res.err = 2;
        } else if (sm.parser_error == error.BadSub) {
            hdr.res.err = 3;
        } else {
            hdr.res.err = 0xFF;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
        pkt.emit(hdr.res);
        pkt.emit(hdr.big);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
