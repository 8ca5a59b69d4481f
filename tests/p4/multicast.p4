// p4sim corpus: multicast through the packet replication engine (mc_mgrp_create,
// mc_node_create, mc_node_associate), egress_rid/egress_port/instance_type seen in egress,
// mark_to_drop in ingress (clears mcast_grp too) and in egress (prunes one copy).
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header mc_t {
    bit<16> grp;
    bit<8>  op;     // 0 unicast to port 4, 1 multicast, 2 multicast then mark_to_drop,
                    // 3 multicast, egress drops the copy for port 3
    bit<8>  pad;
    bit<16> rid;    // out: egress_rid
    bit<16> eport;  // out: egress_port
    bit<32> itype;  // out: instance_type (5 = replication)
}

struct headers_t {
    mc_t m;
}

struct meta_t { }

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.m);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 4;
        if (hdr.m.op != 0) {
            sm.mcast_grp = hdr.m.grp;
        }
        if (hdr.m.op == 2) {
            mark_to_drop(sm);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.m.rid = sm.egress_rid;
        hdr.m.eport = (bit<16>) sm.egress_port;
        hdr.m.itype = sm.instance_type;
        if (hdr.m.op == 3 && sm.egress_port == 3) {
            mark_to_drop(sm);
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.m);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
