/*
 * p4sim: the v1model architecture (BMv2 simple_switch model).
 *
 * Written for p4sim; declaration-compatible with p4c's p4include/v1model.p4.
 * As in p4c, V1MODEL_VERSION selects the flavour: >= 20200408 gives typed
 * register/counter/meter indices and the PortId_t typedef; the default
 * (20180101, p4c's default too: p4include/v1model.p4 and p4c-bm2-ss pass no
 * -DV1MODEL_VERSION) gives register<T>, counter and meter with bit<32> indices
 * and bit<9> ports.
 *
 * resubmit(data), recirculate(data) and clone3(type, session, data) are
 * declared as in p4c, but calling them is an error ("unknown extern function"),
 * as it is for p4c's bmv2 back end; use the *_preserving_field_list forms.
 */

#ifndef _V1_MODEL_P4_
#define _V1_MODEL_P4_

#include "core.p4"

// Same default as p4c's v1model.p4 when a program does not say.
#ifndef V1MODEL_VERSION
#define V1MODEL_VERSION 20180101
#endif

match_kind {
    range,      // lo..hi inclusive
    optional,   // exact value or wildcard
    selector    // key fed to an action_selector's hash
}

const bit<32> __v1model_version = V1MODEL_VERSION;

#if V1MODEL_VERSION >= 20200408
typedef bit<9> PortId_t;
#endif

// Per-packet metadata shared between the architecture and the program.
@metadata @name("standard_metadata")
struct standard_metadata_t {
    bit<9>   ingress_port;     // port the packet arrived on
    bit<9>   egress_spec;      // set in ingress: output port (511 drops)
    bit<9>   egress_port;      // in egress: actual output port
    bit<32>  instance_type;    // normal, clone, resubmit, recirculate, ...
    bit<32>  packet_length;    // bytes
    // queueing data (valid in egress)
    @alias("queueing_metadata.enq_timestamp")
    bit<32>  enq_timestamp;
    @alias("queueing_metadata.enq_qdepth")
    bit<19>  enq_qdepth;
    @alias("queueing_metadata.deq_timedelta")
    bit<32>  deq_timedelta;
    @alias("queueing_metadata.deq_qdepth")
    bit<19>  deq_qdepth;
    // intrinsic data
    @alias("intrinsic_metadata.ingress_global_timestamp")
    bit<48>  ingress_global_timestamp;
    @alias("intrinsic_metadata.egress_global_timestamp")
    bit<48>  egress_global_timestamp;
    @alias("intrinsic_metadata.mcast_grp")
    bit<16>  mcast_grp;        // multicast group; 0 = unicast
    @alias("intrinsic_metadata.egress_rid")
    bit<16>  egress_rid;       // replica id of a multicast copy
    bit<1>   checksum_error;   // set when verify_checksum fails
    error    parser_error;     // error the parser ended with
    @alias("intrinsic_metadata.priority")
    bit<3>   priority;         // queue priority
}

enum CounterType {
    packets,
    bytes,
    packets_and_bytes
}

enum MeterType {
    packets,
    bytes
}

// Array of counters indexed by I.
#if V1MODEL_VERSION >= 20200408
extern counter<I> {
    counter(bit<32> size, CounterType type);
    void count(in I index);
}
#else
extern counter {
    counter(bit<32> size, CounterType type);
    void count(in bit<32> index);
}
#endif

// One counter per entry of the table it is attached to (counters = ...).
extern direct_counter {
    direct_counter(CounterType type);
    void count();
}

// Colours execute_meter()/read() give.
#define V1MODEL_METER_COLOR_GREEN  0
#define V1MODEL_METER_COLOR_YELLOW 1
#define V1MODEL_METER_COLOR_RED    2

// Array of meters indexed by I; result is 0 green, 1 yellow, 2 red.
#if V1MODEL_VERSION >= 20200408
extern meter<I> {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in I index, out T result);
}
#else
extern meter {
    meter(bit<32> size, MeterType type);
    void execute_meter<T>(in bit<32> index, out T result);
}
#endif

// One meter per table entry (meters = ...); read() gives the colour.
extern direct_meter<T> {
    direct_meter(MeterType type);
    void read(out T result);
}

// Stateful array of T indexed by I.
#if V1MODEL_VERSION >= 20200408
extern register<T, I> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in I index);
    void write(in I index, in T value);
}
#else
extern register<T> {
    register(bit<32> size);
    @noSideEffects
    void read(out T result, in bit<32> index);
    void write(in bit<32> index, in T value);
}
#endif

// Table implementation: action profile (shared action data).
extern action_profile {
    action_profile(bit<32> size);
}

// result := uniform random value in [lo, hi].
extern void random<T>(out T result, in T lo, in T hi);

// Send data to the control plane; receiver is ignored by BMv2.
extern void digest<T>(in bit<32> receiver, in T data);

enum HashAlgorithm {
    crc32,
    crc32_custom,
    crc16,
    crc16_custom,
    random,
    identity,
    csum16,
    xor16
}

@deprecated("Please use mark_to_drop(standard_metadata) instead.")
extern void mark_to_drop();

// Drop the packet: egress_spec := drop port, mcast_grp := 0.
@pure
extern void mark_to_drop(inout standard_metadata_t standard_metadata);

// result := base + (H(data) mod max), or base when max == 0.
@pure
extern void hash<O, T, D, M>(out O result, in HashAlgorithm algo, in T base, in D data, in M max);

// Table implementation: action profile with hash-based member selection.
extern action_selector {
    action_selector(HashAlgorithm algorithm, bit<32> size, bit<32> outputWidth);
}

enum CloneType {
    I2E,    // clone from ingress to egress
    E2E     // clone from egress to egress
}

@deprecated("Please use verify_checksum/update_checksum instead.")
extern Checksum16 {
    Checksum16();
    bit<16> get<D>(in D data);
}

// In VerifyChecksum: if condition, compare checksum with algo(data) and set
// standard_metadata.checksum_error on mismatch.
extern void verify_checksum<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);

// In ComputeChecksum: if condition, checksum := algo(data).
@pure
extern void update_checksum<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

// Same two, with the unparsed payload appended to data.
extern void verify_checksum_with_payload<T, O>(in bool condition, in T data, in O checksum, HashAlgorithm algo);
@noSideEffects
extern void update_checksum_with_payload<T, O>(in bool condition, in T data, inout O checksum, HashAlgorithm algo);

// Clone the packet to the given clone session.
extern void clone(in CloneType type, in bit<32> session);

@deprecated("Please use 'resubmit_preserving_field_list' instead")
extern void resubmit<T>(in T data);
// Resubmit at end of ingress, keeping user metadata fields tagged
// @field_list(index).
extern void resubmit_preserving_field_list(bit<8> index);

@deprecated("Please use 'recirculate_preserving_field_list' instead")
extern void recirculate<T>(in T data);
// Recirculate at end of egress, keeping fields tagged @field_list(index).
extern void recirculate_preserving_field_list(bit<8> index);

@deprecated("Please use 'clone_preserving_field_list' instead")
extern void clone3<T>(in CloneType type, in bit<32> session, in T data);
// Clone, keeping fields tagged @field_list(index) in the copy.
extern void clone_preserving_field_list(in CloneType type, in bit<32> session, bit<8> index);

// Keep at most length bytes of the outgoing packet.
extern void truncate(in bit<32> length);

// Debug/verification helpers.
extern void assert(in bool check);
extern void assume(in bool check);

// Log a message; "{}" in msg are replaced by the fields of data.
extern void log_msg(string msg);
extern void log_msg<T>(string msg, in T data);

// ---- programmable blocks and the package -------------------------------

parser Parser<H, M>(packet_in b,
                    out H parsedHdr,
                    inout M meta,
                    inout standard_metadata_t standard_metadata);

// Only verify_checksum* calls belong here.
control VerifyChecksum<H, M>(inout H hdr,
                             inout M meta);

@pipeline
control Ingress<H, M>(inout H hdr,
                      inout M meta,
                      inout standard_metadata_t standard_metadata);

@pipeline
control Egress<H, M>(inout H hdr,
                     inout M meta,
                     inout standard_metadata_t standard_metadata);

// Only update_checksum* calls belong here.
control ComputeChecksum<H, M>(inout H hdr,
                              inout M meta);

@deparser
control Deparser<H>(packet_out b, in H hdr);

package V1Switch<H, M>(Parser<H, M> p,
                       VerifyChecksum<H, M> vr,
                       Ingress<H, M> ig,
                       Egress<H, M> eg,
                       ComputeChecksum<H, M> ck,
                       Deparser<H> dep
                       );

#endif  /* _V1_MODEL_P4_ */
