// Benchmark: 64 register read-modify-writes per packet (an aggregation-style workload).
#include <core.p4>
#define V1MODEL_VERSION 20200408
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header agg_t { bit<32> index; bit<32> value; }
struct headers_t { ethernet_t ethernet; agg_t agg; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.ethernet); pkt.extract(hdr.agg); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    register<bit<32>, bit<32>>(1024) r0;
    register<bit<32>, bit<32>>(1024) r1;
    register<bit<32>, bit<32>>(1024) r2;
    register<bit<32>, bit<32>>(1024) r3;
    register<bit<32>, bit<32>>(1024) r4;
    register<bit<32>, bit<32>>(1024) r5;
    register<bit<32>, bit<32>>(1024) r6;
    register<bit<32>, bit<32>>(1024) r7;
    register<bit<32>, bit<32>>(1024) r8;
    register<bit<32>, bit<32>>(1024) r9;
    register<bit<32>, bit<32>>(1024) r10;
    register<bit<32>, bit<32>>(1024) r11;
    register<bit<32>, bit<32>>(1024) r12;
    register<bit<32>, bit<32>>(1024) r13;
    register<bit<32>, bit<32>>(1024) r14;
    register<bit<32>, bit<32>>(1024) r15;
    register<bit<32>, bit<32>>(1024) r16;
    register<bit<32>, bit<32>>(1024) r17;
    register<bit<32>, bit<32>>(1024) r18;
    register<bit<32>, bit<32>>(1024) r19;
    register<bit<32>, bit<32>>(1024) r20;
    register<bit<32>, bit<32>>(1024) r21;
    register<bit<32>, bit<32>>(1024) r22;
    register<bit<32>, bit<32>>(1024) r23;
    register<bit<32>, bit<32>>(1024) r24;
    register<bit<32>, bit<32>>(1024) r25;
    register<bit<32>, bit<32>>(1024) r26;
    register<bit<32>, bit<32>>(1024) r27;
    register<bit<32>, bit<32>>(1024) r28;
    register<bit<32>, bit<32>>(1024) r29;
    register<bit<32>, bit<32>>(1024) r30;
    register<bit<32>, bit<32>>(1024) r31;
    register<bit<32>, bit<32>>(1024) r32;
    register<bit<32>, bit<32>>(1024) r33;
    register<bit<32>, bit<32>>(1024) r34;
    register<bit<32>, bit<32>>(1024) r35;
    register<bit<32>, bit<32>>(1024) r36;
    register<bit<32>, bit<32>>(1024) r37;
    register<bit<32>, bit<32>>(1024) r38;
    register<bit<32>, bit<32>>(1024) r39;
    register<bit<32>, bit<32>>(1024) r40;
    register<bit<32>, bit<32>>(1024) r41;
    register<bit<32>, bit<32>>(1024) r42;
    register<bit<32>, bit<32>>(1024) r43;
    register<bit<32>, bit<32>>(1024) r44;
    register<bit<32>, bit<32>>(1024) r45;
    register<bit<32>, bit<32>>(1024) r46;
    register<bit<32>, bit<32>>(1024) r47;
    register<bit<32>, bit<32>>(1024) r48;
    register<bit<32>, bit<32>>(1024) r49;
    register<bit<32>, bit<32>>(1024) r50;
    register<bit<32>, bit<32>>(1024) r51;
    register<bit<32>, bit<32>>(1024) r52;
    register<bit<32>, bit<32>>(1024) r53;
    register<bit<32>, bit<32>>(1024) r54;
    register<bit<32>, bit<32>>(1024) r55;
    register<bit<32>, bit<32>>(1024) r56;
    register<bit<32>, bit<32>>(1024) r57;
    register<bit<32>, bit<32>>(1024) r58;
    register<bit<32>, bit<32>>(1024) r59;
    register<bit<32>, bit<32>>(1024) r60;
    register<bit<32>, bit<32>>(1024) r61;
    register<bit<32>, bit<32>>(1024) r62;
    register<bit<32>, bit<32>>(1024) r63;
    apply {
        bit<32> v;
        r0.read(v, hdr.agg.index); v = v + hdr.agg.value; r0.write(hdr.agg.index, v);
        r1.read(v, hdr.agg.index); v = v + hdr.agg.value; r1.write(hdr.agg.index, v);
        r2.read(v, hdr.agg.index); v = v + hdr.agg.value; r2.write(hdr.agg.index, v);
        r3.read(v, hdr.agg.index); v = v + hdr.agg.value; r3.write(hdr.agg.index, v);
        r4.read(v, hdr.agg.index); v = v + hdr.agg.value; r4.write(hdr.agg.index, v);
        r5.read(v, hdr.agg.index); v = v + hdr.agg.value; r5.write(hdr.agg.index, v);
        r6.read(v, hdr.agg.index); v = v + hdr.agg.value; r6.write(hdr.agg.index, v);
        r7.read(v, hdr.agg.index); v = v + hdr.agg.value; r7.write(hdr.agg.index, v);
        r8.read(v, hdr.agg.index); v = v + hdr.agg.value; r8.write(hdr.agg.index, v);
        r9.read(v, hdr.agg.index); v = v + hdr.agg.value; r9.write(hdr.agg.index, v);
        r10.read(v, hdr.agg.index); v = v + hdr.agg.value; r10.write(hdr.agg.index, v);
        r11.read(v, hdr.agg.index); v = v + hdr.agg.value; r11.write(hdr.agg.index, v);
        r12.read(v, hdr.agg.index); v = v + hdr.agg.value; r12.write(hdr.agg.index, v);
        r13.read(v, hdr.agg.index); v = v + hdr.agg.value; r13.write(hdr.agg.index, v);
        r14.read(v, hdr.agg.index); v = v + hdr.agg.value; r14.write(hdr.agg.index, v);
        r15.read(v, hdr.agg.index); v = v + hdr.agg.value; r15.write(hdr.agg.index, v);
        r16.read(v, hdr.agg.index); v = v + hdr.agg.value; r16.write(hdr.agg.index, v);
        r17.read(v, hdr.agg.index); v = v + hdr.agg.value; r17.write(hdr.agg.index, v);
        r18.read(v, hdr.agg.index); v = v + hdr.agg.value; r18.write(hdr.agg.index, v);
        r19.read(v, hdr.agg.index); v = v + hdr.agg.value; r19.write(hdr.agg.index, v);
        r20.read(v, hdr.agg.index); v = v + hdr.agg.value; r20.write(hdr.agg.index, v);
        r21.read(v, hdr.agg.index); v = v + hdr.agg.value; r21.write(hdr.agg.index, v);
        r22.read(v, hdr.agg.index); v = v + hdr.agg.value; r22.write(hdr.agg.index, v);
        r23.read(v, hdr.agg.index); v = v + hdr.agg.value; r23.write(hdr.agg.index, v);
        r24.read(v, hdr.agg.index); v = v + hdr.agg.value; r24.write(hdr.agg.index, v);
        r25.read(v, hdr.agg.index); v = v + hdr.agg.value; r25.write(hdr.agg.index, v);
        r26.read(v, hdr.agg.index); v = v + hdr.agg.value; r26.write(hdr.agg.index, v);
        r27.read(v, hdr.agg.index); v = v + hdr.agg.value; r27.write(hdr.agg.index, v);
        r28.read(v, hdr.agg.index); v = v + hdr.agg.value; r28.write(hdr.agg.index, v);
        r29.read(v, hdr.agg.index); v = v + hdr.agg.value; r29.write(hdr.agg.index, v);
        r30.read(v, hdr.agg.index); v = v + hdr.agg.value; r30.write(hdr.agg.index, v);
        r31.read(v, hdr.agg.index); v = v + hdr.agg.value; r31.write(hdr.agg.index, v);
        r32.read(v, hdr.agg.index); v = v + hdr.agg.value; r32.write(hdr.agg.index, v);
        r33.read(v, hdr.agg.index); v = v + hdr.agg.value; r33.write(hdr.agg.index, v);
        r34.read(v, hdr.agg.index); v = v + hdr.agg.value; r34.write(hdr.agg.index, v);
        r35.read(v, hdr.agg.index); v = v + hdr.agg.value; r35.write(hdr.agg.index, v);
        r36.read(v, hdr.agg.index); v = v + hdr.agg.value; r36.write(hdr.agg.index, v);
        r37.read(v, hdr.agg.index); v = v + hdr.agg.value; r37.write(hdr.agg.index, v);
        r38.read(v, hdr.agg.index); v = v + hdr.agg.value; r38.write(hdr.agg.index, v);
        r39.read(v, hdr.agg.index); v = v + hdr.agg.value; r39.write(hdr.agg.index, v);
        r40.read(v, hdr.agg.index); v = v + hdr.agg.value; r40.write(hdr.agg.index, v);
        r41.read(v, hdr.agg.index); v = v + hdr.agg.value; r41.write(hdr.agg.index, v);
        r42.read(v, hdr.agg.index); v = v + hdr.agg.value; r42.write(hdr.agg.index, v);
        r43.read(v, hdr.agg.index); v = v + hdr.agg.value; r43.write(hdr.agg.index, v);
        r44.read(v, hdr.agg.index); v = v + hdr.agg.value; r44.write(hdr.agg.index, v);
        r45.read(v, hdr.agg.index); v = v + hdr.agg.value; r45.write(hdr.agg.index, v);
        r46.read(v, hdr.agg.index); v = v + hdr.agg.value; r46.write(hdr.agg.index, v);
        r47.read(v, hdr.agg.index); v = v + hdr.agg.value; r47.write(hdr.agg.index, v);
        r48.read(v, hdr.agg.index); v = v + hdr.agg.value; r48.write(hdr.agg.index, v);
        r49.read(v, hdr.agg.index); v = v + hdr.agg.value; r49.write(hdr.agg.index, v);
        r50.read(v, hdr.agg.index); v = v + hdr.agg.value; r50.write(hdr.agg.index, v);
        r51.read(v, hdr.agg.index); v = v + hdr.agg.value; r51.write(hdr.agg.index, v);
        r52.read(v, hdr.agg.index); v = v + hdr.agg.value; r52.write(hdr.agg.index, v);
        r53.read(v, hdr.agg.index); v = v + hdr.agg.value; r53.write(hdr.agg.index, v);
        r54.read(v, hdr.agg.index); v = v + hdr.agg.value; r54.write(hdr.agg.index, v);
        r55.read(v, hdr.agg.index); v = v + hdr.agg.value; r55.write(hdr.agg.index, v);
        r56.read(v, hdr.agg.index); v = v + hdr.agg.value; r56.write(hdr.agg.index, v);
        r57.read(v, hdr.agg.index); v = v + hdr.agg.value; r57.write(hdr.agg.index, v);
        r58.read(v, hdr.agg.index); v = v + hdr.agg.value; r58.write(hdr.agg.index, v);
        r59.read(v, hdr.agg.index); v = v + hdr.agg.value; r59.write(hdr.agg.index, v);
        r60.read(v, hdr.agg.index); v = v + hdr.agg.value; r60.write(hdr.agg.index, v);
        r61.read(v, hdr.agg.index); v = v + hdr.agg.value; r61.write(hdr.agg.index, v);
        r62.read(v, hdr.agg.index); v = v + hdr.agg.value; r62.write(hdr.agg.index, v);
        r63.read(v, hdr.agg.index); v = v + hdr.agg.value; r63.write(hdr.agg.index, v);
        hdr.agg.value = v;
        sm.egress_spec = 1;
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
