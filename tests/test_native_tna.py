"""The C backend on tna programs against the Python backend (the reference): seeded
differential tests, as tests/test_native_backend.py does for v1model.

Each program runs in two switches with the same control-plane state, one per backend; every
frame must give identical outputs (frame by frame, or the same DataplaneError), and the
registers identical contents. The INA program gets protocol-valid traffic (rounds, ESA
preemption with priorities, ATP hold and release, duplicates, resends, reminders, multi-level
and overflowing lanes); a feature program covers what INA does not use (mirroring, bypass,
every Hash algorithm, Register.read/write, parser errors, egress drop).
Skipped where no C compiler is installed (the C backend is optional).
"""
from __future__ import annotations

import os
import random
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from controller.ina_tables import InaTables
from hostlib.protocol import Flags, InaHeader, build_frame, parse_frame
from p4sim import Switch, load_program
from p4sim.backend.cgen import CUnsupported, generate_c
from p4sim.runtime import native
from p4sim.runtime.rt import DataplaneError
from tests.test_native_backend import _pair as pair_of_backends
from tests.test_native_backend import _pair_of_source, _private_cache, needs_cc  # noqa: F401 (autouse fixture)

ROOT = Path(__file__).resolve().parents[1]
INA_TNA = ROOT / "p4src" / "tna" / "ina.p4"
P4TNA = ROOT / "tests" / "p4tna"
LANES = 32                       # K of the tna INA program
PS_IP, PS_PORT = "10.0.1.1", 10

def _pair(path: Path) -> tuple[Switch, Switch]:
    return pair_of_backends(path, "tna")


def _run(sw: Switch, port: int, frame: bytes) -> list[tuple[int, bytes]] | str:
    try:
        return sw.process(port, frame)
    except DataplaneError as e:          # the same error, at the same packet, on both
        return f"DataplaneError: {e}"


def _compare(py: Switch, c: Switch, frames: list[tuple[int, bytes]]) -> list[list[tuple[int, bytes]] | str]:
    """Run every frame through both switches; return the (identical) results."""
    results = []
    for i, (port, frame) in enumerate(frames):
        want = _run(py, port, frame)
        got = _run(c, port, frame)
        assert got == want, f"frame {i} (port {port}, {frame.hex()}): python {want} != c {got}"
        results.append(want)
    for name in py.registers:
        size = py.registers[name].size
        assert [c.register_read(name, i) for i in range(size)] == \
            [py.register_read(name, i) for i in range(size)], f"register {name} differs"
    return results


# ---------------------------------------------------------------------------- INA (tna)

JOB_PLAIN, JOB_ESA, JOB_ATP, JOB_TWO_LEVEL = 1, 2, 3, 4
FAN_IN = {JOB_PLAIN: 4, JOB_ESA: 3, JOB_ATP: 4, JOB_TWO_LEVEL: 2}


def _worker_ip(w: int) -> str:
    return f"10.0.0.{w + 1}"


def _program_ina(sw: Switch) -> None:
    """Small pools so that jobs collide, preempt and evict one another."""
    t = InaTables(sw)
    t.add_node(1, pool_base=0, pool_size=4)
    t.add_node(2, pool_base=4, pool_size=2)
    t.add_job(JOB_PLAIN)
    t.add_job(JOB_ESA, preemption=True)
    t.add_job(JOB_ATP, hold_until_result=True)
    t.add_job(JOB_TWO_LEVEL)
    t.add_release(JOB_ATP, 1, pool_base=0, pool_size=4)
    workers = [(w + 1, _worker_ip(w), 0x020000000000 + w) for w in range(4)]
    t.add_result_group(1, workers, rid_base=100)
    t.add_result_group(3, workers, rid_base=300)
    t.level_to_multicast(JOB_PLAIN, 1, 1)
    t.level_to_ps(JOB_ESA, 1)
    t.level_to_multicast(JOB_ATP, 1, 3)
    t.level_to_node(JOB_TWO_LEVEL, 1, 2, 2)
    t.level_to_ps(JOB_TWO_LEVEL, 2)
    for w in range(4):
        t.add_lpm(_worker_ip(w), 32, w + 1, dmac=0x020000000000 + w)
        t.set_smac(w + 1, 0x0A0000000000 + w)
    t.add_lpm(PS_IP, 32, PS_PORT, dmac=0x02000000FFFF)
    t.add_ecmp_route("10.9.0.0", 16, 5, [(11, 0x1), (12, 0x2)])


def _lanes(nprng: np.random.Generator) -> np.ndarray:
    if nprng.random() < 0.1:          # near the int32 limits: saturation and OVERFLOW flags
        return nprng.choice([2**31 - 1, -2**31, 2**30, -2**30, 5], LANES).astype(np.int32)
    return nprng.integers(-1000, 1000, LANES).astype(np.int32)


def _from_worker(h: InaHeader, nprng: np.random.Generator) -> tuple[int, bytes]:
    w = h.worker_id
    return w + 1, build_frame(h, _lanes(nprng), src_ip=_worker_ip(w), dst_ip=PS_IP,
                              src_mac=0x0A0000000000 + w, dst_mac=0x0B0000000000)


def _from_ps(h: InaHeader) -> tuple[int, bytes]:
    return PS_PORT, build_frame(h, np.zeros(LANES, np.int32), src_ip=PS_IP, dst_ip=PS_IP)


def _protocol_rounds(rng: random.Random, rounds: int, first: int = 1) -> list[tuple[int, bytes]]:
    """What workers and the PS send, round after round: every job's fragments from its
    workers in an order that interleaves the jobs, some lost, some duplicated or resent to
    the PS; then the PS's reminders and, for the ATP job, the returning results that release
    held aggregators."""
    nprng = np.random.default_rng(rng.getrandbits(32))
    frames: list[tuple[int, bytes]] = []
    for rnd in range(first, first + rounds):
        sent: list[tuple[int, bytes]] = []
        keys: list[tuple[int, int, int]] = []
        for job, fan_in in FAN_IN.items():
            for frag in rng.sample(range(12), 3):
                prio = rng.choice([1, 2, 4, 8, 16, 64]) if job == JOB_ESA else 0
                keys.append((job, frag, prio))
                for w in range(fan_in):
                    if rng.random() < 0.1:
                        continue                                   # lost on the way
                    flags = Flags.RESEND if rng.random() < 0.05 else Flags(0)
                    h = InaHeader.for_worker(job, 1, job % 2, frag, w, fan_in, prio, flags, rnd)
                    sent.append(_from_worker(h, nprng))
                    if rng.random() < 0.1:
                        sent.append(sent[-1])                      # a retransmitted duplicate
        rng.shuffle(sent)
        frames += sent
        for job, frag, prio in keys:
            if rng.random() < 0.3:
                h = InaHeader(job, 1, job % 2, frag, 255, FAN_IN[job], 0, prio, 0, Flags.REMINDER, rnd)
                frames.append(_from_ps(h))
            if job == JOB_ATP and rng.random() < 0.7:
                full = (1 << FAN_IN[job]) - 1
                h = InaHeader(job, 1, job % 2, frag, 255, FAN_IN[job], FAN_IN[job], 0, full,
                              Flags.RESULT, rnd)
                frames.append(_from_ps(h))
    return frames


@needs_cc
def test_ina_tna_protocol_differential() -> None:
    py, c = _pair(INA_TNA)
    for sw in (py, c):
        _program_ina(sw)
    rng = random.Random(21)
    results = []
    busy = 0
    for rnd in range(1, 41):                  # registers compared after every round
        results += _compare(py, c, _protocol_rounds(rng, 1, first=rnd))
        busy += any(py.register_read("InaIngress.aggregator.agg_bitmap", i) for i in range(6))
    assert busy > 5
    # the traffic exercised what it was built for
    seen = Flags(0)
    multicasts = 0
    for r in results:
        assert isinstance(r, list)
        multicasts += len(r) > 1
        for _, frame in r:
            seen |= parse_frame(frame, LANES).header.flags
    assert multicasts > 10
    for flag in (Flags.RESULT, Flags.COLLISION, Flags.PREEMPTED, Flags.REMINDER, Flags.RESEND,
                 Flags.OVERFLOW):
        assert flag in seen, flag
    # registers written by the control plane (BfRuntime does the same) are seen by C
    for sw in (py, c):
        sw.register_write("InaIngress.aggregator.owner_hi", 2, 0xFFFF0001)
        sw.register_write("InaIngress.lanes.lane_3", 1, (-7, 9))     # lanes 3 and 19 (paired)
    assert c.register_read("InaIngress.lanes.lane_3", 1) == (-7, 9)
    _compare(py, c, _protocol_rounds(random.Random(22), 10, first=41))


@needs_cc
def test_ina_tna_random_and_mutated_frames() -> None:
    from tests.test_native_backend import _ina_frames
    from tests.test_native_backend import _program_ina as program_v1_style
    py, c = _pair(INA_TNA)
    for sw in (py, c):
        program_v1_style(sw, random.Random(1))
    assert sum(bool(r) for r in _compare(py, c, _ina_frames(random.Random(23), 3000))) > 1000


# ---------------------------------------------------------------------------- tests/p4tna programs

def _eth_frames(rng: random.Random, ethers: list[bytes], n: int) -> list[tuple[int, bytes]]:
    return [(rng.randrange(8), rng.choice(ethers) + bytes(rng.getrandbits(8) for _ in range(rng.randrange(24))))
            for _ in range(n)]


@needs_cc
@pytest.mark.parametrize("name", ["agg_basic", "pair_register", "subparser"])
def test_p4tna_programs_differential(name: str) -> None:
    py, c = _pair(P4TNA / f"{name}.p4")
    for sw in (py, c):
        sw.pre.insert_group(1, [(2, 7), (3, 8)])
    ethers = [bytes.fromhex("0000000000020000000000019999"), bytes.fromhex("ffffffffffff0000000000aa88b5"),
              bytes.fromhex("0000000000010000000000aa0800")]
    assert any(_compare(py, c, _eth_frames(random.Random(24), ethers, 2000)))
    if name == "pair_register":          # paired cells written by the control plane
        for sw in (py, c):
            sw.register_write("Ig.pairs", 3, (0xFFFFFFFF, 9))
        assert c.register_read("Ig.pairs", 3) == (0xFFFFFFFF, 9)
        _compare(py, c, _eth_frames(random.Random(25), ethers, 300))
        for sw in (py, c):
            sw.register_reset("Ig.pairs")
        assert c.register_read("Ig.pairs", 3) == (100, 0)


@needs_cc
def test_recirculation_differential(tmp_path: Path) -> None:
    """Recirculated packets (and ones past the pass limit) alike in C and Python."""
    forever = tmp_path / "forever.p4"
    forever.write_text((P4TNA / "recirculate.p4").read_text().replace("hdr.loop.passes < 3", "hdr.loop.passes < 200"))
    rng = random.Random(7)
    eth = bytes.fromhex("0000000000010000000000aa88b6")
    frames = [(rng.randrange(8), eth + bytes([rng.randrange(4), 0]) + rng.randrange(16).to_bytes(2, "big")
               + rng.getrandbits(32).to_bytes(4, "big") + bytes(6)) for _ in range(300)]
    for path in (P4TNA / "recirculate.p4", forever):
        py, c = _pair(path)
        results = _compare(py, c, frames)
        assert any(r for r in results) or path == forever


@needs_cc
def test_register_executed_twice_in_one_pass_is_the_same_error(tmp_path: Path) -> None:
    src = (P4TNA / "agg_basic.p4").read_text().replace(
        "hdr.agg.count = bump.execute(hdr.agg.slot);",
        "hdr.agg.count = bump.execute(hdr.agg.slot); hdr.agg.count = bump.execute(hdr.agg.slot);")
    p = tmp_path / "twice.p4"
    p.write_text(src)
    py, c = _pair(p)
    frame = bytes.fromhex("ffffffffffff0000000000aa88b5") + bytes.fromhex("0005000000170000000000000000000000")
    results = _compare(py, c, [(1, frame), (2, frame)])
    assert all(isinstance(r, str) and "accessed twice in one pipeline pass" in r for r in results)
    assert py.register_read("Ig.sums", 5) == 0x2e         # the writes before the error stay


# ---------------------------------------------------------------------------- tna features

FEATURES_P4 = r"""
// tna features the INA program does not use: mirroring, bypass, every Hash algorithm,
// Register.read/write, parser errors, egress drop, multicast with unicast.
#include <core.p4>
#include <tna.p4>

header bridge_h { bit<8> kind; }
header mirror_h { bit<8> kind; bit<16> key; bit<8> session; }
header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }
header probe_h { bit<8> op; bit<8> arg; bit<16> key; bit<32> data; bit<16> csum; }
header hashes_h {
    bit<32> crc32; bit<16> crc16; bit<8> crc8; bit<64> crc64; bit<8> xor8; bit<16> xor16;
    bit<32> xor32; bit<24> ident; bit<16> ccitt; bit<32> wide; bit<8> top; bit<16> rev;
}
header resub_h { bit<8> op; bit<8> pad; bit<16> key; bit<32> extra; }

struct headers_t { mirror_h mirror; bridge_h bridge; ethernet_h ethernet; probe_h probe; hashes_h hashes; }
struct ig_meta_t { resub_h resub; bit<8> session; }
struct eg_meta_t { }

parser IgParser(packet_in pkt, out headers_t hdr, out ig_meta_t meta,
                out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        transition select(ig_intr_md.resubmit_flag) { 1: parse_resubmit; default: parse_port_md; }
    }
    state parse_resubmit { pkt.extract(meta.resub); transition parse_ethernet; }
    state parse_port_md { pkt.advance(PORT_METADATA_SIZE); transition parse_ethernet; }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x88b6: parse_probe; default: accept; }
    }
    state parse_probe {
        pkt.extract(hdr.probe);
        transition select(hdr.probe.op) { 7: parse_hashes; 0xee: reject; default: accept; }
    }
    state parse_hashes { pkt.extract(hdr.hashes); transition accept; }
}

control Ig(inout headers_t hdr, inout ig_meta_t meta, in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Register<bit<32>, bit<8>>(16) store;
    RegisterAction<bit<32>, bit<8>, bit<32>>(store) swap = {
        void apply(inout bit<32> value, out bit<32> rv) { rv = value; value = hdr.probe.data; }
    };
    Register<bit<16>, bit<8>>(16, 7) plain;
    Register<int<16>, bit<8>>(8, -3) signed_cells;
    Hash<bit<32>>(HashAlgorithm_t.CRC32) h_crc32;
    Hash<bit<16>>(HashAlgorithm_t.CRC16) h_crc16;
    Hash<bit<8>>(HashAlgorithm_t.CRC8) h_crc8;
    Hash<bit<64>>(HashAlgorithm_t.CRC64) h_crc64;
    Hash<bit<8>>(HashAlgorithm_t.XOR8) h_xor8;
    Hash<bit<16>>(HashAlgorithm_t.XOR16) h_xor16;
    Hash<bit<32>>(HashAlgorithm_t.XOR32) h_xor32;
    Hash<bit<24>>(HashAlgorithm_t.IDENTITY) h_ident;
    CRCPolynomial<bit<16>>(0x1021, false, false, false, 0xFFFF, 0) ccitt_poly;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, ccitt_poly) h_ccitt;
    CRCPolynomial<bit<16>>(0x8005, true, false, true, 0x1234, 0x00FF) ext_poly;
    Hash<bit<32>>(HashAlgorithm_t.CUSTOM, ext_poly) h_wide;
    CRCPolynomial<bit<16>>(0x3D65, false, true, false, 0, 0xFFFF) msb_poly;
    Hash<bit<8>>(HashAlgorithm_t.CUSTOM, msb_poly) h_top;
    CRCPolynomial<bit<5>>(0x05, true, false, true, 0x1F, 0x1F) small_poly;
    Hash<bit<16>>(HashAlgorithm_t.CUSTOM, small_poly) h_rev;

    apply {
        ig_tm_md.ucast_egress_port = 2;
        hdr.bridge.setValid();
        hdr.bridge.kind = 0;
        if (ig_prsr_md.parser_err != 0) {
            hdr.ethernet.src = (bit<48>) ig_prsr_md.parser_err;
            ig_tm_md.ucast_egress_port = 9;
        }
        if (!hdr.probe.isValid()) { exit; }
        if (ig_intr_md.resubmit_flag == 1) {
            hdr.probe.data = meta.resub.extra + (bit<32>) meta.resub.key;
            ig_tm_md.ucast_egress_port = 3;
            exit;
        }
        if (hdr.probe.op == 0) {
            ig_tm_md.ucast_egress_port = (PortId_t) hdr.probe.arg;
        } else if (hdr.probe.op == 1) {
            ig_tm_md.mcast_grp_a = (MulticastGroupId_t) hdr.probe.arg;
            ig_tm_md.rid = hdr.probe.key;
            if (hdr.probe.arg == 3) { ig_tm_md.ucast_egress_port = 4; }
        } else if (hdr.probe.op == 2) {
            meta.resub.setValid();
            meta.resub.op = 2;
            meta.resub.key = hdr.probe.key;
            meta.resub.extra = hdr.probe.data;
            ig_dprsr_md.resubmit_type = 1;
        } else if (hdr.probe.op == 3) {
            ig_dprsr_md.mirror_type = 1;
            meta.session = hdr.probe.arg;
            if (hdr.probe.key == 0) { ig_dprsr_md.drop_ctl = 1; }
        } else if (hdr.probe.op == 4) {
            ig_tm_md.bypass_egress = 1;
            ig_tm_md.ucast_egress_port = (PortId_t) hdr.probe.arg;
        } else if (hdr.probe.op == 5) {
            ig_dprsr_md.drop_ctl = 1;
        } else if (hdr.probe.op == 6) {
            hdr.probe.data = swap.execute(hdr.probe.arg);
            if (hdr.probe.key == 99) { hdr.probe.data = swap.execute(hdr.probe.arg); }
        } else if (hdr.probe.op == 7 && hdr.hashes.isValid()) {
            hdr.hashes.crc32 = h_crc32.get({hdr.probe.key, hdr.probe.data});
            hdr.hashes.crc16 = h_crc16.get({hdr.probe.key, hdr.probe.data, hdr.probe.arg});
            hdr.hashes.crc8 = h_crc8.get({hdr.probe.data});
            hdr.hashes.crc64 = h_crc64.get({hdr.ethernet.dst, hdr.probe.data});
            hdr.hashes.xor8 = h_xor8.get({hdr.probe.key, hdr.probe.data});
            hdr.hashes.xor16 = h_xor16.get({hdr.probe.arg, hdr.probe.data});
            hdr.hashes.xor32 = h_xor32.get({hdr.ethernet.src, hdr.probe.key});
            hdr.hashes.ident = h_ident.get({hdr.probe.key, hdr.probe.data});
            hdr.hashes.ccitt = h_ccitt.get({hdr.probe.data});
            hdr.hashes.wide = h_wide.get({hdr.probe.key, hdr.probe.arg});
            hdr.hashes.top = h_top.get({hdr.probe.data, 4w0x5});
            hdr.hashes.rev = h_rev.get({hdr.probe.arg});
        } else if (hdr.probe.op == 8) {
            if (hdr.probe.arg[0:0] == 0) {
                hdr.probe.key = plain.read(hdr.probe.arg);
            } else {
                plain.write(hdr.probe.arg, hdr.probe.key);
            }
        } else if (hdr.probe.op == 9) {
            signed_cells.write(hdr.probe.arg, (int<16>) hdr.probe.key);
        } else if (hdr.probe.op == 10) {
            hdr.probe.data = (bit<32>) (bit<16>) signed_cells.read(hdr.probe.arg);
        }
    }
}

control IgDeparser(packet_out pkt, inout headers_t hdr, in ig_meta_t meta,
                   in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    Resubmit() resubmit;
    Mirror() mirror;
    apply {
        if (ig_dprsr_md.resubmit_type == 1) { resubmit.emit(meta.resub); }
        if (ig_dprsr_md.mirror_type == 1) {
            mirror.emit<mirror_h>((MirrorId_t) meta.session, {8w1, hdr.probe.key, meta.session});
        }
        pkt.emit(hdr.bridge);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.probe);
        pkt.emit(hdr.hashes);
    }
}

parser EgParser(packet_in pkt, out headers_t hdr, out eg_meta_t meta,
                out egress_intrinsic_metadata_t eg_intr_md) {
    state start {
        pkt.extract(eg_intr_md);
        transition select(pkt.lookahead<bit<8>>()) { 1: parse_mirror; default: parse_bridge; }
    }
    state parse_mirror { pkt.extract(hdr.mirror); transition parse_ethernet; }
    state parse_bridge { pkt.extract(hdr.bridge); transition parse_ethernet; }
    state parse_ethernet {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x88b6: parse_probe; default: accept; }
    }
    state parse_probe { pkt.extract(hdr.probe); transition accept; }
}

control Eg(inout headers_t hdr, inout eg_meta_t meta, in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) {
    apply {
        hdr.ethernet.dst[15:0] = eg_intr_md.egress_rid;
        hdr.ethernet.dst[31:16] = eg_intr_md.pkt_length;
        hdr.ethernet.dst[40:32] = eg_intr_md.egress_port;
        if (eg_prsr_md.parser_err != 0) { hdr.ethernet.src[47:32] = eg_prsr_md.parser_err; }
        if (hdr.probe.isValid() && hdr.probe.op == 11) { eg_dprsr_md.drop_ctl = 1; }
    }
}

control EgDeparser(packet_out pkt, inout headers_t hdr, in eg_meta_t meta,
                   in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) {
    Checksum() csum;
    apply {
        hdr.probe.csum = csum.update({hdr.probe.op, hdr.probe.arg, hdr.probe.key, hdr.probe.data});
        pkt.emit(hdr.mirror);
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.probe);
    }
}

Pipeline(IgParser(), Ig(), IgDeparser(), EgParser(), Eg(), EgDeparser()) pipe;
Switch(pipe) main;
"""


def _probe_frames(rng: random.Random, n: int) -> list[tuple[int, bytes]]:
    frames = []
    for _ in range(n):
        eth = rng.getrandbits(48).to_bytes(6, "big") + rng.getrandbits(48).to_bytes(6, "big")
        op = rng.choice([*range(12), 0xEE])
        arg = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 9, 15, rng.getrandbits(8)])
        key = rng.choice([0, 99, rng.getrandbits(16)])
        probe = bytes([op, arg]) + key.to_bytes(2, "big") + rng.getrandbits(32).to_bytes(4, "big") + b"\0\0"
        hashes = bytes(rng.getrandbits(8) for _ in range(34)) if op == 7 else b""
        ether_type = b"\x88\xb6" if rng.random() < 0.9 else b"\x08\x00"
        frame = eth + ether_type + probe + hashes + bytes(rng.getrandbits(8) for _ in range(rng.randrange(8)))
        if rng.random() < 0.1:
            frame = frame[:rng.randrange(len(frame))]         # parser errors (PacketTooShort)
        frames.append((rng.randrange(16), frame))
    return frames


@needs_cc
def test_tna_features_differential(tmp_path: Path) -> None:
    py, c = _pair_of_source(tmp_path, FEATURES_P4, "tna", groups={1: [(2, 7), (3, 8)], 3: [(5, 1)]})
    for sw in (py, c):
        sw.pre.insert_clone_session(4, [(6, 0)])
        sw.pre.insert_clone_session(7, [(6, 2), (7, 3)])
    results = _compare(py, c, _probe_frames(random.Random(26), 4000))
    errors = [r for r in results if isinstance(r, str)]
    assert errors and all("accessed twice" in e for e in errors)
    outputs = [out for r in results if isinstance(r, list) for out in r]
    assert len({port for port, _ in outputs}) >= 8
    assert any(len(r) >= 3 for r in results if isinstance(r, list))    # mirror + multicast copies


def test_program_with_an_unsupported_extern_falls_back_under_auto(tmp_path: Path) -> None:
    src = (P4TNA / "agg_basic.p4").read_text().replace(
        "Hash<bit<16>>(HashAlgorithm_t.CRC16) slot_hash;",
        "Hash<bit<16>>(HashAlgorithm_t.CRC16) slot_hash; Random<bit<16>>() rnd;").replace(
        "hdr.agg.hash = slot_hash.get({hdr.agg.slot, hdr.agg.value});",
        "hdr.agg.hash = rnd.get();")
    p = tmp_path / "random.p4"
    p.write_text(src)
    prog = load_program(str(p), arch="tna")
    assert Switch(prog, backend="auto").backend == "python"
    with pytest.raises(CUnsupported, match="unsupported for the C backend"):
        Switch(prog, backend="c")


@needs_cc
def test_generated_tna_c_is_warning_free(tmp_path: Path) -> None:
    features = tmp_path / "features.p4"
    features.write_text(FEATURES_P4)
    for path in (INA_TNA, P4TNA / "pair_register.p4", features):
        source = generate_c(load_program(str(path), arch="tna").compiled, str(path)).source
        c_file = tmp_path / "prog.c"
        c_file.write_text(source)
        r = subprocess.run([shutil.which(os.environ.get("CC") or "cc"), *native.CFLAGS, "-o",
                            str(tmp_path / "prog.so"), str(c_file)], capture_output=True, text=True)
        assert r.returncode == 0 and "warning" not in r.stderr, r.stderr[:2000]
