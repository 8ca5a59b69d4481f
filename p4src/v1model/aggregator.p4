// The aggregator pool: ATP's hashed pool with job isolation, GOAT's per-node keys and ESA's
// priority preemption by packet swapping (docs/protocol.md, "Switch behaviour").
#ifndef _INA_V1MODEL_AGGREGATOR_P4_
#define _INA_V1MODEL_AGGREGATOR_P4_

control InaAggregator(inout ina_headers_t hdr, inout ina_metadata_t meta) {
    register<bit<80>, bit<32>>(INA_POOL_SIZE) agg_owner;     // job ++ node ++ submodel ++ fragment
    register<bit<32>, bit<32>>(INA_POOL_SIZE) agg_bitmap;
    register<bit<8>, bit<32>>(INA_POOL_SIZE) agg_count;
    register<bit<8>, bit<32>>(INA_POOL_SIZE) agg_fan_in;
    register<bit<8>, bit<32>>(INA_POOL_SIZE) agg_priority;
    register<bit<32>, bit<32>>(INA_POOL_SIZE) agg_ps_addr;
    register<bit<1>, bit<32>>(INA_POOL_SIZE) agg_overflow;
    register<bit<32>, bit<32>>(INA_POOL_SIZE) agg_round;      // the owner's round
    // The sums are int<32>, stored as bit<32> and cast on the way in and out: bmv2 reads a
    // negative int<32> register cell into a signed field as its unsigned value (2^32 - 1 for -1),
    // so arithmetic on it saturated and flagged OVERFLOW on every result (found running
    // --switch bmv2); a bit<32> read cast with (int<32>) is exact on bmv2 and p4sim alike.
    register<bit<32>, bit<32>>(INA_POOL_SIZE * INA_LANES) agg_lanes;

    bit<32> lane_base;
    bit<32> old_bits;
    int<32> old_value;
    int<32> sum;
    bit<1>  overflow;
    bit<1>  packet_overflow;      // the arriving packet's OVERFLOW: a partial that saturated below

    // Per-lane operations, expanded over all K lanes by INA_FOR_EACH_LANE.
#define LANE_ADD(i)                                                        \
    agg_lanes.read(old_bits, lane_base + i);                               \
    old_value = (int<32>) old_bits;                                        \
    sum = old_value |+| hdr.lanes.v##i;                                    \
    if (sum != old_value + hdr.lanes.v##i) { overflow = 1; }               \
    agg_lanes.write(lane_base + i, (bit<32>) sum);
#define LANE_ADD_AND_TAKE(i)                                               \
    agg_lanes.read(old_bits, lane_base + i);                               \
    old_value = (int<32>) old_bits;                                        \
    sum = old_value |+| hdr.lanes.v##i;                                    \
    if (sum != old_value + hdr.lanes.v##i) { overflow = 1; }               \
    agg_lanes.write(lane_base + i, 0);                                     \
    hdr.lanes.v##i = sum;
#define LANE_SWAP(i)                                                       \
    agg_lanes.read(old_bits, lane_base + i);                               \
    agg_lanes.write(lane_base + i, (bit<32>) hdr.lanes.v##i);              \
    hdr.lanes.v##i = (int<32>) old_bits;
#define LANE_DRAIN(i)                                                      \
    agg_lanes.read(old_bits, lane_base + i);                               \
    agg_lanes.write(lane_base + i, 0);                                     \
    hdr.lanes.v##i = (int<32>) old_bits;

#define LANE_ADD_AND_KEEP(i)                                               \
    agg_lanes.read(old_bits, lane_base + i);                               \
    old_value = (int<32>) old_bits;                                        \
    sum = old_value |+| hdr.lanes.v##i;                                    \
    if (sum != old_value + hdr.lanes.v##i) { overflow = 1; }               \
    agg_lanes.write(lane_base + i, (bit<32>) sum);                         \
    hdr.lanes.v##i = sum;
#define LANE_READ(i)                                                       \
    agg_lanes.read(old_bits, lane_base + i);                               \
    hdr.lanes.v##i = (int<32>) old_bits;

    action lanes_add()          { INA_FOR_EACH_LANE(LANE_ADD) }
    action lanes_add_and_keep() { INA_FOR_EACH_LANE(LANE_ADD_AND_KEEP) }
    action lanes_read()         { INA_FOR_EACH_LANE(LANE_READ) }
    action lanes_add_and_take() { INA_FOR_EACH_LANE(LANE_ADD_AND_TAKE) }
    action lanes_swap()         { INA_FOR_EACH_LANE(LANE_SWAP) }
    action lanes_drain()        { INA_FOR_EACH_LANE(LANE_DRAIN) }

    // The aggregator now belongs to the arriving packet's key; the packet takes the previous
    // owner's state (a free aggregator has all-zero state).
    action swap_state(bit<80> key) {
        bit<80> old_owner;
        agg_owner.read(old_owner, meta.agg_index);
        agg_owner.write(meta.agg_index, key);
        bit<32> v32;
        agg_bitmap.read(v32, meta.agg_index);
        agg_bitmap.write(meta.agg_index, hdr.ina.bitmap);
        hdr.ina.bitmap = v32;
        bit<8> v8;
        agg_count.read(v8, meta.agg_index);
        agg_count.write(meta.agg_index, hdr.ina.count);
        hdr.ina.count = v8;
        agg_fan_in.read(v8, meta.agg_index);
        agg_fan_in.write(meta.agg_index, hdr.ina.fan_in);
        hdr.ina.fan_in = v8;
        agg_priority.read(v8, meta.agg_index);
        agg_priority.write(meta.agg_index, hdr.ina.priority);
        hdr.ina.priority = v8;
        agg_ps_addr.read(v32, meta.agg_index);
        agg_ps_addr.write(meta.agg_index, hdr.ipv4.dst_addr);
        hdr.ipv4.dst_addr = v32;
        agg_round.read(v32, meta.agg_index);
        agg_round.write(meta.agg_index, hdr.ina.round);
        hdr.ina.round = v32;
        bit<1> v1;
        agg_overflow.read(v1, meta.agg_index);
        agg_overflow.write(meta.agg_index, packet_overflow);
        hdr.ina.flags = hdr.ina.flags & ~INA_FLAG_OVERFLOW;
        if (v1 == 1) { hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW; }
        hdr.ina.job_id = old_owner[79:64];
        hdr.ina.node_id = old_owner[63:48];
        hdr.ina.submodel_id = old_owner[47:32];
        hdr.ina.fragment_id = old_owner[31:0];
        lanes_swap();
    }

    // Free the aggregator, keeping nothing (its lanes were zeroed by the lane operation).
    action free_aggregator() {
        agg_owner.write(meta.agg_index, 0);
        agg_bitmap.write(meta.agg_index, 0);
        agg_count.write(meta.agg_index, 0);
        agg_fan_in.write(meta.agg_index, 0);
        agg_priority.write(meta.agg_index, 0);
        agg_ps_addr.write(meta.agg_index, 0);
        agg_overflow.write(meta.agg_index, 0);
        agg_round.write(meta.agg_index, 0);
    }

    // ATP: a completed aggregator stays reserved (no one can claim or preempt it, the same key
    // is a duplicate) until the result passes back through this switch.
    action hold_aggregator() {
        agg_bitmap.write(meta.agg_index, 0xFFFFFFFF);
        agg_priority.write(meta.agg_index, 0xFF);
        agg_overflow.write(meta.agg_index, 0);
    }

    apply {
        if (meta.releasing == 0 && hdr.ina.count >= hdr.ina.fan_in
                && (hdr.ina.flags & INA_FLAG_REMINDER) == 0) {
            meta.verdict = INA_COMPLETE;          // nothing to wait for at this node
            return;
        }
        // the sub-model last: a CRC's low bits ignore the low bits of a field 32 bits before the
        // end, so with it before the fragment id a small pool gave every sub-model's fragment i
        // the same aggregator (docs/protocol.md, "Aggregator index")
        hash(meta.agg_index, HashAlgorithm.crc32, meta.pool_base,
             { hdr.ina.job_id, meta.agg_node, hdr.ina.fragment_id, hdr.ina.submodel_id },
             meta.pool_size);
        lane_base = meta.agg_index * INA_LANES;
        overflow = 0;
        packet_overflow = hdr.ina.flags[5:5];     // INA_FLAG_OVERFLOW
        bit<80> key = hdr.ina.job_id ++ meta.agg_node ++ hdr.ina.submodel_id ++ hdr.ina.fragment_id;
        bit<80> owner;
        agg_owner.read(owner, meta.agg_index);
        bit<32> owner_round;
        agg_round.read(owner_round, meta.agg_index);
        bool same_round = owner_round == hdr.ina.round;
        // a kept result (rule 8): complete, yet owned; any claim may take the aggregator
        bit<8> held_count;                         // the owner's count and fan-in
        bit<8> held_fan_in;
        agg_count.read(held_count, meta.agg_index);
        agg_fan_in.read(held_fan_in, meta.agg_index);
        bool kept = owner != 0 && held_fan_in != 0 && held_count >= held_fan_in;

        if (meta.releasing == 1) {
            if (owner == key && same_round) {
                free_aggregator();                 // its lanes were zeroed at completion
            }
            meta.verdict = INA_PASS;
            return;
        }

        if ((hdr.ina.flags & INA_FLAG_REMINDER) != 0) {
            bit<32> held_bitmap;
            agg_bitmap.read(held_bitmap, meta.agg_index);
            if (owner == key && same_round && held_bitmap == 0xFFFFFFFF) {
                // a held (complete) aggregator has nothing to drain: just free it
                free_aggregator();
            } else if (owner == key && same_round) {
                // drain the partial to the owner's PS and free the aggregator; a kept result
                // (rule 8) goes out as a copy and stays for the workers' retries
                bit<1> ovf;
                agg_overflow.read(ovf, meta.agg_index);
                agg_bitmap.read(hdr.ina.bitmap, meta.agg_index);
                agg_count.read(hdr.ina.count, meta.agg_index);
                agg_fan_in.read(hdr.ina.fan_in, meta.agg_index);
                agg_priority.read(hdr.ina.priority, meta.agg_index);
                agg_ps_addr.read(hdr.ipv4.dst_addr, meta.agg_index);
                if (kept) {
                    lanes_read();
                } else {
                    lanes_drain();
                    free_aggregator();
                }
                hdr.ina.flags = hdr.ina.flags | INA_FLAG_PREEMPTED;
                if (ovf == 1) { hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW; }
                hdr.ina.worker_id = INA_WORKER_AGGREGATE;
            }
            meta.verdict = INA_PASS;
            return;
        }

        if (owner == key && !same_round) {
            if (hdr.ina.round < owner_round) {
                meta.verdict = INA_DUPLICATE;      // from a finished round: never aggregated
                return;
            }
            // The aggregator holds a stale partial of a finished round (a worker only starts
            // round r+1 once every result of round r is in): reclaim it; the packet claims it
            // below and the stale state, swapped into the absorbed packet, is dropped with it.
            owner = 0;
        }

        if (owner == key && kept) {
            if ((hdr.ina.flags & INA_FLAG_RETRY) != 0) {
                // a worker lost the result (or its copy of it): answer it with the kept one
                agg_bitmap.read(hdr.ina.bitmap, meta.agg_index);
                hdr.ina.count = held_count;
                hdr.ina.fan_in = held_fan_in;
                bit<1> kept_overflow;
                agg_overflow.read(kept_overflow, meta.agg_index);
                if (kept_overflow == 1) { hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW; }
                lanes_read();
                meta.verdict = INA_RETAINED;
            } else {
                meta.verdict = INA_DUPLICATE;      // its contribution is in the result
            }
            return;
        }
        if (kept) {
            owner = 0;                             // another key claims it: the result is dropped
        }

        if ((hdr.ina.flags & INA_FLAG_RETRY) != 0 && owner != key) {
            // nothing of its key here (the partial moved on or was drained, the result was not
            // kept): a retry claims nothing — it becomes the worker's RESEND, to the PS
            hdr.ina.flags = (hdr.ina.flags & ~INA_FLAG_RETRY) | INA_FLAG_RESEND;
            hdr.ina.node_id = 0;
            meta.verdict = INA_PASS;
            return;
        }

        if (owner == 0) {
            swap_state(key);                       // claim: the free aggregator takes the packet
            meta.verdict = INA_ABSORB;
            return;
        }

        if (owner == key) {
            bit<32> bitmap;
            agg_bitmap.read(bitmap, meta.agg_index);
            if ((bitmap & hdr.ina.bitmap) != 0) {
                meta.verdict = INA_DUPLICATE;      // retransmission: never added twice
                return;
            }
            bit<8> count = held_count;             // read above
            bit<1> ovf;
            agg_overflow.read(ovf, meta.agg_index);
            count = count + hdr.ina.count;
            bitmap = bitmap | hdr.ina.bitmap;
            if (meta.preemption == 1) {
                // ESA priority renewal: a holder still being fed takes its job's current
                // priority again, whatever earlier contests halved it to
                agg_priority.write(meta.agg_index, hdr.ina.priority);
            }
            if (count >= hdr.ina.fan_in) {
                if (meta.hold == 1) {
                    lanes_add_and_take();
                    hold_aggregator();
                } else if (meta.result_group != 0) {
                    // a multicast result: keep it for workers whose copy is lost (rule 8) until
                    // a claim (a level sending to the PS may carry a partial the PS completes)
                    lanes_add_and_keep();
                    agg_bitmap.write(meta.agg_index, bitmap);
                    agg_count.write(meta.agg_index, count);
                    agg_overflow.write(meta.agg_index, ovf | overflow | packet_overflow);
                } else {
                    lanes_add_and_take();
                    free_aggregator();
                }
                hdr.ina.bitmap = bitmap;
                hdr.ina.count = count;
                hdr.ina.worker_id = INA_WORKER_AGGREGATE;
                if ((ovf | overflow) == 1) { hdr.ina.flags = hdr.ina.flags | INA_FLAG_OVERFLOW; }
                meta.verdict = INA_COMPLETE;
            } else {
                lanes_add();
                agg_bitmap.write(meta.agg_index, bitmap);
                agg_count.write(meta.agg_index, count);
                agg_overflow.write(meta.agg_index, ovf | overflow | packet_overflow);
                meta.verdict = INA_ABSORB;
            }
            return;
        }

        // Collision with another key.
        bit<8> agg_prio;
        agg_priority.read(agg_prio, meta.agg_index);
        if (meta.preemption == 1 && hdr.ina.priority > agg_prio) {
            swap_state(key);                       // ESA packet swapping
            // the evicted partial never collided: a COLLISION flag stays with the arriving packet
            hdr.ina.flags = (hdr.ina.flags & ~INA_FLAG_COLLISION) | INA_FLAG_PREEMPTED;
            hdr.ina.worker_id = INA_WORKER_AGGREGATE;
        } else {
            if (meta.preemption == 1 && agg_prio != 0xFF) {
                // ESA priority downgrading; 255 is a held aggregator's (plans use 0..254)
                agg_priority.write(meta.agg_index, agg_prio >> 1);
            }
            hdr.ina.flags = hdr.ina.flags | INA_FLAG_COLLISION;
        }
        meta.verdict = INA_PASS;
    }
}

#endif
