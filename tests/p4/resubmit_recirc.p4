// p4sim corpus: resubmit and recirculate with preserved metadata (@field_list).
// bmv2 semantics: a resubmitted packet is the original packet, parsed again, instance_type 6,
// metadata reset except the fields of the given list. A recirculated packet is the deparsed
// output of egress, instance_type 4 in ingress, with the same metadata rule. At the end of
// ingress a unicast packet's instance_type becomes 0 (normal) again.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t {
    bit<8> op;        // 1 resubmit, 2 recirculate
    bit<8> x;
    bit<8> ig_itype;  // out: instance_type seen by ingress
    bit<8> rs;        // out: meta.rcount after resubmit (field list 1)
    bit<8> sc;        // out: meta.scratch after resubmit (no field list)
    bit<8> rc;        // out: meta.ccount after recirculation (field list 2)
    bit<8> eg_itype;  // out: instance_type seen by egress
    bit<8> passes;    // +1 at each ingress pass
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> rcount;
    bit<8> scratch;
    @field_list(2)
    bit<8> ccount;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.h);
        transition accept;
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        hdr.h.ig_itype = (bit<8>) sm.instance_type;
        hdr.h.passes = hdr.h.passes + 1;
        if (sm.instance_type == 6) {
            hdr.h.rs = meta.rcount;
            hdr.h.sc = meta.scratch;
        } else if (sm.instance_type == 4) {
            hdr.h.rc = meta.ccount;
        } else if (hdr.h.op == 1) {
            meta.rcount = 0x42;
            meta.scratch = 0x99;
            hdr.h.x = 0x11;   // lost: resubmit starts again from the original bytes
            resubmit_preserving_field_list(1);
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.eg_itype = (bit<8>) sm.instance_type;
        if (hdr.h.op == 2 && hdr.h.rc == 0) {
            meta.ccount = 0x24;
            hdr.h.x = 0x22;   // kept: the deparsed packet is what recirculates
            recirculate_preserving_field_list(2);
        }
    }
}

control MyCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control MyDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.h);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
