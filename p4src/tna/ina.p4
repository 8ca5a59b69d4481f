// INA switch for Tofino (TNA): the protocol of docs/protocol.md with the same tables as the
// v1model program. Tofino's rules shape the aggregator (p4src/tna/aggregator.p4): one
// stateful-ALU execution per register per pass, so reading state out (preempted partials,
// reminders) happens in a resubmitted second pass; K = 32 lanes in 16 paired registers, whose
// halves come out in two passes (a recirculation). Tofino 1 rules it follows and what the
// Tofino back end reports on it: p4src/tna/README.md.
#include <core.p4>
#include <tna.p4>

#ifndef INA_LANES
#define INA_LANES 32             // stage fit on Tofino 1: p4src/tna/README.md
#endif
#ifndef INA_POOL_SIZE
#define INA_POOL_SIZE 8192           // aggregators per pipe; pool sizes are powers of two
#endif

#include "../common/ina_headers.p4"

// Lanes j and K/2 + j share register lane_j (its `lo` and `hi` halves): one stateful ALU adds
// both. INA_FOR_EACH_LANE_PAIR(M) expands M(j, K/2 + j); the egress parses the low half only.
#if INA_LANES == 32
#define INA_HALF_LANES 16
#define INA_FOR_EACH_LOW_LANE(M) INA_LANES_16(M)
#define INA_FOR_EACH_LANE_PAIR(M) M(0, 16) M(1, 17) M(2, 18) M(3, 19) M(4, 20) M(5, 21) \
    M(6, 22) M(7, 23) M(8, 24) M(9, 25) M(10, 26) M(11, 27) M(12, 28) M(13, 29) M(14, 30) M(15, 31)
#elif INA_LANES == 16
#define INA_HALF_LANES 8
#define INA_FOR_EACH_LOW_LANE(M) INA_LANES_8(M)
#define INA_FOR_EACH_LANE_PAIR(M) M(0, 8) M(1, 9) M(2, 10) M(3, 11) M(4, 12) M(5, 13) M(6, 14) M(7, 15)
#elif INA_LANES == 8
#define INA_HALF_LANES 4
#define INA_FOR_EACH_LOW_LANE(M) INA_LANES_4(M)
#define INA_FOR_EACH_LANE_PAIR(M) M(0, 4) M(1, 5) M(2, 6) M(3, 7)
#else
#error "the TNA program pairs its lanes: INA_LANES must be 8, 16 or 32"
#endif

struct ina_lane_pair_t {
    int<32> lo;                  // lane j
    int<32> hi;                  // lane K/2 + j
}

// What the egress parses: the header and the low half of the lanes (all 32 lanes are past
// Tofino 1's 160-byte egress parse depth; the high half stays payload).
header ina_low_lanes_h {
    INA_FOR_EACH_LOW_LANE(INA_LANE_FIELD)
}
struct ina_eg_headers_t {
    ethernet_h      ethernet;
    ipv4_h          ipv4;
    udp_h           udp;
    ina_h           ina;
    ina_low_lanes_h lanes;
}

#include "metadata.p4"
#include "aggregator.p4"
#include "forwarding.p4"

// ------------------------------------------------------------------ ingress
parser InaIngressParser(packet_in pkt, out ina_headers_t hdr, out ina_ig_metadata_t meta,
                        out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        // Tofino does not zero metadata: initialise what the controls read before writing.
        meta.op = INA_OP_NONE;
        meta.pipe = 0;
        meta.job_known = 0;
        meta.job_configured = 0;
        meta.preemption = 0;
        meta.hold = 0;
        meta.releasing = 0;
        meta.mcast_group = 0;
        meta.routed = 0;
        meta.nhop_drop = 0;
        meta.ecmp = 0;
        // the aggregator's tables match these exactly on the paths that do not write them
        meta.hi_res = OWNER_OTHER;
        meta.lo_res = OWNER_OTHER;
        meta.kind = KIND_NONE;
        meta.situation = SIT_OTHER;
        meta.dup_bits = 0;
        meta.recirculated = 0;
        meta.recirc_port = (PortId_t)INA_RECIRC_LOCAL_PORT;   // the pipe's bits come in stage 0
        meta.saturated_hi = 0;
        transition select(ig_intr_md.resubmit_flag, ig_intr_md.ingress_port) {
            (1, _): parse_resubmit;
            (0, (PortId_t)INA_RECIRC_LOCAL_PORT &&& 0x7F): parse_recirculated;   // any pipe's
            default: parse_port_metadata;
        }
    }
    state parse_resubmit {
        pkt.extract(meta.resubmit);
        meta.op = meta.resubmit.op;
        transition parse_ethernet;
    }
    state parse_port_metadata {
        pkt.advance(PORT_METADATA_SIZE);
        transition parse_ethernet;
    }
    state parse_recirculated {
        pkt.advance(PORT_METADATA_SIZE);
        pkt.extract(meta.recirc_in);
        meta.op = meta.recirc_in.op;
        meta.recirculated = 1;
        transition parse_ethernet;
    }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_UDP_PORT: parse_ina;
            default: accept;
        }
    }
    state parse_ina {
        pkt.extract(hdr.ina);
        transition select(hdr.ina.version, hdr.udp.length) {
            (INA_VERSION, INA_HEADER_ONLY_UDP_LEN): accept;   // a query or an ask: no lanes, plain UDP
            (INA_VERSION, _): parse_lanes;
            default: accept;
        }
    }
    state parse_lanes {
        pkt.extract(hdr.lanes);
        transition accept;
    }
}

// The owner and round registers' outputs feed both these 8-bit answers and 32-bit header
// fields (the swap's old key); the open back end gives each SALU output one 32-bit action-bus
// slot, which bfas refuses to write into a 16-bit container ("action bus slice (0..31) can't fit
// in a single slot for 16 bit access"), so the answers live in 32-bit containers.
@pa_container_size("ingress", "meta.hi_res", 32)
@pa_container_size("ingress", "meta.lo_res", 32)
@pa_container_size("ingress", "meta.situation", 32)
control InaIngress(inout ina_headers_t hdr, inout ina_ig_metadata_t meta,
                   in ingress_intrinsic_metadata_t ig_intr_md,
                   in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
                   inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                   inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    InaAggregator() aggregator;
    InaLanes() lanes;
    InaForwarding() forwarding;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) agg_hash;

    // The aggregator index is pool_base + (CRC32(job, submodel, fragment) & pool_mask), the way
    // Tofino computes it: the hash unit writes its own field at stage 0 (no node id: each node
    // has its own pool region, so the hash needs no input a table must supply first), the
    // node's table masks it (stage 1) and the aggregator adds the base (stage 2); every register
    // is indexed by the plain field agg_index.
    action compute_agg_hash() {
        meta.agg_hash = agg_hash.get({ hdr.ina.job_id, hdr.ina.submodel_id, hdr.ina.fragment_id });
        meta.key_hi = hdr.ina.job_id ++ hdr.ina.submodel_id;
        meta.key_lo = hdr.ina.fragment_id;
    }
    action set_pipe(bit<8> pipe) { meta.pipe = pipe; }
    // (in actions, not the parser: Tofino's parser cannot assign the ingress port it extracted
    // in an earlier state on more than one path)
    action note_front_port() {
        meta.in_port = ig_intr_md.ingress_port;
        meta.recirc_port[8:7] = ig_intr_md.ingress_port[8:7];
    }
    action note_recirculated_port() {
        meta.in_port = meta.recirc_in.in_port;
        meta.recirc_port[8:7] = ig_intr_md.ingress_port[8:7];
    }
    action note_recirculation() {
        meta.recirc_out.setValid();
        meta.recirc_out.pad = 0;
        meta.recirc_out.in_port = meta.in_port;
        meta.recirc_out.agg_index = meta.agg_index;
    }
    action flag_overflow() {
        hdr.ina.flags[5:5] = 1;            // INA_FLAG_OVERFLOW
        hdr.udp.checksum = 0;              // the header changed
    }
    action aggregate(bit<32> pool_base, bit<32> pool_mask) {
        meta.pool_base = pool_base;
        meta.agg_offset = meta.agg_hash & pool_mask;
        meta.job_known = meta.job_configured;
    }
    action job_config(bit<1> preemption, bit<1> hold_until_result) {
        meta.job_configured = 1;
        meta.preemption = preemption;
        meta.hold = hold_until_result;
    }
    action release(bit<16> node_id, bit<32> pool_base, bit<32> pool_mask) {
        meta.releasing = 1;
        meta.job_known = 1;
        meta.pool_base = pool_base;
        meta.pool_mask = pool_mask;
    }
    action mask_release_offset() {
        meta.agg_offset = meta.agg_hash & meta.pool_mask;
    }
    // ina_level is looked up before the aggregator decides anything (its key is the packet's
    // job and node as received); the aggregator applies the answer (level_up) to packets that
    // complete or collide.
    action to_node(bit<16> next_node, bit<8> next_fan_in) {
        meta.next_node = next_node;
        meta.next_fan_in = next_fan_in;
        meta.result_flag = 0;
        meta.result_group = 0;
    }
    action to_multicast(bit<16> group) {
        meta.next_node = hdr.ina.node_id;
        meta.next_fan_in = hdr.ina.fan_in;
        meta.result_flag = INA_FLAG_RESULT;
        meta.result_group = group;
    }
    action to_ps() {
        meta.next_node = hdr.ina.node_id;
        meta.next_fan_in = hdr.ina.fan_in;
        meta.result_flag = INA_FLAG_RESULT;
        meta.result_group = 0;
    }

    table ina_port_pipe {
        key = { ig_intr_md.ingress_port : exact; }
        actions = { set_pipe; NoAction; }
        default_action = NoAction();
        size = 512;
    }
    table ina_node {
        key = {
            hdr.ina.node_id : exact;
            meta.pipe       : exact;
        }
        actions = { aggregate; NoAction; }
        default_action = NoAction();
        size = 256;
    }
    table ina_job {
        key = { hdr.ina.job_id : exact; }
        actions = { job_config; NoAction; }
        default_action = NoAction();
        size = 1024;
    }
    table ina_release {
        key = { hdr.ina.job_id : exact; }
        actions = { release; NoAction; }
        default_action = NoAction();
        size = 1024;
    }
    table ina_level {
        key = {
            hdr.ina.job_id  : exact;
            hdr.ina.node_id : exact;
        }
        actions = { to_node; to_multicast; to_ps; }
        default_action = to_ps();
        size = 4096;
    }

    // The high lanes of an aggregate are tested for a saturation bound here, where the pass that
    // sends them on parses them (the egress parses only the low half): a recirculated pass
    // carries the high sums the pass before it read out, and a first pass an aggregate that
    // arrived. One gateway per lane, each marking its own bit, then one test of the bits.
#define HIGH_LANE_SATURATED(j, h) \
    if (hdr.lanes.v##h == 0x7fffffff || hdr.lanes.v##h == -0x7fffffff - 1) { meta.saturated_hi[j:j] = 1; }

    apply {
        meta.verdict = INA_PASS;
        if (meta.recirculated == 1) {
            note_recirculated_port();
        } else {
            note_front_port();
        }
        if (hdr.lanes.isValid() && (hdr.ina.flags & INA_FLAG_RESEND) == 0) {
            // stage 0: lookups keyed on the packet as received, and the index hash; ina_job
            // and ina_level only write metadata, used where the aggregator needs them
            ina_port_pipe.apply();
            compute_agg_hash();
            ina_job.apply();
            ina_level.apply();
            if ((hdr.ina.flags & INA_FLAG_RESULT) != 0) {
                if (ina_release.apply().hit) {     // a returning result: pool of its job's node
                    mask_release_offset();
                }
            } else {
                ina_node.apply();                  // stage 1 (keyed on the pipe)
            }
        }
        aggregator.apply(hdr, meta, ig_dprsr_md);  // nothing unless job_known; drops what it keeps
        // A packet kept, refused or resubmitted (below) never leaves by its unicast port.
        forwarding.apply(hdr, meta, meta.in_port, ig_dprsr_md, ig_tm_md);
        // before the lanes write the high half (no gateway around them: bf-p4c would place the
        // gated block whole before what follows it)
        INA_FOR_EACH_LANE_PAIR(HIGH_LANE_SATURATED)
        if (meta.saturated_hi != 0 && hdr.lanes.isValid()) {
            if (meta.recirculated == 1) {
                flag_overflow();
            } else if (hdr.ina.worker_id == INA_WORKER_AGGREGATE && meta.op == INA_OP_NONE) {
                flag_overflow();
            }
        }
        lanes.apply(hdr, meta);                    // after the registers' answers; nothing for KIND_NONE
        if (meta.verdict == INA_RESUBMIT) {
            meta.resubmit.setValid();
            meta.resubmit.pad = 0;
            ig_dprsr_md.resubmit_type = 1;         // the deparser emits meta.resubmit
        } else if (meta.verdict == INA_RECIRCULATE) {
            note_recirculation();                  // forwarding sent it to the recirculation port
        } else if (meta.verdict != INA_ABSORB && meta.verdict != INA_DUPLICATE) {
            if (hdr.lanes.isValid() && (hdr.ina.flags & INA_FLAG_RESEND) == 0
                    && (meta.verdict != INA_PASS
                        || (hdr.ina.flags & (INA_FLAG_PREEMPTED | INA_FLAG_COLLISION)) != 0)) {
                hdr.udp.checksum = 0;
            }
        }
    }
}

control InaIngressDeparser(packet_out pkt, inout ina_headers_t hdr, in ina_ig_metadata_t meta,
                           in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Resubmit() resubmit;
    apply {
        if (ig_dprsr_md.resubmit_type == 1) {
            resubmit.emit(meta.resubmit);
        }
        pkt.emit(meta.recirc_out);                 // valid only on the way to a recirculation
        pkt.emit(hdr);
    }
}

// ------------------------------------------------------------------ egress
parser InaEgressParser(packet_in pkt, out ina_eg_headers_t hdr, out ina_eg_metadata_t meta,
                       out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        meta.ipv4_checksum_full = false;
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }
    state parse_ipv4 {
        pkt.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (5, 0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }
    state parse_udp {
        pkt.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            INA_UDP_PORT: parse_ina;
            default: accept;
        }
    }
    state parse_ina {
        pkt.extract(hdr.ina);
        transition select(hdr.ina.version, hdr.udp.length) {
            (INA_VERSION, INA_HEADER_ONLY_UDP_LEN): accept;   // a query or an ask: no lanes, plain UDP
            (INA_VERSION, _): parse_lanes;
            default: accept;
        }
    }
    state parse_lanes {
        pkt.extract(hdr.lanes);
        transition accept;
    }
}

control InaEgress(inout ina_eg_headers_t hdr, inout ina_eg_metadata_t meta,
                  in egress_intrinsic_metadata_t eg_intr_md,
                  in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
                  inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
                  inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    // A result replica comes from the job's PS (the original destination), not from the
    // worker whose fragment completed the sum: hosts drop packets that claim their own address.
    action set_result_dst(ipv4_addr_t ip, mac_addr_t mac) {
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = ip;
        hdr.ethernet.dst_addr = mac;
    }
    action set_smac(mac_addr_t mac) {
        hdr.ethernet.src_addr = mac;
    }
    table result_rewrite {
        key = { eg_intr_md.egress_rid : exact; }
        actions = { set_result_dst; NoAction; }
        default_action = NoAction();
        size = 4096;
    }
    table smac {
        key = { eg_intr_md.egress_port : exact; }
        actions = { set_smac; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    action flag_overflow() {
        hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW;
        hdr.udp.checksum = 0;              // the header changed
    }
    // IPv4 options are not parsed, so the deparser cannot recompute the checksum: it is
    // updated for ingress's TTL decrement alone (RFC 1624: the TTL/protocol word fell by
    // 0x0100, so the checksum rises by 0x0100 in ones' complement).
    action ipv4_checksum_full() {
        meta.ipv4_checksum_full = true;
    }
    action ipv4_checksum_ttl() {
        hdr.ipv4.hdr_checksum = hdr.ipv4.hdr_checksum + 0x0100;
    }
    action ipv4_checksum_ttl_carry() {
        hdr.ipv4.hdr_checksum = hdr.ipv4.hdr_checksum + 0x0101;   // end-around carry
    }

    // The stateful ALUs saturate; an aggregate with a lane at a bound is flagged as overflowed
    // (the low half here, the high half in the ingress pass that put it in the packet).
    // One gateway per lane, each marking its own bit, all in one stage; then one test of the
    // bits (gateways writing the flags field itself would run one after the other).
#define LOW_LANE_SATURATED(i) \
    if (hdr.lanes.v##i == 0x7fffffff || hdr.lanes.v##i == -0x7fffffff - 1) { meta.saturated_lo[i:i] = 1; }
    apply {
        if (hdr.lanes.isValid() && hdr.ina.worker_id == INA_WORKER_AGGREGATE) {
            meta.saturated_lo = 0;
            INA_FOR_EACH_LOW_LANE(LOW_LANE_SATURATED)
            if (meta.saturated_lo != 0) {
                flag_overflow();
            }
        }
        if (hdr.ina.isValid() && eg_intr_md.egress_rid != 0) {
            result_rewrite.apply();
        }
        smac.apply();
        if (hdr.ipv4.isValid()) {
            if (hdr.ipv4.ihl == 5) {
                ipv4_checksum_full();
            } else if (hdr.ipv4.hdr_checksum[15:8] == 0xFF) {
                ipv4_checksum_ttl_carry();
            } else {
                ipv4_checksum_ttl();
            }
        }
    }
}

control InaEgressDeparser(packet_out pkt, inout ina_eg_headers_t hdr, in ina_eg_metadata_t meta,
                          in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() ipv4_checksum;
    apply {
        if (meta.ipv4_checksum_full) {
            hdr.ipv4.hdr_checksum = ipv4_checksum.update({
                hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
                hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
                hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr });
        }
        pkt.emit(hdr);
    }
}

Pipeline(InaIngressParser(), InaIngress(), InaIngressDeparser(),
         InaEgressParser(), InaEgress(), InaEgressDeparser()) pipe;
Switch(pipe) main;
