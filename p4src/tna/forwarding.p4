// L3 forwarding for Tofino: explicit INA routes, IPv4 LPM, ECMP over power-of-two groups.
#ifndef _INA_TNA_FORWARDING_P4_
#define _INA_TNA_FORWARDING_P4_

control InaForwarding(inout ina_headers_t hdr, inout ina_ig_metadata_t meta,
                      in PortId_t ingress_port,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
                      inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Hash<bit<16>>(HashAlgorithm_t.CRC16) ecmp_hash;

    action drop() {
        ig_dprsr_md.drop_ctl = 1;
    }
    action set_nhop(PortId_t port, mac_addr_t dmac) {
        ig_tm_md.ucast_egress_port = port;
        hdr.ethernet.dst_addr = dmac;
        meta.routed = 1;
    }
    action route(PortId_t port, mac_addr_t dmac) {
        set_nhop(port, dmac);
    }
    // Tofino has no modulo: groups have 2^n members and the hash is masked.
    action ecmp(bit<16> group, bit<16> mask) {
        meta.ecmp_group = group;
        meta.ecmp_mask = mask;
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
        size = 16384;
    }

    table ecmp_member {
        key = {
            meta.ecmp_group  : exact;
            meta.ecmp_member : exact;
        }
        actions = { set_nhop; drop; }
        default_action = drop();
        size = 4096;
    }

    apply {
        if (!hdr.ipv4.isValid() || hdr.ipv4.ttl <= 1) {
            drop();
            return;
        }
        if (hdr.ina.isValid()) {
            ina_route.apply();
        }
        if (meta.routed == 0) {
            ipv4_lpm.apply();
            if (meta.ecmp_mask != 0) {
                // the hash unit writes its own field; the mask is a later ALU operation
                meta.ecmp_hash = ecmp_hash.get({ hdr.ipv4.src_addr, hdr.ipv4.dst_addr,
                                                 hdr.ipv4.protocol, hdr.udp.src_port,
                                                 hdr.udp.dst_port });
                meta.ecmp_member = meta.ecmp_hash & meta.ecmp_mask;
                ecmp_member.apply();
            }
        }
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
    }
}

#endif
