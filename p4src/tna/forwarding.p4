// L3 forwarding for Tofino: explicit INA routes, IPv4 LPM, ECMP over power-of-two groups.
#ifndef _INA_TNA_FORWARDING_P4_
#define _INA_TNA_FORWARDING_P4_

// Forwarding of whatever the aggregator did not keep or drop: a result the aggregator gave a
// multicast group goes to it; otherwise an explicit INA route (ina_route) wins over the IPv4
// next hop (ipv4_lpm, or an ECMP group's member).
// ina_route and ipv4_lpm look up in parallel (the route's answer waits in metadata and
// overrides the next hop one stage later, in the stage of the ECMP member lookup); keys are
// the packet's fields as the aggregator left them. TTL is decremented; TTL <= 1 drops.
control InaForwarding(inout ina_headers_t hdr, inout ina_ig_metadata_t meta,
                      in PortId_t ingress_port,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Hash<bit<16>>(HashAlgorithm_t.CRC16) ecmp_hash;

    action drop_packet() {
        ig_dprsr_md.drop_ctl = 1;
    }
    // ipv4_lpm's drop only marks the next hop dropped: an explicit route may still win
    action drop() {
        meta.nhop_drop = 1;
    }
    action no_member() {
        ig_dprsr_md.drop_ctl = 1;
    }
    action set_nhop(PortId_t port, mac_addr_t dmac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dst_addr = dmac;
    }
    action route(PortId_t port, mac_addr_t dmac) {
        meta.routed = 1;
        meta.route_port = port;
        meta.route_dmac = dmac;
    }
    // Tofino has no modulo: groups have 2^n members and the hash is masked.
    action ecmp(bit<16> group, bit<16> mask) {
        meta.ecmp = 1;
        meta.ecmp_group = group;
        meta.ecmp_member = meta.ecmp_hash & mask;
    }
    action send_routed() {
        ig_tm_md.ucast_egress_port = meta.route_port;
        hdr.ethernet.dst_addr = meta.route_dmac;
    }
    // a pass that needs another (the lanes still in the registers): back into this pipe's
    // ingress as rewritten, past egress, forwarded by the last pass
    action recirculate_packet() {
        ig_tm_md.ucast_egress_port = meta.recirc_port;
        ig_tm_md.bypass_egress = 1;
    }
    action decrement_ttl() {
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }

    table ina_route {
        key = {
            hdr.ina.job_id    : exact;
            hdr.ina.node_id   : ternary;
            hdr.ina.worker_id : ternary;
            hdr.ina.flags     : ternary;
            ingress_port      : ternary;
        }
        actions = { route; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    table ipv4_lpm {
        key = { hdr.ipv4.dst_addr : lpm; }
        actions = { set_nhop; ecmp; drop; }
        default_action = drop();
        size = 8192;                   // 16 of a stage's 24 TCAM blocks: one stage
    }

    table ecmp_member {
        key = {
            meta.ecmp_group  : exact;
            meta.ecmp_member : exact;
        }
        actions = { set_nhop; no_member; }
        default_action = no_member();
        size = 4096;
    }

    // Laid out as small blocks instead of one gated block: bf-p4c places a gated block's
    // tables before anything after it, and the lanes (applied after forwarding) need the
    // stateful ALUs of the stages forwarding's lookups sit in.
    apply {
        // the hash unit writes its own field; ipv4_lpm's ecmp action masks it
        meta.ecmp_hash = ecmp_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                                         hdr.udp.src_port, hdr.udp.dst_port });
        if (hdr.lanes.isValid()) {         // INA of this version (another version is plain UDP)
            ina_route.apply();
        }
        bit<1> unicast = 0;
        if (meta.mcast_group == 0 && hdr.ipv4.isValid() && hdr.ipv4.ttl > 1) {
            unicast = 1;
            ipv4_lpm.apply();
        }
        if (meta.verdict == INA_RECIRCULATE) {
            recirculate_packet();
        } else if (meta.mcast_group != 0) {
            ig_tm_md.mcast_grp_a = meta.mcast_group;
        } else if (unicast == 0) {
            drop_packet();
        } else {
            if (meta.routed == 1) {
                send_routed();
            } else if (meta.ecmp == 1) {
                ecmp_member.apply();
            } else if (meta.nhop_drop == 1) {
                drop_packet();
            }
            decrement_ttl();
        }
    }
}

#endif
