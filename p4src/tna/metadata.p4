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
const bit<8> INA_OP_READ_LO = 7;   // recirculated: a drained or swapped partial's low lanes out

const bit<3> INA_RESUBMIT   = 4;   // verdict: resubmit for a second pass
const bit<3> INA_RECIRCULATE = 5;  // verdict: recirculate (the packet as rewritten) for another pass

// Tofino 1's recirculation port of a pipe is 128 * pipe + 68: the pipe's bits of the ingress port
// over this local port (the pass comes back into the same pipe, to the same registers).
const bit<7> INA_RECIRC_LOCAL_PORT = 68;

header ina_resubmit_h {
    bit<8>  op;
    bit<32> keep_bits;             // UNMERGE: bitmap bits to keep (all but the duplicate's new ones)
    bit<8>  prio_seen;             // DOWNGRADE: the holder's priority the failed contest read
    bit<8>  prio_next;             // DOWNGRADE: prio_seen >> 1, computed outside the stateful ALU
    bit<8>  pad;                   // Tofino 1 resubmit data is 64 bits
}

// Prepended to a recirculated packet (a resubmitted pass carries only 8 bytes and the original
// packet; a recirculated one carries the packet as this pass rewrote it: the lanes read out so
// far). The next pass takes its operation and aggregator from here, since a drain or a swap has
// rewritten the key the index was hashed from, and forwards by the port the packet came in on.
header ina_recirc_h {
    bit<8>   op;
    bit<7>   pad;
    PortId_t in_port;
    bit<32>  agg_index;
}

struct ina_ig_metadata_t {
    ina_resubmit_h resubmit;
    ina_recirc_h recirc_in;        // this pass was recirculated (parsed before Ethernet)
    ina_recirc_h recirc_out;       // ... and this one will be (the deparser emits it first)
    bit<1>  recirculated;
    PortId_t in_port;              // the port the packet entered the switch by (not a recirculation port)
    PortId_t recirc_port;          // this pipe's recirculation port
    bit<INA_HALF_LANES> saturated_hi;  // bit j: lane K/2 + j of an aggregate sits at a bound
    bit<8>  op;
    bit<8>  pipe;
    bit<32> pool_base;
    bit<32> pool_mask;             // ina_release's mask (32 bits: every index operand is 32 bits)
    bit<1>  job_configured;        // ina_job hit (the job's entry; looked up for every INA packet)
    bit<1>  job_known;             // the aggregator runs: ina_node and ina_job hit, or ina_release
    bit<1>  preemption;
    bit<1>  hold;
    bit<1>  releasing;
    bit<3>  verdict;
    bit<8>  missing;               // fan_in |-| count: 0 when the packet is already complete
    // ina_level's answer, looked up early for every INA packet and applied by the aggregator
    // where a packet completes or collides (no table waits for the verdict)
    bit<16> next_node;
    bit<8>  next_fan_in;
    bit<8>  result_flag;           // INA_FLAG_RESULT at the last level, else 0
    bit<16> result_group;
    bit<16> mcast_group;           // set when a complete aggregate leaves as a multicast result
    bit<32> agg_hash;              // CRC32(job, submodel, fragment) (its own field: Tofino's hash unit)
    bit<32> agg_offset;            // agg_hash & pool_mask
    bit<32> agg_index;             // pool_base + agg_offset: a plain field, every register's index
    bit<8>  kind;                  // what this pass does (KIND_*, aggregator.p4)
    // the registers' answers, each written by one register's table and read by later ones
    bit<8>  hi_res;                // owner_hi: OWNER_*
    bit<8>  lo_res;                // owner_lo: OWNER_*
    bit<8>  situation;             // agg_round's table: SIT_* (the parser starts it at SIT_OTHER)
    bit<8>  held;                  // agg_priority_contest: 0 for a win, else the holder's priority
    bit<32> dup_bits;              // bitmap bits the aggregator already held (duplicate test)
    bit<32> new_bits;              // the packet's bits it did not hold (bitmap ^ dup_bits)
    bit<8>  done;                  // agg_remaining_consume: 1 when the aggregate completed
    bit<32> old_hi;                // SWAP: the evicted owner's job ++ submodel
    bit<8>  taken_priority;        // TAKE / DRAIN / SWAP: what the aggregator held
    bit<32> taken_bitmap;
    bit<8>  taken_fan_in;
    bit<8>  taken_remaining;
    bit<32> taken_ps_addr;
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
    bit<INA_HALF_LANES> saturated_lo;  // bit i: lane i (< K/2) of an aggregate sits at a bound
    bool    ipv4_checksum_full;    // no IPv4 options: the deparser recomputes the checksum
}

#endif
