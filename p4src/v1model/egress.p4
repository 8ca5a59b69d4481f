// Egress: per-replica destination of multicast results and source MAC rewriting.
#ifndef _INA_V1MODEL_EGRESS_P4_
#define _INA_V1MODEL_EGRESS_P4_

control InaEgress(inout ina_headers_t hdr, inout ina_metadata_t meta,
                  inout standard_metadata_t sm) {
    // A result replica comes from the job's PS (the original destination), not from the
    // worker whose fragment completed the sum: hosts drop packets that claim their own address.
    action set_result_dst(ipv4_addr_t ip, mac_addr_t mac) {
        hdr.ipv4.src_addr = hdr.ipv4.dst_addr;
        hdr.ipv4.dst_addr = ip;
        hdr.ethernet.dst_addr = mac;
    }
    action set_smac(mac_addr_t mac) {
        hdr.ethernet.src_addr = mac;
    }

    // One entry per replica id of a job's multicast group: where that worker lives.
    table result_rewrite {
        key = { sm.egress_rid : exact; }
        actions = { set_result_dst; NoAction; }
        default_action = NoAction();
        size = 4096;
    }

    table smac {
        key = { sm.egress_port : exact; }
        actions = { set_smac; NoAction; }
        default_action = NoAction();
        size = 512;
    }

    apply {
        if (hdr.ina.isValid() && sm.instance_type == 5 /* REPLICATION */) {
            result_rewrite.apply();
        }
        smac.apply();
    }
}

#endif
