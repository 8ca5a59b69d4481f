// TNA recirculation: a packet sent to a recirculation port (68, pipe 0's on Tofino 1) passes
// egress, then ingress again with that port as its ingress port. Each ingress pass adds the
// packet's value to a register cell (one access per pass) and records the pass; egress counts
// the egress passes. Two recirculations, then out of port 1.
#include <core.p4>
#include <tna.p4>

const PortId_t RECIRC_PORT = 68;

header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }
header loop_h { bit<8> passes; bit<8> egress_passes; bit<16> slot; bit<32> value; bit<32> sum; bit<16> last_port; }

struct headers_t { ethernet_h ethernet; loop_h loop; }
struct ig_meta_t { }
struct eg_meta_t { }

parser IgParser(packet_in pkt, out headers_t hdr, out ig_meta_t meta,
                out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88b6: parse_loop;
            default: accept;
        }
    }
    state parse_loop { pkt.extract(hdr.loop); transition accept; }
}

control Ig(inout headers_t hdr, inout ig_meta_t meta,
           in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<32>, bit<16>>(256) sums;
    RegisterAction<bit<32>, bit<16>, bit<32>>(sums) add_value = {
        void apply(inout bit<32> value, out bit<32> rv) {
            value = value + hdr.loop.value;
            rv = value;
        }
    };
    apply {
        if (hdr.loop.isValid()) {
            hdr.loop.sum = add_value.execute(hdr.loop.slot);
            hdr.loop.last_port = (bit<16>) ig_intr_md.ingress_port;
            hdr.loop.passes = hdr.loop.passes + 1;
            if (hdr.loop.passes < 3) {
                ig_tm_md.ucast_egress_port = RECIRC_PORT;
            } else {
                ig_tm_md.ucast_egress_port = 1;
            }
        } else {
            ig_dprsr_md.drop_ctl = 1;
        }
    }
}

control IgDeparser(packet_out pkt, inout headers_t hdr, in ig_meta_t meta,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr); }
}

parser EgParser(packet_in pkt, out headers_t hdr, out eg_meta_t meta,
                out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88b6: parse_loop;
            default: accept;
        }
    }
    state parse_loop { pkt.extract(hdr.loop); transition accept; }
}

control Eg(inout headers_t hdr, inout eg_meta_t meta,
           in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        if (hdr.loop.isValid()) {
            hdr.loop.egress_passes = hdr.loop.egress_passes + 1;
        }
    }
}

control EgDeparser(packet_out pkt, inout headers_t hdr, in eg_meta_t meta,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr); }
}

Pipeline(IgParser(), Ig(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
