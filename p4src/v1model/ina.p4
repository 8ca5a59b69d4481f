// INA switch for v1model (bmv2 simple_switch, p4sim): ATP-style hashed aggregator pool with job
// isolation and PS fallback, GOAT aggregation-node filtering, ESA preemption by packet swapping,
// bitmaps for idempotent retransmission, multi-level aggregation and result multicast.
// Protocol: docs/protocol.md.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

#ifndef INA_LANES
#define INA_LANES 64
#endif
#ifndef INA_POOL_SIZE
#define INA_POOL_SIZE 16384          // aggregators per switch (GOAT's testbed uses 16384)
#endif

#include "../common/ina_headers.p4"
#include "metadata.p4"
#include "aggregator.p4"
#include "forwarding.p4"
#include "egress.p4"

parser InaParser(packet_in pkt, out ina_headers_t hdr, inout ina_metadata_t meta,
                 inout standard_metadata_t sm) {
    state start {
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
            default: accept;            // unknown version: no lanes, forwarded as plain UDP
        }
    }
    state parse_lanes {
        pkt.extract(hdr.lanes);
        transition accept;
    }
}

control InaVerifyChecksum(inout ina_headers_t hdr, inout ina_metadata_t meta) {
    apply { }
}

control InaIngress(inout ina_headers_t hdr, inout ina_metadata_t meta,
                   inout standard_metadata_t sm) {
    InaAggregator() aggregator;
    InaForwarding() forwarding;

    action set_pipe(bit<8> pipe) { meta.pipe = pipe; }
    action aggregate(bit<32> pool_base, bit<32> pool_size) {
        meta.is_aggregation_node = 1;
        meta.pool_base = pool_base;
        meta.pool_size = pool_size;
    }
    action job_config(bit<1> preemption, bit<1> hold_until_result) {
        meta.job_known = 1;
        meta.preemption = preemption;
        meta.hold = hold_until_result;
    }
    action release(bit<16> node_id, bit<32> pool_base, bit<32> pool_size) {
        meta.releasing = 1;
        meta.agg_node = node_id;
        meta.pool_base = pool_base;
        meta.pool_size = pool_size;
    }
    // ina_level is looked up before the aggregator (which keeps a complete aggregate only at a
    // multicast level) and only writes metadata; the header is rewritten once the verdict is in
    action to_node(bit<16> next_node, bit<8> next_fan_in) {
        meta.has_next = 1;
        meta.next_node = next_node;
        meta.next_fan_in = next_fan_in;
    }
    action to_multicast(bit<16> group) {
        meta.last_level = 1;
        meta.result_group = group;
    }
    action to_ps() {
        meta.last_level = 1;
    }

    // Multi-pipeline switches: which pipe a port belongs to (default: pipe 0).
    table ina_port_pipe {
        key = { sm.ingress_port : exact; }
        actions = { set_pipe; NoAction; }
        default_action = NoAction();
        size = 512;
    }
    // GOAT filtering: the aggregation-node ids this switch serves, with each pipe's pool.
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
    // ATP mode: results of `job` passing back through this switch free what it held for them.
    table ina_release {
        key = { hdr.ina.job_id : exact; }
        actions = { release; NoAction; }
        default_action = NoAction();
        size = 1024;
    }
    // Where a complete aggregate of (job, node) goes next.
    table ina_level {
        key = {
            hdr.ina.job_id  : exact;
            hdr.ina.node_id : exact;
        }
        actions = { to_node; to_multicast; to_ps; }
        default_action = to_ps();
        size = 4096;
    }

    apply {
        meta.verdict = INA_PASS;
        if (hdr.lanes.isValid() && (hdr.ina.flags & INA_FLAG_RESEND) == 0) {
            ina_port_pipe.apply();
            meta.agg_node = hdr.ina.node_id;
            if ((hdr.ina.flags & INA_FLAG_RESULT) != 0) {
                if (ina_release.apply().hit) {
                    meta.job_known = 1;
                }
            } else if (ina_node.apply().hit) {
                ina_job.apply();
                if (meta.job_known == 1) {
                    ina_level.apply();
                }
            }
            if (meta.job_known == 1) {
                aggregator.apply(hdr, meta);
            }
            if (meta.verdict == INA_RETAINED) {
                // rule 8: a worker's retry found the result kept here; it goes back to that
                // worker alone, as if from the PS
                hdr.ina.flags = INA_FLAG_RESULT | INA_FLAG_RETRY | (hdr.ina.flags & INA_FLAG_OVERFLOW);
                hdr.ina.worker_id = INA_WORKER_AGGREGATE;
                bit<32> sender = hdr.ipv4.src_addr;
                hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
                hdr.ipv4.dst_addr = sender;
            }
            if (meta.verdict == INA_ABSORB || meta.verdict == INA_DUPLICATE) {
                mark_to_drop(sm);
                exit;
            }
            // Complete aggregates move to the next level or become results; fragments that
            // collided here try the next level's aggregator (ATP's two-level fallback).
            if (meta.verdict == INA_COMPLETE
                    || (meta.verdict == INA_PASS && meta.job_known == 1 && meta.releasing == 0
                        && (hdr.ina.flags & INA_FLAG_COLLISION) != 0)) {
                if (meta.has_next == 1) {
                    hdr.ina.node_id = meta.next_node;
                    hdr.ina.fan_in = meta.next_fan_in;
                }
                if (meta.verdict == INA_COMPLETE) {
                    // an aggregate leaving its node never collided there, whatever a fragment
                    // of it met at the level below, and it is an aggregate
                    hdr.ina.flags = hdr.ina.flags & ~(INA_FLAG_COLLISION | INA_FLAG_RETRY);
                    hdr.ina.worker_id = INA_WORKER_AGGREGATE;   // also one that arrived complete
                    if (meta.last_level == 1) {
                        hdr.ina.flags = hdr.ina.flags | INA_FLAG_RESULT;
                        sm.mcast_grp = meta.result_group;
                    }
                }
            }
            // RESEND here: a retry the aggregator turned into one (rule 8)
            if (meta.verdict != INA_PASS
                    || (hdr.ina.flags & (INA_FLAG_PREEMPTED | INA_FLAG_COLLISION | INA_FLAG_RESEND)) != 0) {
                hdr.udp.checksum = 0;      // payload or header rewritten
            }
        }
        if (sm.mcast_grp == 0) {
            forwarding.apply(hdr, meta, sm);
        }
    }
}

control InaComputeChecksum(inout ina_headers_t hdr, inout ina_metadata_t meta) {
    apply {
        update_checksum(hdr.ipv4.isValid() && hdr.ipv4.ihl == 5,   // options: InaForwarding
            { hdr.ipv4.version, hdr.ipv4.ihl, hdr.ipv4.diffserv, hdr.ipv4.total_len,
              hdr.ipv4.identification, hdr.ipv4.flags, hdr.ipv4.frag_offset, hdr.ipv4.ttl,
              hdr.ipv4.protocol, hdr.ipv4.src_addr, hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum, HashAlgorithm.csum16);
    }
}

control InaDeparser(packet_out pkt, in ina_headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.ipv4);
        pkt.emit(hdr.udp);
        pkt.emit(hdr.ina);
        pkt.emit(hdr.lanes);
    }
}

V1Switch(InaParser(), InaVerifyChecksum(), InaIngress(), InaEgress(), InaComputeChecksum(),
         InaDeparser()) main;
