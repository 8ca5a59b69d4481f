// p4sim corpus: clone I2E and E2E with mirroring sessions (mirroring_add), with and without
// a preserved field list (@field_list). Egress writes instance_type (1 = ingress clone,
// 2 = egress clone), egress_port and the metadata it sees into the header.
//
// bmv2 semantics: an I2E clone is the packet as received, parsed again, with its metadata
// reset except the preserved fields. An E2E clone copies the headers as they are at the end
// of egress, resets the metadata except the preserved fields, and runs egress again.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t {
    bit<8> op;      // 0 none, 1 clone I2E, 2 clone E2E, 3 clone I2E keeping field list 1
    bit<8> x;       // set by ingress in the original packet only
    bit<8> cnt;     // +1 at each egress pass
    bit<8> itype;   // out: instance_type
    bit<8> eport;   // out: egress_port
    bit<8> tag;     // out: meta.tag (field list 1)
    bit<8> other;   // out: meta.other (in no field list)
}

struct headers_t {
    h_t h;
}

struct meta_t {
    @field_list(1)
    bit<8> tag;
    bit<8> other;
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
        meta.tag = 0x77;
        meta.other = 0x55;
        if (hdr.h.op == 1) {
            clone(CloneType.I2E, 32w5);
            hdr.h.x = 0x11;
        } else if (hdr.h.op == 3) {
            clone_preserving_field_list(CloneType.I2E, 32w5, 1);
            hdr.h.x = 0x33;
        }
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        hdr.h.itype = (bit<8>) sm.instance_type;
        hdr.h.eport = (bit<8>) sm.egress_port;
        hdr.h.cnt = hdr.h.cnt + 1;
        hdr.h.tag = meta.tag;
        hdr.h.other = meta.other;
        if (hdr.h.op == 2 && sm.instance_type == 0) {
            clone(CloneType.E2E, 32w6);
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
