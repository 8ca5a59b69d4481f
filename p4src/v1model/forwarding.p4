// L3 forwarding: explicit INA routes (pinned ARO/InArt paths), IPv4 LPM and ECMP.
#ifndef _INA_V1MODEL_FORWARDING_P4_
#define _INA_V1MODEL_FORWARDING_P4_

control InaForwarding(inout ina_headers_t hdr, inout ina_metadata_t meta,
                      inout standard_metadata_t sm) {
    action drop() {
        mark_to_drop(sm);
    }
    action set_nhop(PortId_t port, mac_addr_t dmac) {
        sm.egress_spec = port;
        hdr.ethernet.dst_addr = dmac;
        meta.routed = 1;
    }
    action route(PortId_t port, mac_addr_t dmac) {
        set_nhop(port, dmac);
    }
    action ecmp(bit<16> group, bit<16> size) {
        meta.ecmp_group = group;
        meta.ecmp_size = size;
    }

    // Pinned paths: per job, per next aggregation node, worker, flags (first copies vs
    // reminders vs aggregates) and ingress port (ternary, priorities).
    table ina_route {
        key = {
            hdr.ina.job_id    : exact;
            hdr.ina.node_id   : ternary;
            hdr.ina.worker_id : ternary;
            hdr.ina.flags     : ternary;
            sm.ingress_port   : ternary;
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
        if (!hdr.ipv4.isValid()) {
            drop();
            return;
        }
        if (hdr.ipv4.ttl <= 1) {
            drop();
            return;
        }
        if (hdr.lanes.isValid()) {         // INA of this version (another version is plain UDP)
            ina_route.apply();
        }
        if (meta.routed == 0) {
            ipv4_lpm.apply();
            if (meta.ecmp_size != 0) {
                hash(meta.ecmp_member, HashAlgorithm.crc16, 16w0,
                     { hdr.ipv4.src_addr, hdr.ipv4.dst_addr, hdr.ipv4.protocol,
                       hdr.udp.src_port, hdr.udp.dst_port },
                     meta.ecmp_size);
                ecmp_member.apply();
            }
        }
        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
        if (hdr.ipv4.ihl != 5) {
            // Options are not parsed, so the checksum is not recomputed (InaComputeChecksum):
            // it is updated for the TTL decrement alone (RFC 1624: the TTL/protocol word fell
            // by 0x0100, so the checksum rises by 0x0100 in ones' complement).
            if (hdr.ipv4.hdr_checksum >= 0xFF00) {
                hdr.ipv4.hdr_checksum = hdr.ipv4.hdr_checksum + 0x0101;   // end-around carry
            } else {
                hdr.ipv4.hdr_checksum = hdr.ipv4.hdr_checksum + 0x0100;
            }
        }
    }
}

#endif
