// Per-packet metadata of the v1model INA program.
#ifndef _INA_V1MODEL_METADATA_P4_
#define _INA_V1MODEL_METADATA_P4_

struct ina_metadata_t {
    bit<8>  pipe;             // ingress pipe (multi-pipeline model, ina_port_pipe)
    bit<32> pool_base;        // this pipe's aggregator pool (from ina_node)
    bit<32> pool_size;
    bit<1>  is_aggregation_node;
    bit<1>  job_known;
    bit<1>  preemption;       // ESA mode for this job
    bit<1>  hold;             // ATP mode: keep a completed aggregator until its result returns
    bit<1>  releasing;        // this packet is a returning result that frees a held aggregator
    bit<16> agg_node;         // node id the aggregator key uses (own id when releasing)
    bit<3>  verdict;          // INA_PASS / ABSORB / COMPLETE / DUPLICATE / RETAINED
    bit<1>  last_level;       // ina_level: the aggregate is final (RESULT) at this node
    bit<16> result_group;     // ina_level: multicast group for the result (0: to the PS)
    bit<1>  has_next;         // ina_level: to_node, the aggregate goes on to next_node
    bit<16> next_node;
    bit<8>  next_fan_in;
    bit<32> agg_index;
    bit<1>  routed;           // an explicit route or next hop was chosen
    bit<16> ecmp_group;
    bit<16> ecmp_size;
    bit<16> ecmp_member;
}

#endif
