// Metadata of the TNA INA program.
#ifndef _INA_TNA_METADATA_P4_
#define _INA_TNA_METADATA_P4_

// Second-pass operations, carried in the resubmit header (ESA §6: state that was read early in
// the first pass is swapped or freed in a resubmitted second pass).
const bit<8> INA_OP_NONE    = 0;
const bit<8> INA_OP_TAKE    = 1;   // aggregate complete: read the sums out, free (or hold)
const bit<8> INA_OP_SWAP    = 2;   // preemption: exchange aggregator and packet (packet swapping)
const bit<8> INA_OP_DRAIN   = 3;   // reminder: read the partial out to the PS, free
const bit<8> INA_OP_RELEASE = 4;   // a returning result frees a held aggregator
const bit<8> INA_OP_UNMERGE = 5;   // a duplicate's bits merged in pass 1 are cleared again
const bit<8> INA_OP_DOWNGRADE = 6; // a failed preemption halves the holder's priority (ESA)

const bit<3> INA_RESUBMIT   = 4;   // verdict: resubmit for a second pass

header ina_resubmit_h {
    bit<8>  op;
    bit<32> keep_bits;             // UNMERGE: bitmap bits to keep (all but the duplicate's new ones)
    bit<8>  prio_seen;             // DOWNGRADE: the holder's priority the failed contest read
    bit<8>  prio_next;             // DOWNGRADE: prio_seen >> 1, computed outside the stateful ALU
    bit<8>  pad;                   // Tofino 1 resubmit data is 64 bits
}

struct ina_ig_metadata_t {
    ina_resubmit_h resubmit;
    bit<8>  op;
    bit<8>  pipe;
    bit<32> pool_base;
    bit<32> pool_mask;             // the action's 16-bit mask, widened: every index operand is 32 bits
    bit<1>  job_known;
    bit<1>  preemption;
    bit<1>  hold;
    bit<1>  releasing;
    bit<16> agg_node;
    bit<3>  verdict;
    bit<8>  missing;               // fan_in |-| count: 0 when the packet is already complete
    // ina_level's answer, looked up early for every INA packet and applied by the aggregator
    // where a packet completes or collides (no table waits for the verdict)
    bit<16> next_node;
    bit<8>  next_fan_in;
    bit<8>  result_flag;           // INA_FLAG_RESULT at the last level, else 0
    bit<16> result_group;
    bit<16> mcast_group;           // set when a complete aggregate leaves as a multicast result
    bit<32> agg_hash;              // CRC32 of the key (its own field: Tofino's hash unit)
    bit<32> agg_offset;            // agg_hash & pool_mask
    bit<32> agg_index;             // pool_base + agg_offset: a plain field, every register's index
    bit<32> dup_bits;              // bitmap bits the aggregator already held (duplicate test)
    bit<32> key_hi;                // job ++ submodel
    bit<32> key_lo;                // fragment
    bit<8>  prio_in;               // what agg_priority stores or compares this pass
    bit<32> bitmap_in;             // what agg_bitmap stores, merges or keeps this pass
    // forwarding lookups: an ina_route hit waits here and overrides the IPv4 next hop a stage later
    bit<1>  routed;                // ina_route hit
    PortId_t route_port;
    mac_addr_t route_dmac;
    bit<1>  nhop_drop;             // ipv4_lpm chose drop (or missed); a route may still win
    bit<1>  ecmp;                  // ipv4_lpm chose an ECMP group
    bit<16> ecmp_group;
    bit<16> ecmp_hash;
    bit<16> ecmp_member;
}

struct ina_eg_metadata_t {
    bit<INA_LANES> saturated;      // bit i: lane i of an aggregate sits at a saturation bound
}

#endif
