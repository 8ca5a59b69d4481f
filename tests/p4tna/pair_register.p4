// TNA paired registers (Register<struct, I>, as SwitchML/ATP use on Tofino) and sub-parsers.
#include <core.p4>
#include <tna.p4>

header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }
header tag_h { bit<8> depth; bit<8> seen_port; }
struct headers_t { ethernet_h ethernet; tag_h tag; }
struct meta_t { }
struct pair_t { bit<32> sum; bit<32> count; }

parser TofinoIngressParser(packet_in pkt, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        transition select(ig_intr_md.resubmit_flag) {
            1: parse_resubmit;
            0: parse_port_metadata;
        }
    }
    state parse_resubmit { transition reject; }
    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition accept;
    }
}

parser TagParser(packet_in pkt, out tag_h tag) {
    state start { pkt.extract(tag); transition accept; }
}

parser IgParser(packet_in pkt, out headers_t hdr, out meta_t meta,
                out ingress_intrinsic_metadata_t ig_intr_md) {
    TofinoIngressParser() tofino_parser;
    TagParser() tag_parser;
    state start {
        tofino_parser.apply(pkt, ig_intr_md);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x9999: parse_tag;
            default: accept;
        }
    }
    state parse_tag {
        tag_parser.apply(pkt, hdr.tag);
        transition accept;
    }
}

control Ig(inout headers_t hdr, inout meta_t meta, in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<pair_t, bit<8>>(4, {100, 0}) pairs;
    RegisterAction<pair_t, bit<8>, bit<32>>(pairs) accumulate = {
        void apply(inout pair_t value, out bit<32> rv) {
            value.sum = value.sum + (bit<32>) hdr.tag.depth;
            value.count = value.count + 1;
            rv = value.sum;
        }
    };
    apply {
        if (hdr.tag.isValid()) {
            hdr.tag.depth = accumulate.execute(hdr.tag.seen_port)[7:0];
            hdr.tag.seen_port = (bit<8>) ig_intr_md.ingress_port;
        }
        ig_tm_md.ucast_egress_port = 2;
    }
}

control IgDeparser(packet_out pkt, inout headers_t hdr, in meta_t meta,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr); }
}

parser EgParser(packet_in pkt, out headers_t hdr, out meta_t meta,
                out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); transition accept; }
}

control Eg(inout headers_t hdr, inout meta_t meta, in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply { }
}

control EgDeparser(packet_out pkt, inout headers_t hdr, in meta_t meta,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr); }
}

Pipeline(IgParser(), Ig(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
