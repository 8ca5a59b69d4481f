// The aggregator pool for Tofino (TNA): same protocol as the v1model program, written for one
// stateful-ALU access per register per pass. First pass: claim / match / merge / add / contest.
// Whatever must read state out (a complete aggregate, a preempted partial, a reminder's drain,
// a release) resubmits the packet and does it in a second pass with "exchange" actions.
#ifndef _INA_TNA_AGGREGATOR_P4_
#define _INA_TNA_AGGREGATOR_P4_

const bit<8> OWNER_OTHER   = 0;
const bit<8> OWNER_CLAIMED = 1;
const bit<8> OWNER_MATCH   = 2;

const bit<8> ROUND_SAME    = 0;
const bit<8> ROUND_NEWER   = 1;   // the packet's round is newer: the aggregator's partial is stale
const bit<8> ROUND_OLDER   = 2;   // the packet is from a finished round

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

// The aggregator index, the way Tofino computes it: the hash unit writes its own field, the
// mask and the base are applied by later actions, and every register is indexed by the plain
// field agg_index (bf-p4c refuses a hash or an expression as a register index). Applied for
// every INA packet before the job lookup gates the aggregator, so the chain starts early.
control InaAggIndex(inout ina_headers_t hdr, inout ina_ig_metadata_t meta) {
    Hash<bit<32>>(HashAlgorithm_t.CRC32) agg_hash;

    action compute_agg_hash() {
        meta.agg_hash = agg_hash.get({ hdr.ina.job_id, meta.agg_node, hdr.ina.submodel_id,
                                       hdr.ina.fragment_id });
        meta.key_hi = hdr.ina.job_id ++ hdr.ina.submodel_id;
        meta.key_lo = hdr.ina.fragment_id;
    }
    action compute_agg_offset() {
        meta.agg_offset = meta.agg_hash & meta.pool_mask;
    }
    action compute_agg_index() {
        meta.agg_index = meta.pool_base + meta.agg_offset;
    }

    apply {
        compute_agg_hash();
        compute_agg_offset();
        compute_agg_index();
    }
}

control InaAggregator(inout ina_headers_t hdr, inout ina_ig_metadata_t meta,
                      inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    // owner key, high word (job ++ submodel; 0 = free) and low word (fragment)
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
    EXCHANGE_REGISTER(bit<32>, owner_lo, meta.key_lo, 0)
    RegisterAction<bit<32>, bit<32>, bit<8>>(owner_lo) owner_lo_match = {
        void apply(inout bit<32> value, out bit<8> rv) {
            if (value == meta.key_lo) { rv = OWNER_MATCH; } else { rv = OWNER_OTHER; }
        }
    };
    // the owner's round; a later round's packet of the same key reclaims a stale partial
    EXCHANGE_REGISTER(bit<32>, agg_round, hdr.ina.round, 0)
    RegisterAction<bit<32>, bit<32>, bit<8>>(agg_round) agg_round_check = {
        void apply(inout bit<32> value, out bit<8> rv) {
            if (value == hdr.ina.round) {
                rv = ROUND_SAME;
            } else if (value < hdr.ina.round) {
                value = hdr.ina.round;
                rv = ROUND_NEWER;
            } else {
                rv = ROUND_OLDER;
            }
        }
    };
    RegisterAction<bit<32>, bit<32>, bit<8>>(agg_round) agg_round_match = {
        void apply(inout bit<32> value, out bit<8> rv) {
            if (value == hdr.ina.round) { rv = OWNER_MATCH; } else { rv = OWNER_OTHER; }
        }
    };
    // A stateful ALU reads at most two PHV fields over all its actions (bf-p4c: "requires more
    // than 2 PHV inputs"), so priority and bitmap each read one input field that the pass fills
    // early: prio_in / bitmap_in (InaAggregator.apply, before any register), plus prio_seen.
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
    EXCHANGE_REGISTER(bit<32>, agg_bitmap, meta.bitmap_in, meta.bitmap_in)
    // The stateful ALU cannot test (value & bitmap) before writing, so the merge is
    // unconditional; a duplicate that brought new bits (a partial overlapping the aggregator)
    // has them cleared again by a resubmitted pass (agg_bitmap_keep), so a dropped packet
    // leaves the aggregator as it was.
    // It returns the overlap (old bitmap & the packet's) computed by the word's second ALU, so
    // the duplicate test is a gateway right after this stage.
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
    // contributions still missing (fan_in - count): 0 when complete or free
    EXCHANGE_REGISTER(bit<8>, agg_remaining, meta.missing, 0)
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
    EXCHANGE_REGISTER(bit<8>, agg_fan_in, hdr.ina.fan_in, 0)
    EXCHANGE_REGISTER(bit<32>, agg_ps_addr, hdr.ipv4.dst_addr, 0)

    // K lanes: one register each, with exchange (claim/swap), saturating add and take. The add
    // is sticky at the bounds: a lane that saturated stays saturated, so a later addition
    // cannot bring it back into range unflagged (egress flags aggregates with a lane at a bound).
#define LANE_STATE(i)                                                                  \
    Register<int<32>, bit<32>>(INA_POOL_SIZE) lane_##i;                                \
    RegisterAction<int<32>, bit<32>, int<32>>(lane_##i) lane_##i##_exchange = {        \
        void apply(inout int<32> value, out int<32> rv) { rv = value; value = hdr.lanes.v##i; } \
    };                                                                                 \
    RegisterAction<int<32>, bit<32>, int<32>>(lane_##i) lane_##i##_add = {             \
        void apply(inout int<32> value) {                                              \
            if (value != 0x7fffffff && value != -0x7fffffff - 1) {                     \
                value = value |+| hdr.lanes.v##i;                                      \
            }                                                                          \
        }                                                                              \
    };                                                                                 \
    RegisterAction<int<32>, bit<32>, int<32>>(lane_##i) lane_##i##_take = {            \
        void apply(inout int<32> value, out int<32> rv) { rv = value; value = 0; }     \
    };
    INA_FOR_EACH_LANE(LANE_STATE)

    // One action per lane and operation: a Tofino action drives at most one stateful ALU
    // output, and each lane's register sits in whichever stage the compiler places it.
#define LANE_ACTIONS(i)                                                                \
    action lane_##i##_exchange_op() { hdr.lanes.v##i = lane_##i##_exchange.execute(meta.agg_index); } \
    action lane_##i##_add_op()      { lane_##i##_add.execute(meta.agg_index); }     \
    action lane_##i##_take_op()     { hdr.lanes.v##i = lane_##i##_take.execute(meta.agg_index); }
    INA_FOR_EACH_LANE(LANE_ACTIONS)
#define LANE_EXCHANGE(i) lane_##i##_exchange_op();
#define LANE_ADD(i)      lane_##i##_add_op();
#define LANE_TAKE(i)     lane_##i##_take_op();

    // ina_level's answer (looked up early into metadata): a complete aggregate or a collided
    // fragment moves to the next node (to_node) or, complete at the last level, becomes a
    // result (RESULT; a multicast group if one was chosen).
    action level_up() {
        hdr.ina.node_id = meta.next_node;
        hdr.ina.fan_in = meta.next_fan_in;
    }
    // A packet the aggregator keeps or refuses is dropped by the action that says so (a later
    // table testing the verdict would cost a stage on the longest chain).
    action absorb() {
        meta.verdict = INA_ABSORB;
        ig_dprsr_md.drop_ctl = 1;
    }
    action duplicate() {
        meta.verdict = INA_DUPLICATE;
        ig_dprsr_md.drop_ctl = 1;
    }
    action clear_collision() {
        hdr.ina.flags[1:1] = 0;            // INA_FLAG_COLLISION
    }
    action collide() {
        hdr.ina.flags = hdr.ina.flags | INA_FLAG_COLLISION;
        hdr.ina.node_id = meta.next_node;
        hdr.ina.fan_in = meta.next_fan_in;
    }
    action level_up_complete() {
        hdr.ina.node_id = meta.next_node;
        hdr.ina.fan_in = meta.next_fan_in;
        hdr.ina.flags = hdr.ina.flags | meta.result_flag;
        meta.mcast_group = meta.result_group;
    }

    // count >= fan_in as a test against a constant (gateways cannot order two fields)
    action count_missing() {
        meta.missing = hdr.ina.fan_in |-| hdr.ina.count;
    }

    // What the priority and bitmap registers store or compare in this pass (one input field
    // each). ATP's hold keeps a completed aggregator's key with priority 255 (no preemption)
    // and an all-ones bitmap (every copy a duplicate) until the result returns.
    action register_inputs(bit<8> priority, bit<32> bitmap) {
        meta.prio_in = priority;
        meta.bitmap_in = bitmap;
    }
    action packet_inputs() {
        meta.prio_in = hdr.ina.priority;
        meta.bitmap_in = hdr.ina.bitmap;
    }
    action downgrade_inputs() {
        meta.prio_in = meta.resubmit.prio_next;
    }
    action unmerge_inputs() {
        meta.bitmap_in = meta.resubmit.keep_bits;
    }

    apply {
        count_missing();
        if (meta.op == INA_OP_TAKE && meta.hold == 1) {
            register_inputs(0xFF, 0xFFFFFFFF);
        } else if (meta.op == INA_OP_TAKE || meta.op == INA_OP_DRAIN || meta.op == INA_OP_RELEASE) {
            register_inputs(0, 0);
        } else if (meta.op == INA_OP_DOWNGRADE) {
            downgrade_inputs();
        } else if (meta.op == INA_OP_UNMERGE) {
            unmerge_inputs();
        } else {
            packet_inputs();
        }
        // One if/else chain, no early return: bf-p4c turns every return into a gateway on a
        // "returned" flag that the rest waits for, a stage each on the longest chain.
        if (meta.op == INA_OP_NONE && meta.releasing == 0 && meta.missing == 0
                && (hdr.ina.flags & INA_FLAG_REMINDER) == 0) {
            meta.verdict = INA_COMPLETE;                // it arrived complete
            level_up_complete();
        } else if (meta.op == INA_OP_NONE
                   && (meta.releasing == 1 || (hdr.ina.flags & INA_FLAG_REMINDER) != 0)) {
            // a returning result (ATP hold) or a reminder: does it own this aggregator?
            bit<1> owned = 0;
            if (owner_hi_match.execute(meta.agg_index) == OWNER_MATCH) {
                if (owner_lo_match.execute(meta.agg_index) == OWNER_MATCH
                        && agg_round_match.execute(meta.agg_index) == OWNER_MATCH) {
                    owned = 1;
                }
            }
            if (owned == 1) {
                meta.verdict = INA_RESUBMIT;
                if (meta.releasing == 1) {
                    meta.resubmit.op = INA_OP_RELEASE;
                } else {
                    meta.resubmit.op = INA_OP_DRAIN;
                }
            } else if (meta.releasing == 0 && (hdr.ina.flags & INA_FLAG_COLLISION) != 0) {
                level_up();                     // a collided reminder that found nothing here
            }
        } else if (meta.op == INA_OP_NONE) {
            bit<8> owner = owner_hi_claim_or_match.execute(meta.agg_index);
            bit<8> age = ROUND_SAME;
            if (owner == OWNER_CLAIMED) {
                owner_lo_swap.execute(meta.agg_index);
                agg_round_swap.execute(meta.agg_index);
            } else if (owner == OWNER_MATCH) {
                if (owner_lo_match.execute(meta.agg_index) == OWNER_MATCH) {
                    age = agg_round_check.execute(meta.agg_index);
                } else {
                    owner = OWNER_OTHER;
                }
            }
            if (owner == OWNER_MATCH && age == ROUND_OLDER) {
                duplicate();                            // from a finished round: never aggregated
            } else if (owner == OWNER_CLAIMED || age == ROUND_NEWER) {
                // A later round's packet of the same key reclaims a stale partial (a worker
                // starts round r+1 only once every result of round r is in) exactly as a free
                // aggregator is claimed: the stale state is overwritten, never read out.
                agg_priority_swap.execute(meta.agg_index);
                agg_bitmap_swap.execute(meta.agg_index);
                agg_remaining_swap.execute(meta.agg_index);   // fan_in - count
                agg_fan_in_swap.execute(meta.agg_index);
                agg_ps_addr_swap.execute(meta.agg_index);
                INA_FOR_EACH_LANE(LANE_EXCHANGE)
                absorb();
            } else if (owner == OWNER_MATCH) {
                meta.dup_bits = agg_bitmap_merge.execute(meta.agg_index);   // seen & bitmap
                if (meta.dup_bits != 0) {
                    if (meta.dup_bits != hdr.ina.bitmap) {
                        // a duplicate that brought bits the aggregator lacked: take them out
                        // again (seen | ~bitmap == (seen & bitmap) | ~bitmap)
                        meta.verdict = INA_RESUBMIT;
                        meta.resubmit.op = INA_OP_UNMERGE;
                        meta.resubmit.keep_bits = meta.dup_bits | ~hdr.ina.bitmap;
                    } else {
                        duplicate();
                    }
                } else {
                    bit<8> done = agg_remaining_consume.execute(meta.agg_index);
                    INA_FOR_EACH_LANE(LANE_ADD)
                    if (done == 1) {
                        meta.verdict = INA_RESUBMIT;
                        meta.resubmit.op = INA_OP_TAKE;
                    } else {
                        absorb();
                    }
                }
            } else if (meta.preemption == 1) {
                // collision with another key
                bit<8> held = agg_priority_contest.execute(meta.agg_index);   // 0: a win
                if (held == 0 && hdr.ina.priority != 0) {
                    meta.verdict = INA_RESUBMIT;
                    meta.resubmit.op = INA_OP_SWAP;
                } else if (held != 0) {
                    // ESA's downgrade: the holder's priority is halved, written by the second
                    // pass, which also sends the packet on flagged COLLISION (0 stays 0: no pass)
                    meta.verdict = INA_RESUBMIT;
                    meta.resubmit.op = INA_OP_DOWNGRADE;
                    meta.resubmit.prio_seen = held;
                    meta.resubmit.prio_next = held >> 1;
                } else {
                    collide();
                }
            } else {
                collide();                              // first come, first served
            }
        // ---- second pass (resubmitted) ----
        } else if (meta.op == INA_OP_DOWNGRADE) {
            agg_priority_downgrade.execute(meta.agg_index);
            collide();
        } else if (meta.op == INA_OP_UNMERGE) {
            agg_bitmap_keep.execute(meta.agg_index);
            duplicate();
        } else if (meta.op == INA_OP_TAKE || meta.op == INA_OP_DRAIN) {
            // ATP's hold (a TAKE of a hold job) keeps the key; everything else frees it
            if (meta.op == INA_OP_DRAIN || meta.hold == 0) {
                owner_hi_take.execute(meta.agg_index);
                owner_lo_take.execute(meta.agg_index);
                agg_round_take.execute(meta.agg_index);
            }
            bit<8> priority = agg_priority_take.execute(meta.agg_index);
            bit<32> bitmap = agg_bitmap_take.execute(meta.agg_index);
            bit<8> remaining = agg_remaining_take.execute(meta.agg_index);
            bit<8> fan_in = agg_fan_in_take.execute(meta.agg_index);
            bit<32> ps_addr = agg_ps_addr_take.execute(meta.agg_index);
            INA_FOR_EACH_LANE(LANE_TAKE)
            if (meta.op == INA_OP_TAKE) {
                hdr.ina.bitmap = bitmap;
                hdr.ina.worker_id = INA_WORKER_AGGREGATE;
                hdr.ina.count = hdr.ina.fan_in;
                meta.verdict = INA_COMPLETE;
                level_up_complete();
            } else if (bitmap != 0xFFFFFFFF) {
                hdr.ina.bitmap = bitmap;
                hdr.ina.worker_id = INA_WORKER_AGGREGATE;
                hdr.ina.count = fan_in - remaining;
                hdr.ina.fan_in = fan_in;
                hdr.ina.priority = priority;            // the drained partial is its owner's
                hdr.ipv4.dst_addr = ps_addr;
                hdr.ina.flags = hdr.ina.flags | INA_FLAG_PREEMPTED;
            }
            // (a reminder that met a held, already complete aggregator only freed it)
            if (meta.op == INA_OP_DRAIN && (hdr.ina.flags & INA_FLAG_COLLISION) != 0) {
                level_up();
            }
        } else if (meta.op == INA_OP_SWAP) {
            // the evicted partial never collided: a COLLISION flag stays with the arriving
            // packet (cleared first, in an action of its own)
            clear_collision();
            bit<32> old_hi = owner_hi_swap.execute(meta.agg_index);
            hdr.ina.fragment_id = owner_lo_swap.execute(meta.agg_index);
            hdr.ina.round = agg_round_swap.execute(meta.agg_index);
            hdr.ina.priority = agg_priority_swap.execute(meta.agg_index);
            hdr.ina.bitmap = agg_bitmap_swap.execute(meta.agg_index);
            bit<8> remaining = agg_remaining_swap.execute(meta.agg_index);   // stores fan_in - count
            bit<8> fan_in = agg_fan_in_swap.execute(meta.agg_index);
            hdr.ipv4.dst_addr = agg_ps_addr_swap.execute(meta.agg_index);
            INA_FOR_EACH_LANE(LANE_EXCHANGE)
            hdr.ina.job_id = old_hi[31:16];
            hdr.ina.submodel_id = old_hi[15:0];
            hdr.ina.count = fan_in - remaining;
            hdr.ina.fan_in = fan_in;
            hdr.ina.worker_id = INA_WORKER_AGGREGATE;
            hdr.ina.flags = hdr.ina.flags | INA_FLAG_PREEMPTED;
        } else if (meta.op == INA_OP_RELEASE) {
            owner_hi_take.execute(meta.agg_index);
            owner_lo_take.execute(meta.agg_index);
            agg_round_take.execute(meta.agg_index);
            agg_priority_take.execute(meta.agg_index);
            agg_bitmap_take.execute(meta.agg_index);
            agg_remaining_take.execute(meta.agg_index);
            agg_fan_in_take.execute(meta.agg_index);
        }
    }
}

#endif
