// Wire format of the INA protocol (docs/protocol.md), shared by the v1model and TNA programs.
#ifndef _INA_HEADERS_P4_
#define _INA_HEADERS_P4_

#include "lanes.p4"

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<8>  IP_PROTO_UDP   = 17;
const bit<16> INA_UDP_PORT   = 47100;
const bit<4>  INA_VERSION    = 2;
// UDP length of an INA frame without lanes (UDP 8 + INA header 24 bytes): the PS's query to a
// worker, a worker's ask to the PS. Switches parse no lanes of it and forward it as plain UDP
// (docs/protocol.md)
const bit<16> INA_HEADER_ONLY_UDP_LEN = 32;

// flags
const bit<8> INA_FLAG_RESULT    = 0x01;
const bit<8> INA_FLAG_COLLISION = 0x02;
const bit<8> INA_FLAG_PREEMPTED = 0x04;
const bit<8> INA_FLAG_REMINDER  = 0x08;
const bit<8> INA_FLAG_RESEND    = 0x10;
const bit<8> INA_FLAG_OVERFLOW  = 0x20;
const bit<8> INA_FLAG_RELAY     = 0x40;   // the PS's result for a node to multicast (rule 1); switches only route on it
const bit<8> INA_FLAG_RETRY     = 0x80;   // a worker's retransmission to its node (rule 8)

const bit<8> INA_WORKER_AGGREGATE = 255;   // worker_id of partial and complete aggregates

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;

header ethernet_h {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header ipv4_h {
    bit<4>      version;
    bit<4>      ihl;
    bit<8>      diffserv;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

header udp_h {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header ina_h {
    bit<4>  version;
    bit<4>  rsvd;
    bit<8>  flags;
    bit<16> job_id;
    bit<16> node_id;        // aggregation node the fragment is assigned to (0: the PS)
    bit<16> submodel_id;
    bit<32> fragment_id;
    bit<8>  worker_id;      // 255 for aggregates
    bit<8>  fan_in;         // contributions node_id must collect
    bit<8>  count;          // contributions in this payload
    bit<8>  priority;       // ESA priority
    bit<32> bitmap;         // which workers' contributions the payload holds
    bit<32> round;          // the job's all-reduce round: stale partials never mix with later rounds
}

#define INA_LANE_FIELD(i) int<32> v##i;
header ina_lanes_h {
    INA_FOR_EACH_LANE(INA_LANE_FIELD)
}

struct ina_headers_t {
    ethernet_h  ethernet;
    ipv4_h      ipv4;
    udp_h       udp;
    ina_h       ina;
    ina_lanes_h lanes;
}

// What the aggregator decided for this packet.
const bit<3> INA_PASS      = 0;   // not aggregated here: forward unchanged (or as flagged)
const bit<3> INA_ABSORB    = 1;   // consumed into an aggregator: drop
const bit<3> INA_COMPLETE  = 2;   // carries a complete aggregate for this node: ina_level decides
const bit<3> INA_DUPLICATE = 3;   // contribution already aggregated, or from a finished round: drop
const bit<3> INA_RETAINED  = 4;   // a retry found the complete aggregate kept here: it carries it

#endif
