// TNA smoke test: a register-based accumulator with a RegisterAction, a CRC hash and
// multicast of the result, the building blocks of the INA data plane.
#include <core.p4>
#include <tna.p4>

header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }
header agg_h { bit<16> slot; bit<32> value; bit<32> sum; bit<16> hash; bit<8> count; }

struct ig_headers_t { ethernet_h ethernet; agg_h agg; }
struct ig_meta_t { bit<8> seen; }
struct eg_headers_t { ethernet_h ethernet; agg_h agg; }
struct eg_meta_t { }

parser IgParser(packet_in pkt, out ig_headers_t hdr, out ig_meta_t meta,
                out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88b5: parse_agg;
            default: accept;
        }
    }
    state parse_agg { pkt.extract(hdr.agg); transition accept; }
}

control Ig(inout ig_headers_t hdr, inout ig_meta_t meta,
           in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<32>, bit<16>>(1024) sums;
    RegisterAction<bit<32>, bit<16>, bit<32>>(sums) add_value = {
        void apply(inout bit<32> value, out bit<32> rv) {
            value = value + hdr.agg.value;
            rv = value;
        }
    };
    Register<bit<8>, bit<16>>(1024, 0) counts;
    RegisterAction<bit<8>, bit<16>, bit<8>>(counts) bump = {
        void apply(inout bit<8> value, out bit<8> rv) {
            if (value == 1) { value = 0; } else { value = value + 1; }
            rv = value;
        }
    };
    Hash<bit<16>>(HashAlgorithm_t.CRC16) slot_hash;

    action forward(PortId_t port) { ig_tm_md.ucast_egress_port = port; }
    action broadcast(MulticastGroupId_t grp) { ig_tm_md.mcast_grp_a = grp; }
    table fwd {
        key = { hdr.ethernet.dst : exact; }
        actions = { forward; broadcast; NoAction; }
        default_action = NoAction();
    }
    apply {
        if (hdr.agg.isValid()) {
            hdr.agg.hash = slot_hash.get({hdr.agg.slot, hdr.agg.value});
            hdr.agg.sum = add_value.execute(hdr.agg.slot);
            hdr.agg.count = bump.execute(hdr.agg.slot);
            if (hdr.agg.count == 0) {
                ig_tm_md.mcast_grp_a = 1;
            } else {
                ig_dprsr_md.drop_ctl = 1;
            }
        } else {
            fwd.apply();
        }
    }
}

control IgDeparser(packet_out pkt, inout ig_headers_t hdr, in ig_meta_t meta,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr); }
}

parser EgParser(packet_in pkt, out eg_headers_t hdr, out eg_meta_t meta,
                out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88b5: parse_agg;
            default: accept;
        }
    }
    state parse_agg { pkt.extract(hdr.agg); transition accept; }
}

control Eg(inout eg_headers_t hdr, inout eg_meta_t meta,
           in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        if (hdr.agg.isValid()) {
            hdr.ethernet.src = (bit<48>) eg_intr_md.egress_rid;
        }
    }
}

control EgDeparser(packet_out pkt, inout eg_headers_t hdr, in eg_meta_t meta,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    apply { pkt.emit(hdr); }
}

Pipeline(IgParser(), Ig(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
