// p4sim corpus: a register incremented by every packet (read-modify-write), written from
// the packet and from the control plane (register_write/register_read/register_reset), and
// an indexed counter (check_counter).
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header h_t {
    bit<8>  idx;    // register and counter index
    bit<8>  op;     // 0 read, 1 increment, 2 write val
    bit<32> val;    // out: the value read (after the increment for op 1)
}

struct headers_t {
    h_t h;
}

struct meta_t { }

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
    register<bit<32>, bit<32>>(8) r;
    counter<bit<32>>(8, CounterType.packets_and_bytes) c;

    apply {
        sm.egress_spec = 1;
        bit<32> i = (bit<32>) hdr.h.idx;
        bit<32> v;
        r.read(v, i);
        if (hdr.h.op == 1) {
            v = v + 1;
            r.write(i, v);
        } else if (hdr.h.op == 2) {
            r.write(i, hdr.h.val);
        }
        hdr.h.val = v;
        c.count(i);
    }
}

control MyEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
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
