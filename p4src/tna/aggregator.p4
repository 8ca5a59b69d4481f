// The aggregator pool for Tofino (TNA): same protocol as the v1model program, laid out the way
// a Tofino pipeline runs it. Every register has ONE table, whose const entries pick the
// register's operation from what the pass is (`kind`, set once early) and what the registers
// before it answered; a register's operations thus share one logical table and one stage.
// First pass: claim / match / merge / add / contest. Whatever must read state out (a preempted
// partial, a reminder's drain, a release) resubmits the packet and does it in a second pass;
// lanes come out of their paired registers half a pass at a time, so a completion (whose add
// put out the high lanes) and a drain or swap (whose second pass did) recirculate for the low
// ones. Stage by stage: p4src/tna/README.md.
#ifndef _INA_TNA_AGGREGATOR_P4_
#define _INA_TNA_AGGREGATOR_P4_

// What a pass does, decided once from the resubmitted or recirculated operation and the packet
// (ina_pass_kind).
const bit<8> KIND_NONE      = 0;    // not the aggregator's (never set by ina_pass_kind)
const bit<8> KIND_COMPLETE  = 1;    // arrived complete: on to the next level, memory untouched
const bit<8> KIND_LOOKUP    = 2;    // a returning result (ATP hold) or a reminder: owned here?
const bit<8> KIND_FRAGMENT  = 3;    // claim, merge and add, or contest
const bit<8> KIND_TAKE      = 4;    // second pass: the aggregate is complete, read it out, free
const bit<8> KIND_TAKE_HOLD = 5;    // ... and keep the key (ATP's hold until the result returns)
const bit<8> KIND_DRAIN     = 6;    // second pass of a reminder: the partial out to its PS, free
const bit<8> KIND_SWAP      = 7;    // second pass of a won contest: packet swapping
const bit<8> KIND_RELEASE   = 8;    // second pass of a returning result: free the held aggregator
const bit<8> KIND_UNMERGE   = 9;    // second pass of a duplicate that brought new bits
const bit<8> KIND_DOWNGRADE = 10;   // second pass of a lost contest: halve the holder's priority
const bit<8> KIND_READ_LO   = 11;   // recirculated pass of a drain or swap: the low lanes out

// What owner_hi answers a fragment or a lookup.
const bit<8> OWNER_OTHER   = 0;
const bit<8> OWNER_CLAIMED = 1;
const bit<8> OWNER_MATCH   = 2;

// Where a fragment or a lookup stands once the owner registers have answered (agg_round's
// table writes it; the parser starts it at SIT_OTHER). SIT_NEWER is 0 because agg_round_check
// outputs three answers and a Tofino 1 stateful ALU drives at most two constants (its two
// high-half ALUs); 0 is what it outputs when it drives none (bfas: "instruction slot used
// multiple times" otherwise).
const bit<8> SIT_NEWER = 0;         // same key, the packet's round is newer: reclaim the stale partial
const bit<8> SIT_CLAIM = 1;         // the fragment claimed a free aggregator
const bit<8> SIT_SAME  = 2;         // same key and round: merge and add
const bit<8> SIT_OTHER = 3;         // another key holds the aggregator (or no owner: lookup)
const bit<8> SIT_OLDER = 4;         // same key, the packet is from a finished round
const bit<8> SIT_OWNED = 5;         // a lookup found its own key and round

// A register with two exchanges, each returning the previous value: _swap stores the arriving
// packet's state (a claim, or ESA's packet swapping), _take what a completion or release leaves
// (0, or ATP's hold marks). Their inputs are header fields or metadata set before the
// aggregator, so no stage waits for an input to be computed.
#define EXCHANGE_REGISTER(T, name, swap_input, take_input)                             \
    Register<T, bit<32>>(INA_POOL_SIZE) name;                                          \
    RegisterAction<T, bit<32>, T>(name) name##_swap = {                                \
        void apply(inout T value, out T rv) { rv = value; value = swap_input; }        \
    };                                                                                 \
    RegisterAction<T, bit<32>, T>(name) name##_take = {                                \
        void apply(inout T value, out T rv) { rv = value; value = take_input; }        \
    };

control InaAggregator(inout ina_headers_t hdr, inout ina_ig_metadata_t meta,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    // ---- stage 2: the index (pool_base + hash & mask; the mask was applied by ina_node's or
    // the release path's action) and the pass's kind with the inputs its registers store
    action compute_agg_index() {
        meta.agg_index = meta.pool_base + meta.agg_offset;
    }
    // a recirculated pass works on the aggregator the pass before it named (a drain or swap
    // has rewritten the key it was hashed from)
    action recirculated_agg_index() {
        meta.agg_index = meta.recirc_in.agg_index;
    }
    // What the priority and bitmap registers store or compare in this pass (one input field
    // each: a stateful ALU reads at most two PHV fields). ATP's hold keeps a completed
    // aggregator's key with priority 255 (no preemption) and an all-ones bitmap (every copy a
    // duplicate) until the result returns.
    action pass_with_inputs(bit<8> kind, bit<8> priority, bit<32> bitmap) {
        meta.kind = kind;
        meta.prio_in = priority;
        meta.bitmap_in = bitmap;
    }
    action pass_with_packet_inputs(bit<8> kind) {
        meta.kind = kind;
        meta.prio_in = hdr.ina.priority;
        meta.bitmap_in = hdr.ina.bitmap;
    }
    action pass_downgrade() {
        meta.kind = KIND_DOWNGRADE;
        meta.prio_in = meta.resubmit.prio_next;
    }
    action pass_unmerge() {
        meta.kind = KIND_UNMERGE;
        meta.bitmap_in = meta.resubmit.keep_bits;
    }
    // first match wins (const entries are in priority order)
    table ina_pass_kind {
        key = {
            meta.op         : ternary;
            meta.releasing  : ternary;
            hdr.ina.flags   : ternary;   // REMINDER
            meta.missing    : ternary;   // 0: the packet is complete already
            meta.hold       : ternary;
        }
        actions = { pass_with_inputs; pass_with_packet_inputs; pass_downgrade; pass_unmerge; }
        const entries = {
            (INA_OP_NONE, 0, 0 &&& INA_FLAG_REMINDER, 0, _) : pass_with_packet_inputs(KIND_COMPLETE);
            (INA_OP_NONE, 1, _, _, _)                       : pass_with_packet_inputs(KIND_LOOKUP);
            (INA_OP_NONE, _, INA_FLAG_REMINDER &&& INA_FLAG_REMINDER, _, _)
                                                            : pass_with_packet_inputs(KIND_LOOKUP);
            (INA_OP_NONE, _, _, _, _)                       : pass_with_packet_inputs(KIND_FRAGMENT);
            (INA_OP_TAKE, _, _, _, 1)                       : pass_with_inputs(KIND_TAKE_HOLD, 0xFF, 0xFFFFFFFF);
            (INA_OP_TAKE, _, _, _, _)                       : pass_with_inputs(KIND_TAKE, 0, 0);
            (INA_OP_DRAIN, _, _, _, _)                      : pass_with_inputs(KIND_DRAIN, 0, 0);
            (INA_OP_RELEASE, _, _, _, _)                    : pass_with_inputs(KIND_RELEASE, 0, 0);
            (INA_OP_SWAP, _, _, _, _)                       : pass_with_packet_inputs(KIND_SWAP);
            (INA_OP_DOWNGRADE, _, _, _, _)                  : pass_downgrade();
            (INA_OP_UNMERGE, _, _, _, _)                    : pass_unmerge();
            (INA_OP_READ_LO, _, _, _, _)                    : pass_with_inputs(KIND_READ_LO, 0, 0);
        }
        size = 16;
    }
    // count >= fan_in as a test against a constant (gateways cannot order two fields)
    action count_missing() {
        meta.missing = hdr.ina.fan_in |-| hdr.ina.count;
    }

    // ---- stage 3: owner key, high word (job ++ submodel; 0 = free)
    EXCHANGE_REGISTER(bit<32>, owner_hi, meta.key_hi, 0)
    RegisterAction<bit<32>, bit<32>, bit<8>>(owner_hi) owner_hi_claim_or_match = {
        void apply(inout bit<32> value, out bit<8> rv) {
            if (value == 0) {
                value = meta.key_hi;
                rv = OWNER_CLAIMED;
            } else if (value == meta.key_hi) {
                rv = OWNER_MATCH;
            } else {
                rv = OWNER_OTHER;
            }
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<8>>(owner_hi) owner_hi_match = {
        void apply(inout bit<32> value, out bit<8> rv) {
            if (value == meta.key_hi) { rv = OWNER_MATCH; } else { rv = OWNER_OTHER; }
        }
    };
    action owner_hi_claim_or_match_op() { meta.hi_res = owner_hi_claim_or_match.execute(meta.agg_index); }
    action owner_hi_match_op()          { meta.hi_res = owner_hi_match.execute(meta.agg_index); }
    action owner_hi_take_op()           { owner_hi_take.execute(meta.agg_index); }
    action owner_hi_swap_op()           { meta.old_hi = owner_hi_swap.execute(meta.agg_index); }
    table owner_hi_op {
        key = { meta.kind : exact; }
        actions = { owner_hi_claim_or_match_op; owner_hi_match_op; owner_hi_take_op;
                    owner_hi_swap_op; NoAction; }
        const entries = {
            KIND_FRAGMENT : owner_hi_claim_or_match_op();
            KIND_LOOKUP   : owner_hi_match_op();
            KIND_TAKE     : owner_hi_take_op();
            KIND_DRAIN    : owner_hi_take_op();
            KIND_RELEASE  : owner_hi_take_op();
            KIND_SWAP     : owner_hi_swap_op();
        }
        default_action = NoAction();
        size = 16;
    }

    // ---- stage 4: owner key, low word (fragment)
    EXCHANGE_REGISTER(bit<32>, owner_lo, meta.key_lo, 0)
    RegisterAction<bit<32>, bit<32>, bit<8>>(owner_lo) owner_lo_match = {
        void apply(inout bit<32> value, out bit<8> rv) {
            if (value == meta.key_lo) { rv = OWNER_MATCH; } else { rv = OWNER_OTHER; }
        }
    };
    action owner_lo_claim_op() { owner_lo_swap.execute(meta.agg_index); }
    action owner_lo_match_op() { meta.lo_res = owner_lo_match.execute(meta.agg_index); }
    action owner_lo_take_op()  { owner_lo_take.execute(meta.agg_index); }
    action owner_lo_swap_op()  { hdr.ina.fragment_id = owner_lo_swap.execute(meta.agg_index); }
    table owner_lo_op {
        key = {
            meta.kind   : exact;
            meta.hi_res : exact;
        }
        actions = { owner_lo_claim_op; owner_lo_match_op; owner_lo_take_op; owner_lo_swap_op;
                    NoAction; }
        const entries = {
            (KIND_FRAGMENT, OWNER_CLAIMED) : owner_lo_claim_op();
            (KIND_FRAGMENT, OWNER_MATCH)   : owner_lo_match_op();
            (KIND_LOOKUP, OWNER_MATCH)     : owner_lo_match_op();
            (KIND_TAKE, OWNER_OTHER)       : owner_lo_take_op();
            (KIND_DRAIN, OWNER_OTHER)      : owner_lo_take_op();
            (KIND_RELEASE, OWNER_OTHER)    : owner_lo_take_op();
            (KIND_SWAP, OWNER_OTHER)       : owner_lo_swap_op();
        }
        default_action = NoAction();
        size = 16;
    }

    // ---- stage 5: the owner's round; writes the situation the later registers key on. A later
    // round's packet of the same key reclaims a stale partial (a worker starts round r+1 only
    // once every result of round r is in) exactly as a free aggregator is claimed.
    EXCHANGE_REGISTER(bit<32>, agg_round, hdr.ina.round, 0)
    RegisterAction<bit<32>, bit<32>, bit<8>>(agg_round) agg_round_check = {
        void apply(inout bit<32> value, out bit<8> rv) {
            if (value == hdr.ina.round) {
                rv = SIT_SAME;
            } else if (value < hdr.ina.round) {
                value = hdr.ina.round;
                rv = SIT_NEWER;
            } else {
                rv = SIT_OLDER;
            }
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<8>>(agg_round) agg_round_match = {
        void apply(inout bit<32> value, out bit<8> rv) {
            if (value == hdr.ina.round) { rv = SIT_OWNED; } else { rv = SIT_OTHER; }
        }
    };
    action agg_round_claim_op() {
        agg_round_swap.execute(meta.agg_index);
        meta.situation = SIT_CLAIM;
    }
    action agg_round_check_op() { meta.situation = agg_round_check.execute(meta.agg_index); }
    action agg_round_match_op() { meta.situation = agg_round_match.execute(meta.agg_index); }
    action agg_round_take_op()  { agg_round_take.execute(meta.agg_index); }
    action agg_round_swap_op()  { hdr.ina.round = agg_round_swap.execute(meta.agg_index); }
    table agg_round_op {
        key = {
            meta.kind   : exact;
            meta.hi_res : exact;
            meta.lo_res : exact;
        }
        actions = { agg_round_claim_op; agg_round_check_op; agg_round_match_op; agg_round_take_op;
                    agg_round_swap_op; NoAction; }
        const entries = {
            (KIND_FRAGMENT, OWNER_CLAIMED, OWNER_OTHER) : agg_round_claim_op();
            (KIND_FRAGMENT, OWNER_MATCH, OWNER_MATCH) : agg_round_check_op();
            (KIND_LOOKUP, OWNER_MATCH, OWNER_MATCH)   : agg_round_match_op();
            (KIND_TAKE, OWNER_OTHER, OWNER_OTHER) : agg_round_take_op();
            (KIND_DRAIN, OWNER_OTHER, OWNER_OTHER) : agg_round_take_op();
            (KIND_RELEASE, OWNER_OTHER, OWNER_OTHER) : agg_round_take_op();
            (KIND_SWAP, OWNER_OTHER, OWNER_OTHER) : agg_round_swap_op();
        }
        default_action = NoAction();                  // SIT_OTHER stays
        size = 16;
    }

    // ---- stage 6: priority, bitmap, fan-in and PS address, keyed on the situation
    // A stateful ALU reads at most two PHV fields over all its actions, so priority and bitmap
    // each read one input field that ina_pass_kind filled (prio_in / bitmap_in), plus prio_seen.
    EXCHANGE_REGISTER(bit<8>, agg_priority, meta.prio_in, meta.prio_in)
    // ESA: a higher-priority arrival wins; a failed contest halves the holder's priority. The
    // stateful ALU has no shift, so the contest only reads the priority; the MAU compares it and
    // computes the half, and a resubmitted pass writes it (compare-and-set, below).
    // It answers 0 when the packet wins (its priority is above the holder's) and the holder's
    // priority otherwise: a gateway cannot order two fields, the stateful ALU can. A loss that
    // reads 0 only happens to a packet of priority 0, so "0 and a packet priority above 0" is a
    // win, any other 0 a loss to a holder of priority 0.
    RegisterAction<bit<8>, bit<32>, bit<8>>(agg_priority) agg_priority_contest = {
        void apply(inout bit<8> value, out bit<8> rv) {
            if (value < meta.prio_in) {
                rv = 0;
            } else {
                rv = value;
            }
        }
    };
    // Second pass of a failed contest: halve only if the priority is still the one the contest
    // read (another packet may have swapped or freed the aggregator in between).
    RegisterAction<bit<8>, bit<32>, bit<8>>(agg_priority) agg_priority_downgrade = {
        void apply(inout bit<8> value) {
            if (value == meta.resubmit.prio_seen) {
                value = meta.prio_in;               // prio_seen >> 1
            }
        }
    };
    action agg_priority_claim_op()     { agg_priority_swap.execute(meta.agg_index); }
    action agg_priority_contest_op()   { meta.held = agg_priority_contest.execute(meta.agg_index); }
    action agg_priority_take_op()      { meta.taken_priority = agg_priority_take.execute(meta.agg_index); }
    action agg_priority_swap_op()      { hdr.ina.priority = agg_priority_swap.execute(meta.agg_index); }
    action agg_priority_downgrade_op() { agg_priority_downgrade.execute(meta.agg_index); }
    table agg_priority_op {
        key = {
            meta.kind       : exact;
            meta.situation  : ternary;
            meta.preemption : ternary;
        }
        actions = { agg_priority_claim_op; agg_priority_contest_op; agg_priority_take_op;
                    agg_priority_swap_op; agg_priority_downgrade_op; NoAction; }
        const entries = {
            (KIND_FRAGMENT, SIT_CLAIM, _) : agg_priority_claim_op();
            (KIND_FRAGMENT, SIT_NEWER, _) : agg_priority_claim_op();
            (KIND_FRAGMENT, SIT_SAME, 1)  : agg_priority_claim_op();     // ESA renewal on a merge
            (KIND_FRAGMENT, SIT_OTHER, 1) : agg_priority_contest_op();
            (KIND_TAKE, _, _)             : agg_priority_take_op();
            (KIND_TAKE_HOLD, _, _)        : agg_priority_take_op();
            (KIND_DRAIN, _, _)            : agg_priority_take_op();
            (KIND_RELEASE, _, _)          : agg_priority_take_op();
            (KIND_SWAP, _, _)             : agg_priority_swap_op();
            (KIND_DOWNGRADE, _, _)        : agg_priority_downgrade_op();
        }
        default_action = NoAction();
        size = 16;
    }

    EXCHANGE_REGISTER(bit<32>, agg_bitmap, meta.bitmap_in, meta.bitmap_in)
    // The stateful ALU cannot test (value & bitmap) before writing, so the merge is
    // unconditional; a duplicate that brought new bits (a partial overlapping the aggregator)
    // has them cleared again by a resubmitted pass (agg_bitmap_keep), so a dropped packet
    // leaves the aggregator as it was.
    // It returns the overlap (old bitmap & the packet's) computed by the word's second ALU, so
    // the duplicate test is a match on the returned value right after this stage.
    RegisterAction<bit<32>, bit<32>, bit<32>>(agg_bitmap) agg_bitmap_merge = {
        void apply(inout bit<32> value, out bit<32> rv) {
            rv = value & meta.bitmap_in;
            value = value | meta.bitmap_in;
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<32>>(agg_bitmap) agg_bitmap_keep = {
        void apply(inout bit<32> value) {
            value = value & meta.bitmap_in;         // keep_bits
        }
    };
    action agg_bitmap_claim_op()  { agg_bitmap_swap.execute(meta.agg_index); }
    action agg_bitmap_merge_op()  { meta.dup_bits = agg_bitmap_merge.execute(meta.agg_index); }
    action agg_bitmap_take_op()   { meta.taken_bitmap = agg_bitmap_take.execute(meta.agg_index); }
    action agg_bitmap_swap_op()   { hdr.ina.bitmap = agg_bitmap_swap.execute(meta.agg_index); }
    action agg_bitmap_unmerge_op() { agg_bitmap_keep.execute(meta.agg_index); }
    table agg_bitmap_op {
        key = {
            meta.kind      : exact;
            meta.situation : exact;
        }
        actions = { agg_bitmap_claim_op; agg_bitmap_merge_op; agg_bitmap_take_op;
                    agg_bitmap_swap_op; agg_bitmap_unmerge_op; NoAction; }
        const entries = {
            (KIND_FRAGMENT, SIT_CLAIM) : agg_bitmap_claim_op();
            (KIND_FRAGMENT, SIT_NEWER) : agg_bitmap_claim_op();
            (KIND_FRAGMENT, SIT_SAME)  : agg_bitmap_merge_op();
            (KIND_TAKE, SIT_OTHER)   : agg_bitmap_take_op();
            (KIND_TAKE_HOLD, SIT_OTHER) : agg_bitmap_take_op();
            (KIND_DRAIN, SIT_OTHER)  : agg_bitmap_take_op();
            (KIND_RELEASE, SIT_OTHER) : agg_bitmap_take_op();
            (KIND_SWAP, SIT_OTHER)   : agg_bitmap_swap_op();
            (KIND_UNMERGE, SIT_OTHER) : agg_bitmap_unmerge_op();
        }
        default_action = NoAction();
        size = 16;
    }

    EXCHANGE_REGISTER(bit<8>, agg_fan_in, hdr.ina.fan_in, 0)
    action agg_fan_in_claim_op() { agg_fan_in_swap.execute(meta.agg_index); }
    action agg_fan_in_take_op()  { meta.taken_fan_in = agg_fan_in_take.execute(meta.agg_index); }
    action agg_fan_in_swap_op()  { meta.taken_fan_in = agg_fan_in_swap.execute(meta.agg_index); }
    table agg_fan_in_op {
        key = {
            meta.kind      : exact;
            meta.situation : exact;
        }
        actions = { agg_fan_in_claim_op; agg_fan_in_take_op; agg_fan_in_swap_op; NoAction; }
        const entries = {
            (KIND_FRAGMENT, SIT_CLAIM) : agg_fan_in_claim_op();
            (KIND_FRAGMENT, SIT_NEWER) : agg_fan_in_claim_op();
            (KIND_TAKE, SIT_OTHER)   : agg_fan_in_take_op();
            (KIND_TAKE_HOLD, SIT_OTHER) : agg_fan_in_take_op();
            (KIND_DRAIN, SIT_OTHER)  : agg_fan_in_take_op();
            (KIND_RELEASE, SIT_OTHER) : agg_fan_in_take_op();
            (KIND_SWAP, SIT_OTHER)   : agg_fan_in_swap_op();
        }
        default_action = NoAction();
        size = 16;
    }

    EXCHANGE_REGISTER(bit<32>, agg_ps_addr, hdr.ipv4.dst_addr, 0)
    action agg_ps_addr_claim_op() { agg_ps_addr_swap.execute(meta.agg_index); }
    action agg_ps_addr_take_op()  { meta.taken_ps_addr = agg_ps_addr_take.execute(meta.agg_index); }
    action agg_ps_addr_swap_op()  { hdr.ipv4.dst_addr = agg_ps_addr_swap.execute(meta.agg_index); }
    table agg_ps_addr_op {
        key = {
            meta.kind      : exact;
            meta.situation : exact;
        }
        actions = { agg_ps_addr_claim_op; agg_ps_addr_take_op; agg_ps_addr_swap_op; NoAction; }
        const entries = {
            (KIND_FRAGMENT, SIT_CLAIM) : agg_ps_addr_claim_op();
            (KIND_FRAGMENT, SIT_NEWER) : agg_ps_addr_claim_op();
            (KIND_TAKE, SIT_OTHER)   : agg_ps_addr_take_op();
            (KIND_TAKE_HOLD, SIT_OTHER) : agg_ps_addr_take_op();
            (KIND_DRAIN, SIT_OTHER)  : agg_ps_addr_take_op();
            (KIND_SWAP, SIT_OTHER)   : agg_ps_addr_swap_op();
        }
        default_action = NoAction();
        size = 16;
    }

    // ---- stages 7-11: contributions still missing and the K lanes, after the duplicate test
    // (dup_bits == 0: none of the packet's workers is in the aggregate yet)
    EXCHANGE_REGISTER(bit<8>, agg_remaining, meta.missing, 0)   // fan_in - count: 0 when complete or free
    RegisterAction<bit<8>, bit<32>, bit<8>>(agg_remaining) agg_remaining_consume = {
        void apply(inout bit<8> value, out bit<8> rv) {
            if (value <= hdr.ina.count) {
                value = 0;
                rv = 1;
            } else {
                value = value - hdr.ina.count;
                rv = 0;
            }
        }
    };
    action agg_remaining_claim_op()   { agg_remaining_swap.execute(meta.agg_index); }
    action agg_remaining_consume_op() { meta.done = agg_remaining_consume.execute(meta.agg_index); }
    action agg_remaining_take_op()    { meta.taken_remaining = agg_remaining_take.execute(meta.agg_index); }
    action agg_remaining_swap_op()    { meta.taken_remaining = agg_remaining_swap.execute(meta.agg_index); }
    table agg_remaining_op {
        key = {
            meta.kind      : exact;
            meta.situation : exact;
            meta.dup_bits  : exact;
        }
        actions = { agg_remaining_claim_op; agg_remaining_consume_op; agg_remaining_take_op;
                    agg_remaining_swap_op; NoAction; }
        const entries = {
            (KIND_FRAGMENT, SIT_CLAIM, 0) : agg_remaining_claim_op();
            (KIND_FRAGMENT, SIT_NEWER, 0) : agg_remaining_claim_op();
            (KIND_FRAGMENT, SIT_SAME, 0)  : agg_remaining_consume_op();
            (KIND_TAKE, SIT_OTHER, 0) : agg_remaining_take_op();
            (KIND_TAKE_HOLD, SIT_OTHER, 0) : agg_remaining_take_op();
            (KIND_DRAIN, SIT_OTHER, 0) : agg_remaining_take_op();
            (KIND_RELEASE, SIT_OTHER, 0) : agg_remaining_take_op();
            (KIND_SWAP, SIT_OTHER, 0) : agg_remaining_swap_op();
        }
        default_action = NoAction();
        size = 16;
    }

    // Where each lane pair's table goes (bf-p4c's @stage; p4sim ignores it): stage 7 has
    // agg_remaining and three pairs, then four a stage (a stage has 4 stateful ALUs). The placer
    // left to itself finishes the forwarding block (stages 9-11) before coming back to the lanes.
#define INA_LANE_STAGE_0 7
#define INA_LANE_STAGE_1 7
#define INA_LANE_STAGE_2 7
#define INA_LANE_STAGE_3 8
#define INA_LANE_STAGE_4 8
#define INA_LANE_STAGE_5 8
#define INA_LANE_STAGE_6 8
#define INA_LANE_STAGE_7 9
#define INA_LANE_STAGE_8 9
#define INA_LANE_STAGE_9 9
#define INA_LANE_STAGE_10 9
#define INA_LANE_STAGE_11 10
#define INA_LANE_STAGE_12 10
#define INA_LANE_STAGE_13 10
#define INA_LANE_STAGE_14 10
#define INA_LANE_STAGE_15 11

// K lanes in K/2 paired registers (as SwitchML): register lane_j holds lane j in `lo` and lane
    // K/2 + j in `hi`, one stateful ALU adds both. A Tofino 1 stateful ALU outputs one 32-bit
    // word per access, so a pair is read out in two passes: the add outputs the new `hi` sum
    // (the packet that completes the aggregate carries the high lanes out of its first pass) and
    // a drain or swap exchanges `hi` in its resubmitted pass; the recirculated pass after either
    // exchanges `lo` (exchange_lo). The add saturates but is not sticky (sticking at both bounds
    // takes two comparisons per lane, and the ALU has two for the pair): hosts keep every sum
    // within int32, so only a faulty job saturates, and a lane that saturated and came back in
    // range leaves unflagged (docs/protocol.md, OVERFLOW). A free aggregator's lanes are not
    // cleared: a claim overwrites both halves, and nothing adds to an unclaimed aggregator.
#define LANE_PAIR(j, h)                                                                \
    Register<ina_lane_pair_t, bit<32>>(INA_POOL_SIZE) lane_##j;                        \
    RegisterAction<ina_lane_pair_t, bit<32>, int<32>>(lane_##j) lane_##j##_claim = {   \
        void apply(inout ina_lane_pair_t value) {                                      \
            value.lo = hdr.lanes.v##j;                                                 \
            value.hi = hdr.lanes.v##h;                                                 \
        }                                                                              \
    };                                                                                 \
    RegisterAction<ina_lane_pair_t, bit<32>, int<32>>(lane_##j) lane_##j##_add = {     \
        void apply(inout ina_lane_pair_t value, out int<32> rv) {                      \
            value.lo = value.lo |+| hdr.lanes.v##j;                                    \
            value.hi = value.hi |+| hdr.lanes.v##h;                                    \
            rv = value.hi;                                                             \
        }                                                                              \
    };                                                                                 \
    RegisterAction<ina_lane_pair_t, bit<32>, int<32>>(lane_##j) lane_##j##_exchange_lo = { \
        void apply(inout ina_lane_pair_t value, out int<32> rv) {                      \
            rv = value.lo;                                                             \
            value.lo = hdr.lanes.v##j;                                                 \
        }                                                                              \
    };                                                                                 \
    RegisterAction<ina_lane_pair_t, bit<32>, int<32>>(lane_##j) lane_##j##_exchange_hi = { \
        void apply(inout ina_lane_pair_t value, out int<32> rv) {                      \
            rv = value.hi;                                                             \
            value.hi = hdr.lanes.v##h;                                                 \
        }                                                                              \
    };                                                                                 \
    action lane_##j##_claim_op()       { lane_##j##_claim.execute(meta.agg_index); }  \
    action lane_##j##_add_op()         { hdr.lanes.v##h = lane_##j##_add.execute(meta.agg_index); } \
    action lane_##j##_exchange_lo_op() { hdr.lanes.v##j = lane_##j##_exchange_lo.execute(meta.agg_index); } \
    action lane_##j##_exchange_hi_op() { hdr.lanes.v##h = lane_##j##_exchange_hi.execute(meta.agg_index); } \
    @stage(INA_LANE_STAGE_##j)                                                         \
    table lane_##j##_op {                                                              \
        key = {                                                                        \
            meta.kind      : exact;                                                    \
            meta.situation : exact;                                                    \
            meta.dup_bits  : exact;                                                    \
        }                                                                              \
        actions = { lane_##j##_claim_op; lane_##j##_add_op; lane_##j##_exchange_lo_op; \
                    lane_##j##_exchange_hi_op; NoAction; }                             \
        const entries = {                                                              \
            (KIND_FRAGMENT, SIT_CLAIM, 0) : lane_##j##_claim_op();                     \
            (KIND_FRAGMENT, SIT_NEWER, 0) : lane_##j##_claim_op();                     \
            (KIND_FRAGMENT, SIT_SAME, 0)  : lane_##j##_add_op();                       \
            (KIND_TAKE, SIT_OTHER, 0)      : lane_##j##_exchange_lo_op();              \
            (KIND_TAKE_HOLD, SIT_OTHER, 0) : lane_##j##_exchange_lo_op();              \
            (KIND_READ_LO, SIT_OTHER, 0)   : lane_##j##_exchange_lo_op();              \
            (KIND_DRAIN, SIT_OTHER, 0)     : lane_##j##_exchange_hi_op();              \
            (KIND_SWAP, SIT_OTHER, 0)      : lane_##j##_exchange_hi_op();              \
        }                                                                              \
        default_action = NoAction();                                                   \
        size = 8;                                                                      \
    }
#define LANE_PAIR_APPLY(j, h) lane_##j##_op.apply();

    // ---- stage 8: the verdict, from the registers' answers: one table for a fragment's first
    // pass and one for everything else (a chain of ifs would spend a logical table per action
    // call and push the lanes out of the pipeline)
    // ina_level's answer (looked up early into metadata): a complete aggregate or a collided
    // fragment moves to the next node (to_node) or, complete at the last level, becomes a
    // result (RESULT; a multicast group if one was chosen).
    action level_up() {
        hdr.ina.node_id = meta.next_node;
        hdr.ina.fan_in = meta.next_fan_in;
    }
    // A packet the aggregator keeps or refuses is dropped by the action that says so.
    action absorb() {
        meta.verdict = INA_ABSORB;
        ig_dprsr_md.drop_ctl = 1;
    }
    action duplicate() {
        meta.verdict = INA_DUPLICATE;
        ig_dprsr_md.drop_ctl = 1;
    }
    action collide() {
        hdr.ina.flags[1:1] = 1;            // INA_FLAG_COLLISION
        hdr.ina.node_id = meta.next_node;
        hdr.ina.fan_in = meta.next_fan_in;
    }
    // An aggregate (also one that arrived complete) carries worker 255, and it never collided
    // here, whatever a fragment of it met below: COLLISION cleared, RESULT at the last level
    // (one two-bit write); nor is it a worker's retry (RETRY cleared: a result flagged RETRY
    // would be a kept result's answer, which this program never sends).
    action complete() {
        meta.verdict = INA_COMPLETE;
        hdr.ina.node_id = meta.next_node;
        hdr.ina.fan_in = meta.next_fan_in;
        hdr.ina.worker_id = INA_WORKER_AGGREGATE;
        hdr.ina.flags[1:0] = meta.result_flag[1:0];   // COLLISION, RESULT
        hdr.ina.flags[7:7] = 0;                       // RETRY
        meta.mcast_group = meta.result_group;
    }
    action resubmit(bit<8> op) {
        meta.verdict = INA_RESUBMIT;
        meta.resubmit.op = op;
    }
    // the next pass needs the packet as this one rewrote it (the lanes read out so far)
    action recirculate(bit<8> op) {
        meta.verdict = INA_RECIRCULATE;
        meta.recirc_out.op = op;
    }
    // a duplicate that brought bits the aggregator lacked: the second pass keeps all others
    // (seen | ~bitmap == ~(bitmap & ~seen) == ~new_bits)
    action resubmit_unmerge() {
        meta.verdict = INA_RESUBMIT;
        meta.resubmit.op = INA_OP_UNMERGE;
        meta.resubmit.keep_bits = ~meta.new_bits;
    }
    // ESA's downgrade: the holder's priority is halved, written by the second pass, which also
    // sends the packet on flagged COLLISION
    action resubmit_downgrade() {
        meta.verdict = INA_RESUBMIT;
        meta.resubmit.op = INA_OP_DOWNGRADE;
        meta.resubmit.prio_seen = meta.held;
        meta.resubmit.prio_next = meta.held >> 1;
    }
    // second pass of a completion: the aggregate leaves as ina_level says
    action take_out() {
        hdr.ina.bitmap = meta.taken_bitmap;
        hdr.ina.worker_id = INA_WORKER_AGGREGATE;
        hdr.ina.count = hdr.ina.fan_in;
        complete();
    }
    // A partial read out of the aggregator (a drained or swapped-out one) travels to its
    // owner's PS as an aggregate flagged PREEMPTED; the evicted partial never collided, so a
    // swap clears COLLISION (it stays with the arriving packet).
    action drain_out() {
        hdr.ina.bitmap = meta.taken_bitmap;
        hdr.ina.priority = meta.taken_priority;      // the drained partial is its owner's
        hdr.ipv4.dst_addr = meta.taken_ps_addr;
        hdr.ina.worker_id = INA_WORKER_AGGREGATE;
        hdr.ina.count = meta.taken_fan_in - meta.taken_remaining;
        hdr.ina.fan_in = meta.taken_fan_in;
        hdr.ina.flags[2:2] = 1;                      // INA_FLAG_PREEMPTED
        recirculate(INA_OP_READ_LO);                 // this pass read the high lanes
    }
    // ... and a collided reminder then moves on to the next node
    action drain_out_level_up() {
        hdr.ina.bitmap = meta.taken_bitmap;
        hdr.ina.priority = meta.taken_priority;
        hdr.ipv4.dst_addr = meta.taken_ps_addr;
        hdr.ina.worker_id = INA_WORKER_AGGREGATE;
        hdr.ina.count = meta.taken_fan_in - meta.taken_remaining;
        hdr.ina.flags[2:2] = 1;
        level_up();
        recirculate(INA_OP_READ_LO);
    }
    // fragment, round, priority, bitmap and PS address were exchanged into the header by
    // their registers
    action swap_out() {
        hdr.ina.job_id = meta.old_hi[31:16];
        hdr.ina.submodel_id = meta.old_hi[15:0];
        hdr.ina.worker_id = INA_WORKER_AGGREGATE;
        hdr.ina.count = meta.taken_fan_in - meta.taken_remaining;
        hdr.ina.fan_in = meta.taken_fan_in;
        hdr.ina.flags[2:1] = 0b10;                   // PREEMPTED set, COLLISION cleared
        recirculate(INA_OP_READ_LO);                 // the arriving packet's low lanes go in then
    }
    // new_bits = bitmap & ~seen (seen & bitmap == dup_bits), for the duplicate test
    action note_new_bits() {
        meta.new_bits = hdr.ina.bitmap ^ meta.dup_bits;
    }
    table ina_new_bits {
        key = {
            meta.kind      : exact;
            meta.situation : exact;
        }
        actions = { note_new_bits; NoAction; }
        const entries = {
            (KIND_FRAGMENT, SIT_SAME) : note_new_bits();
        }
        default_action = NoAction();
        size = 4;
    }
    // first match wins
    table ina_fragment_verdict {
        key = {
            meta.situation   : ternary;
            meta.dup_bits    : ternary;      // 0: none of the packet's workers was in yet
            meta.new_bits    : ternary;      // 0: all of them were (a pure duplicate)
            meta.done        : ternary;
            meta.held        : ternary;      // 0: the contest was won (or the holder has priority 0)
            hdr.ina.priority : ternary;
            meta.preemption  : ternary;
        }
        actions = { absorb; duplicate; resubmit; recirculate; resubmit_unmerge; resubmit_downgrade;
                    collide; }
        const entries = {
            (SIT_OLDER, _, _, _, _, _, _) : duplicate();        // from a finished round
            (SIT_CLAIM, _, _, _, _, _, _) : absorb();
            (SIT_NEWER, _, _, _, _, _, _) : absorb();           // reclaimed a stale partial
            (SIT_SAME, 0, _, 1, _, _, _)  : recirculate(INA_OP_TAKE);   // the add put out the high sums
            (SIT_SAME, 0, _, _, _, _, _)  : absorb();
            (SIT_SAME, _, 0, _, _, _, _)  : duplicate();
            (SIT_SAME, _, _, _, _, _, _)  : resubmit_unmerge();
            (SIT_OTHER, _, _, _, 0, 0, 1) : collide();          // priority 0 never wins
            (SIT_OTHER, _, _, _, 0, _, 1) : resubmit(INA_OP_SWAP);
            (SIT_OTHER, _, _, _, 0xFF, _, 1) : collide();       // a held aggregator: never downgraded
            (SIT_OTHER, _, _, _, _, _, 1) : resubmit_downgrade();
            (SIT_OTHER, _, _, _, _, _, _) : collide();          // first come, first served
        }
        size = 16;
    }
    table ina_pass_verdict {
        key = {
            meta.kind         : exact;
            meta.situation    : ternary;
            meta.releasing    : ternary;
            hdr.ina.flags     : ternary;     // COLLISION
            meta.taken_bitmap : ternary;     // all ones: a held, already complete aggregate
        }
        actions = { complete; resubmit; level_up; collide; duplicate; take_out; drain_out;
                    drain_out_level_up; swap_out; NoAction; }
        const entries = {
            (KIND_COMPLETE, _, _, _, _)      : complete();      // it arrived complete
            (KIND_LOOKUP, SIT_OWNED, 1, _, _) : resubmit(INA_OP_RELEASE);
            (KIND_LOOKUP, SIT_OWNED, _, _, _) : resubmit(INA_OP_DRAIN);
            // a collided reminder that found nothing here moves on
            (KIND_LOOKUP, _, 0, INA_FLAG_COLLISION &&& INA_FLAG_COLLISION, _) : level_up();
            (KIND_DOWNGRADE, _, _, _, _)     : collide();
            (KIND_UNMERGE, _, _, _, _)       : duplicate();
            (KIND_TAKE, _, _, _, _)          : take_out();
            (KIND_TAKE_HOLD, _, _, _, _)     : take_out();
            // a reminder that met a held, already complete aggregator only freed it
            (KIND_DRAIN, _, _, INA_FLAG_COLLISION &&& INA_FLAG_COLLISION, 0xFFFFFFFF) : level_up();
            (KIND_DRAIN, _, _, _, 0xFFFFFFFF) : NoAction();
            (KIND_DRAIN, _, _, INA_FLAG_COLLISION &&& INA_FLAG_COLLISION, _) : drain_out_level_up();
            (KIND_DRAIN, _, _, _, _)         : drain_out();
            (KIND_SWAP, _, _, _, _)          : swap_out();
        }
        default_action = NoAction();
        size = 16;
    }

    // One flat sequence, every table keyed on the pass's kind (KIND_NONE, from the parser,
    // matches nothing): a gateway around the registers would make everything after it in
    // the ingress (forwarding) wait for the last lane, since bf-p4c orders a gated block as a
    // whole; flat, forwarding only waits for the verdict and the lanes fill the stages beside it.
    apply {
        count_missing();
        if (meta.recirculated == 1) {
            recirculated_agg_index();
        } else {
            compute_agg_index();
        }
        if (meta.job_known == 1 || meta.recirculated == 1) {
            ina_pass_kind.apply();
        }
        owner_hi_op.apply();
        owner_lo_op.apply();
        agg_round_op.apply();
        agg_priority_op.apply();
        agg_bitmap_op.apply();
        agg_fan_in_op.apply();
        agg_ps_addr_op.apply();
        agg_remaining_op.apply();
        ina_new_bits.apply();
        if (meta.kind == KIND_FRAGMENT) {
            ina_fragment_verdict.apply();
        } else {
            ina_pass_verdict.apply();
        }
    }
}

// The lanes: one register and one table each, applied after forwarding so that forwarding
// (which waits for the verdict) and the lanes (which wait only for the duplicate test) share
// the last stages.
control InaLanes(inout ina_headers_t hdr, inout ina_ig_metadata_t meta) {
    INA_FOR_EACH_LANE_PAIR(LANE_PAIR)
    apply {
        INA_FOR_EACH_LANE_PAIR(LANE_PAIR_APPLY)
    }
}

#endif
