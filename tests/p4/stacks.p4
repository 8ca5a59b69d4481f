// p4sim corpus: header stacks. The parser loops with .next/.last; ingress uses constant
// indices, push_front and pop_front; the deparser emits the whole stack (valid elements in
// index order). A fifth item overflows the stack: error.StackOutOfBounds.
//
// Packet: ctl (op n sum first flags) then items (v more) while more != 0.
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>

header ctl_t {
    bit<8> op;      // 0 nothing, 1 push_front(1), 2 pop_front(1), 3 push_front(2), 4 pop_front(2)
    bit<8> n;       // out: number of valid items after the operation
    bit<8> sum;     // out: sum of the valid items' v after the operation
    bit<8> first;   // out: items[0].v as parsed (0 if none)
    bit<8> flags;   // out: 0x01 StackOutOfBounds, 0x02 items[3] valid as parsed
}

header item_t {
    bit<8> v;
    bit<8> more;
}

struct headers_t {
    ctl_t     ctl;
    item_t[4] items;
}

struct meta_t {
    bit<8> count;
}

parser MyParser(packet_in pkt, out headers_t hdr, inout meta_t meta,
                inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ctl);
        meta.count = 0;
        transition select(pkt.lookahead<bit<8>>()) {
            0: accept;          // no item at all when the next byte is 0
            default: parse_item;
        }
    }
    state parse_item {
        pkt.extract(hdr.items.next);
        meta.count = meta.count + 1;
        transition select(hdr.items.last.more) {
            0: accept;
            default: parse_item;
        }
    }
}

control MyVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control Sum(in headers_t hdr, out bit<8> n, out bit<8> sum) {
    apply {
        n = 0;
        sum = 0;
        if (hdr.items[0].isValid()) { n = n + 1; sum = sum + hdr.items[0].v; }
        if (hdr.items[1].isValid()) { n = n + 1; sum = sum + hdr.items[1].v; }
        if (hdr.items[2].isValid()) { n = n + 1; sum = sum + hdr.items[2].v; }
        if (hdr.items[3].isValid()) { n = n + 1; sum = sum + hdr.items[3].v; }
    }
}

control MyIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    Sum() summer;
    apply {
        sm.egress_spec = 1;
        hdr.ctl.flags = 0;
        if (sm.parser_error == error.StackOutOfBounds) {
            hdr.ctl.flags = hdr.ctl.flags | 0x01;
        }
        if (hdr.items[3].isValid()) {
            hdr.ctl.flags = hdr.ctl.flags | 0x02;
        }
        hdr.ctl.first = hdr.items[0].isValid() ? hdr.items[0].v : 8w0;
        if (hdr.ctl.op == 1) {
            hdr.items.push_front(1);
            hdr.items[0].setValid();
            hdr.items[0].v = 0xE0;
            hdr.items[0].more = 1;
        } else if (hdr.ctl.op == 2) {
            hdr.items.pop_front(1);
        } else if (hdr.ctl.op == 3) {
            hdr.items.push_front(2);
            hdr.items[1].setValid();
            hdr.items[1].v = 0xE1;
            hdr.items[1].more = 1;
        } else if (hdr.ctl.op == 4) {
            hdr.items.pop_front(2);
        }
        summer.apply(hdr, hdr.ctl.n, hdr.ctl.sum);
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
        pkt.emit(hdr.ctl);
        pkt.emit(hdr.items);
    }
}

V1Switch(MyParser(), MyVerify(), MyIngress(), MyEgress(), MyCompute(), MyDeparser()) main;
