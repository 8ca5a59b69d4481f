/*
 * p4sim: Tofino Native Architecture (TNA), Tofino 1 -- SUBSET.
 *
 * Written for p4sim.  It covers part of what Intel's tna.p4 pulls in
 * (tofino1_specs.p4, tofino1_base.p4, tofino1_arch.p4; formerly tofino.p4
 * and tofino1arch.p4).  Every declaration below has the names, type
 * parameters, parameter directions and ordering of the official one, so a
 * TNA program that only uses what is declared here compiles against both.
 *
 * Declared here:
 *   width macros, typedefs PortId_t .. L2ExclusionId_t, ParserError_t,
 *   PORT_METADATA_SIZE, DEVPORT_* macros, PARSER_ERROR_* constants;
 *   enums MeterType_t, MeterColor_t, CounterType_t, SelectorMode_t,
 *   HashAlgorithm_t, MathOp_t; match kinds range, selector,
 *   atcam_partition_index; the Tofino error codes;
 *   all ingress/egress intrinsic metadata types;
 *   externs Checksum, CRCPolynomial, Hash, Random, max, min, invalidate,
 *   port_metadata_unpack, sizeInBits, sizeInBytes, Counter, DirectCounter,
 *   Meter, DirectMeter, Register, DirectRegister, RegisterAction,
 *   DirectRegisterAction, ActionProfile, ActionSelector, Mirror, Resubmit,
 *   Digest;
 *   IngressParserT, IngressT, IngressDeparserT, EgressParserT, EgressT,
 *   EgressDeparserT, package Pipeline, package Switch.
 *
 * Left out (a program using them will not compile with p4sim):
 *   ParserCounter, ParserPriority, Lpf, DirectLpf, Wred, DirectWred,
 *   RegisterParam, MathUnit, SelectorAction, Atcam, Alpm,
 *   funnel_shift_right, is_validated, the pktgen_*_header_t and
 *   ptp_metadata_t headers, the multi-parser packages (IngressParsers,
 *   EgressParsers, MultiParserPipeline, MultiParserSwitch), the
 *   PACK_VERSION/COMPILER_VERSION macros, the @pkginfo annotation on
 *   Switch, and everything specific to Tofino 2 and later (t2na.p4).
 */

#ifndef _TOFINO1_NATIVE_ARCHITECTURE_
#define _TOFINO1_NATIVE_ARCHITECTURE_

// bf-p4c defines this on the command line; p4sim models a Tofino 1.
#ifndef __TARGET_TOFINO__
#define __TARGET_TOFINO__ 1
#endif

#include <core.p4>

// =========================================================================
// Target types and constants (tofino1_specs.p4)
// =========================================================================

#define PORT_ID_WIDTH                  9
#define MULTICAST_GROUP_ID_WIDTH       16
#define QUEUE_ID_WIDTH                 5
#define MIRROR_TYPE_WIDTH              3
#define MIRROR_ID_WIDTH                10
#define RESUBMIT_TYPE_WIDTH            3
#define DIGEST_TYPE_WIDTH              3
#define REPLICATION_ID_WIDTH           16
#define L1_EXCLUSION_ID_WIDTH          16
#define L2_EXCLUSION_ID_WIDTH          9

typedef bit<PORT_ID_WIDTH>            PortId_t;            // ingress/egress port
typedef bit<MULTICAST_GROUP_ID_WIDTH> MulticastGroupId_t;
typedef bit<QUEUE_ID_WIDTH>           QueueId_t;
typedef bit<MIRROR_TYPE_WIDTH>        MirrorType_t;        // selects a Mirror instance
typedef bit<MIRROR_ID_WIDTH>          MirrorId_t;          // mirror session
typedef bit<RESUBMIT_TYPE_WIDTH>      ResubmitType_t;      // selects a Resubmit instance
typedef bit<DIGEST_TYPE_WIDTH>        DigestType_t;        // selects a Digest instance
typedef bit<REPLICATION_ID_WIDTH>     ReplicationId_t;
typedef bit<L1_EXCLUSION_ID_WIDTH>    L1ExclusionId_t;
typedef bit<L2_EXCLUSION_ID_WIDTH>    L2ExclusionId_t;

typedef error ParserError_t;

// Bits of per-port metadata prepended to every packet entering ingress
// (skip with pkt.advance(PORT_METADATA_SIZE) or read port_metadata_unpack).
const bit<32> PORT_METADATA_SIZE = 32w64;

// Device port = 2-bit pipe number, 7-bit local port.
#define DEVPORT_PIPE_MASK   0x180
#define DEVPORT_PIPE(port)  (port)[8:7]
#define DEVPORT_PORT_MASK   0x7f
#define DEVPORT_PORT(port)  (port)[6:0]

// =========================================================================
// Portable constants, metadata and externs (tofino1_base.p4)
// =========================================================================

// Bits of ig/eg_intr_md_from_prsr.parser_err.
const bit<16> PARSER_ERROR_OK           = 16w0x0000;
const bit<16> PARSER_ERROR_NO_MATCH     = 16w0x0001;
const bit<16> PARSER_ERROR_PARTIAL_HDR  = 16w0x0002;
const bit<16> PARSER_ERROR_CTR_RANGE    = 16w0x0004;
const bit<16> PARSER_ERROR_TIMEOUT_USER = 16w0x0008;
const bit<16> PARSER_ERROR_TIMEOUT_HW   = 16w0x0010;
const bit<16> PARSER_ERROR_SRC_EXT      = 16w0x0020;
const bit<16> PARSER_ERROR_DST_CONT     = 16w0x0040;
const bit<16> PARSER_ERROR_PHV_OWNER    = 16w0x0080;
const bit<16> PARSER_ERROR_MULTIWRITE   = 16w0x0100;
const bit<16> PARSER_ERROR_ARAM_MBE     = 16w0x0400;
const bit<16> PARSER_ERROR_FCS          = 16w0x0800;

enum MeterType_t { PACKETS, BYTES }

enum bit<8> MeterColor_t { GREEN = 8w0, YELLOW = 8w1, RED = 8w3 }

enum CounterType_t {
    PACKETS,
    BYTES,
    PACKETS_AND_BYTES
}

enum SelectorMode_t { FAIR, RESILIENT }

enum HashAlgorithm_t {
    IDENTITY,
    RANDOM,
    XOR8,
    XOR16,
    XOR32,
    CRC8,
    CRC16,
    CRC32,
    CRC64,
    CUSTOM      // polynomial given by a CRCPolynomial instance
}

// Functions a MathUnit can approximate (MathUnit itself is not declared).
enum MathOp_t {
    MUL,
    SQR,
    SQRT,
    DIV,
    RSQR,
    RSQRT
}

// exact, ternary and lpm come from core.p4.
match_kind {
    range,
    selector,               // key hashed by an ActionSelector
    atcam_partition_index   // partition key of an Atcam table
}

// Added to the core error codes.
error {
    CounterRange,
    Timeout,
    PhvOwner,
    MultiWrite,
    IbufOverflow,
    IbufUnderflow
}

// ---- ingress intrinsic metadata -----------------------------------------

// Prepended to the packet by the hardware; the ingress parser extracts it
// first.  Padding widths are written for PORT_ID_WIDTH 9.
@__intrinsic_metadata
header ingress_intrinsic_metadata_t {
    bit<1>   resubmit_flag;         // 1 for a resubmitted packet
    @padding bit<1> _pad1;
    bit<2>   packet_version;
    @padding bit<3> _pad2;
    PortId_t ingress_port;
    bit<48>  ingress_mac_tstamp;    // ns, taken at the ingress MAC
}

// Ingress requests to the traffic manager.
@__intrinsic_metadata
struct ingress_intrinsic_metadata_for_tm_t {
    PortId_t           ucast_egress_port;     // unicast output port
    bit<1>             bypass_egress;         // skip the egress pipeline
    bit<1>             deflect_on_drop;
    bit<3>             ingress_cos;
    QueueId_t          qid;                   // egress queue
    bit<3>             icos_for_copy_to_cpu;
    bit<1>             copy_to_cpu;
    bit<2>             packet_color;
    bit<1>             disable_ucast_cutthru;
    bit<1>             enable_mcast_cutthru;
    MulticastGroupId_t mcast_grp_a;           // multicast tree; 0 = none
    MulticastGroupId_t mcast_grp_b;
    bit<13>            level1_mcast_hash;
    bit<13>            level2_mcast_hash;
    L1ExclusionId_t    level1_exclusion_id;
    L2ExclusionId_t    level2_exclusion_id;
    bit<16>            rid;                   // replication id
}

@__intrinsic_metadata
struct ingress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;      // ns, at ingress arrival
    bit<32> global_ver;
    bit<16> parser_err;         // PARSER_ERROR_* bits
}

// Ingress requests to the ingress deparser.
@__intrinsic_metadata
struct ingress_intrinsic_metadata_for_deparser_t {
    bit<3>         drop_ctl;        // bit 0: drop the packet
    DigestType_t   digest_type;     // which Digest to pack
    ResubmitType_t resubmit_type;   // which Resubmit to emit
    MirrorType_t   mirror_type;     // which Mirror to emit
}

// ---- egress intrinsic metadata ------------------------------------------

// Prepended by the traffic manager; the egress parser extracts it first.
// Padding widths are written for PORT_ID_WIDTH 9 and QUEUE_ID_WIDTH 5.
@__intrinsic_metadata
header egress_intrinsic_metadata_t {
    @padding bit<7> _pad0;
    PortId_t egress_port;
    @padding bit<5> _pad1;
    bit<19>  enq_qdepth;
    @padding bit<6> _pad2;
    bit<2>   enq_congest_stat;
    @padding bit<14> _pad3;
    bit<18>  enq_tstamp;
    @padding bit<5> _pad4;
    bit<19>  deq_qdepth;
    @padding bit<6> _pad5;
    bit<2>   deq_congest_stat;
    bit<8>   app_pool_congest_stat;
    @padding bit<14> _pad6;
    bit<18>  deq_timedelta;
    bit<16>  egress_rid;            // replication id of this copy
    @padding bit<7> _pad7;
    bit<1>   egress_rid_first;
    @padding bit<3> _pad8;
    QueueId_t egress_qid;
    @padding bit<5> _pad9;
    bit<3>   egress_cos;
    @padding bit<7> _pad10;
    bit<1>   deflection_flag;
    bit<16>  pkt_length;            // bytes
}

@__intrinsic_metadata
struct egress_intrinsic_metadata_from_parser_t {
    bit<48> global_tstamp;
    bit<32> global_ver;
    bit<16> parser_err;
}

@__intrinsic_metadata
struct egress_intrinsic_metadata_for_deparser_t {
    bit<3>       drop_ctl;          // bit 0: drop the packet
    MirrorType_t mirror_type;
    bit<1>       coalesce_flush;
    bit<7>       coalesce_length;
}

@__intrinsic_metadata
struct egress_intrinsic_metadata_for_output_port_t {
    bit<1> capture_tstamp_on_tx;
    bit<1> update_delay_on_tx;
}

// ---- checksum -----------------------------------------------------------

// 16-bit ones' complement checksum unit (parser and deparser).
extern Checksum {
    Checksum();
    void add<T>(in T data);
    void subtract<T>(in T data);
    bool verify();                                  // sum complements to 0
    void subtract_all_and_deposit<T>(out T residual);
    bit<16> get();
    bit<16> update<T>(in T data, @optional in bool zeros_as_ones);
}

// ---- hashing and random numbers -----------------------------------------

// Parameters of a custom CRC (for HashAlgorithm_t.CUSTOM).
extern CRCPolynomial<T> {
    CRCPolynomial(T coeff, bool reversed, bool msb, bool extended, T init, T xor);
}

// W-bit hash unit.
extern Hash<W> {
    Hash(HashAlgorithm_t algo);
    Hash(HashAlgorithm_t algo, CRCPolynomial<_> poly);
    W get<D>(in D data);
}

// Uniform W-bit random numbers.
extern Random<W> {
    Random();
    W get();
}

// ---- extern functions ---------------------------------------------------

extern T max<T>(in T t1, in T t2);
extern T min<T>(in T t1, in T t2);
extern void invalidate<T>(in T field);
// Ingress parser: read the port metadata that precedes the packet.
extern T port_metadata_unpack<T>(packet_in pkt);
extern bit<32> sizeInBits<H>(in H h);
extern bit<32> sizeInBytes<H>(in H h);

// ---- counters and meters ------------------------------------------------

// size counters of width W indexed by I.
@noWarn("unused")
extern Counter<W, I> {
    Counter(bit<32> size, CounterType_t type);
    void count(in I index, @optional in bit<32> adjust_byte_count);
}

// One counter per entry of the table it is attached to.
@noWarn("unused")
extern DirectCounter<W> {
    DirectCounter(CounterType_t type);
    void count(@optional in bit<32> adjust_byte_count);
}

// Colour results are MeterColor_t values.
extern Meter<I> {
    Meter(bit<32> size, MeterType_t type);
    Meter(bit<32> size, MeterType_t type, bit<8> red, bit<8> yellow, bit<8> green);
    bit<8> execute(in I index, in MeterColor_t color, @optional in bit<32> adjust_byte_count);
    bit<8> execute(in I index, @optional in bit<32> adjust_byte_count);
}

extern DirectMeter {
    DirectMeter(MeterType_t type);
    DirectMeter(MeterType_t type, bit<8> red, bit<8> yellow, bit<8> green);
    bit<8> execute(in MeterColor_t color, @optional in bit<32> adjust_byte_count);
    bit<8> execute(@optional in bit<32> adjust_byte_count);
}

// ---- stateful registers -------------------------------------------------

// size cells of type T indexed by I (uninitialised, or initial_value).
extern Register<T, I> {
    Register(bit<32> size);
    Register(bit<32> size, T initial_value);
    T read(in I index);
    void write(in I index, in T value);
}

// One register cell per table entry.
extern DirectRegister<T> {
    DirectRegister();
    DirectRegister(T initial_value);
    T read();
    void write(in T value);
}

// Atomic read-modify-write on one Register cell.  The program instantiates
// it with a body for apply(); execute(index) reads the cell, runs apply on
// it, writes it back and returns rv.
@noWarn("unused")
extern RegisterAction<T, I, U> {
    RegisterAction(Register<_, _> reg);
    U execute(in I index);
    U execute_log();        // index taken from an internal running counter
    @synchronous(execute, execute_log)
    abstract void apply(inout T value, @optional out U rv);
    U predicate(@optional in bool cmplo, @optional in bool cmphi);
}

// Same, on the DirectRegister cell of the matched table entry.
extern DirectRegisterAction<T, U> {
    DirectRegisterAction(DirectRegister<T> reg);
    U execute();
    @synchronous(execute)
    abstract void apply(inout T value, @optional out U rv);
    U predicate(@optional in bool cmplo, @optional in bool cmphi);
}

// ---- table implementations ----------------------------------------------

extern ActionProfile {
    ActionProfile(bit<32> size);
}

extern ActionSelector {
    ActionSelector(ActionProfile action_profile,
                   Hash<_> hash,
                   SelectorMode_t mode,
                   bit<32> max_group_size,
                   bit<32> num_groups);
    ActionSelector(ActionProfile action_profile,
                   Hash<_> hash,
                   SelectorMode_t mode,
                   Register<bit<1>, _> reg,
                   bit<32> max_group_size,
                   bit<32> num_groups);
    @deprecated("Use an ActionSelector built on an ActionProfile")
    ActionSelector(bit<32> size, Hash<_> hash, SelectorMode_t mode);
    @deprecated("Use an ActionSelector built on an ActionProfile")
    ActionSelector(bit<32> size, Hash<_> hash, SelectorMode_t mode, Register<bit<1>, _> reg);
}

// ---- deparser externs ---------------------------------------------------

// Mirror (clone) the packet to a session, optionally prefixed by hdr.
// Used in a deparser when *_for_dprsr.mirror_type equals the instance's type.
extern Mirror {
    @deprecated("Use Mirror(mirror_type): the constructor takes the mirror_type value it serves")
    Mirror();
    Mirror(MirrorType_t mirror_type);
    void emit(in MirrorId_t session_id);
    void emit<T>(in MirrorId_t session_id, in T hdr);
}

// Send the packet back to ingress, optionally carrying hdr (ingress only).
extern Resubmit {
    @deprecated("Use Resubmit(resubmit_type): the constructor takes the resubmit_type value it serves")
    Resubmit();
    Resubmit(ResubmitType_t resubmit_type);
    void emit();
    void emit<T>(in T hdr);
}

// Learn-digest stream to the control plane (ingress deparser).
extern Digest<T> {
    @deprecated("Use Digest(digest_type): the constructor takes the digest_type value it serves")
    Digest();
    Digest(DigestType_t digest_type);
    void pack(in T data);
}

// =========================================================================
// Programmable blocks and packages (tofino1_arch.p4)
// =========================================================================

parser IngressParserT<H, M>(
    packet_in pkt,
    out H hdr,
    out M ig_md,
    @optional out ingress_intrinsic_metadata_t ig_intr_md,
    @optional out ingress_intrinsic_metadata_for_tm_t ig_intr_md_for_tm,
    @optional out ingress_intrinsic_metadata_from_parser_t ig_intr_md_from_prsr);

parser EgressParserT<H, M>(
    packet_in pkt,
    out H hdr,
    out M eg_md,
    @optional out egress_intrinsic_metadata_t eg_intr_md,
    @optional out egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr,
    @optional out egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr);

control IngressT<H, M>(
    inout H hdr,
    inout M ig_md,
    @optional in ingress_intrinsic_metadata_t ig_intr_md,
    @optional in ingress_intrinsic_metadata_from_parser_t ig_intr_md_from_prsr,
    @optional inout ingress_intrinsic_metadata_for_deparser_t ig_intr_md_for_dprsr,
    @optional inout ingress_intrinsic_metadata_for_tm_t ig_intr_md_for_tm);

control EgressT<H, M>(
    inout H hdr,
    inout M eg_md,
    @optional in egress_intrinsic_metadata_t eg_intr_md,
    @optional in egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr,
    @optional inout egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr,
    @optional inout egress_intrinsic_metadata_for_output_port_t eg_intr_md_for_oport);

control IngressDeparserT<H, M>(
    packet_out pkt,
    inout H hdr,
    in M metadata,
    @optional in ingress_intrinsic_metadata_for_deparser_t ig_intr_md_for_dprsr,
    @optional in ingress_intrinsic_metadata_t ig_intr_md);

control EgressDeparserT<H, M>(
    packet_out pkt,
    inout H hdr,
    in M metadata,
    @optional in egress_intrinsic_metadata_for_deparser_t eg_intr_md_for_dprsr,
    @optional in egress_intrinsic_metadata_t eg_intr_md,
    @optional in egress_intrinsic_metadata_from_parser_t eg_intr_md_from_prsr);

// One pipe: ingress parser/control/deparser, then egress ones.
package Pipeline<IH, IM, EH, EM>(
    IngressParserT<IH, IM> ingress_parser,
    IngressT<IH, IM> ingress,
    IngressDeparserT<IH, IM> ingress_deparser,
    EgressParserT<EH, EM> egress_parser,
    EgressT<EH, EM> egress,
    EgressDeparserT<EH, EM> egress_deparser);

// The switch: pipe0 is required; pipes not given run pipe0's program.
// Usually instantiated as  Switch(pipe) main;
@noWarn("unused")
package Switch<IH0, IM0, EH0, EM0, IH1, IM1, EH1, EM1,
               IH2, IM2, EH2, EM2, IH3, IM3, EH3, EM3>(
    Pipeline<IH0, IM0, EH0, EM0> pipe0,
    @optional Pipeline<IH1, IM1, EH1, EM1> pipe1,
    @optional Pipeline<IH2, IM2, EH2, EM2> pipe2,
    @optional Pipeline<IH3, IM3, EH3, EM3> pipe3);

#endif  /* _TOFINO1_NATIVE_ARCHITECTURE_ */
