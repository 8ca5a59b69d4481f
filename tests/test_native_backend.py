"""The C backend against the Python backend (the reference): seeded differential tests.

Each program runs in two switches with the same control-plane state, one per backend; every
frame (random bytes, protocol-valid frames with random fields, and mutations of those) must
give identical outputs, frame by frame, and the registers identical contents at the end.
Skipped where no C compiler is installed (the C backend is optional).
"""
from __future__ import annotations

import os
import random
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from controller.ina_tables import InaTables
from hostlib.protocol import Flags, InaHeader, build_frame
from p4sim import CompileError, Switch, load_program
from p4sim.backend.cgen import CUnsupported, generate_c
from p4sim.runtime import native
from p4control.model import ActionCall, Exact, Lpm, TableEntry

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks" / "p4"
INA_V1MODEL = ROOT / "p4src" / "v1model" / "ina.p4"

needs_cc = pytest.mark.skipif(shutil.which(os.environ.get("CC") or "cc") is None,
                              reason="no C compiler: the C backend is unavailable")


@pytest.fixture(autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    # one cache for this module's tests, never the user's ~/.cache
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "p4sim-cache"))


def _pair(path: Path, arch: str = "v1model") -> tuple[Switch, Switch]:
    """The program in two switches, one per backend."""
    prog = load_program(str(path), arch=arch)
    py, c = Switch(prog, backend="python"), Switch(prog, backend="c")
    assert (py.backend, c.backend) == ("python", "c")
    return py, c


def _pair_of_source(tmp_path: Path, source: str, arch: str = "v1model",
                    groups: dict[int, list[tuple[int, int]]] | None = None) -> tuple[Switch, Switch]:
    """_pair of a program given as text, with the same multicast groups in both."""
    path = tmp_path / "program.p4"
    path.write_text(source)
    py, c = _pair(path, arch)
    for sw in (py, c):
        for group, replicas in (groups or {}).items():
            sw.pre.insert_group(group, replicas)
    return py, c


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    b = bytearray(frame)
    op = rng.randrange(4)
    if op == 0 and b:                                  # flip a few bytes
        for _ in range(rng.randint(1, 4)):
            b[rng.randrange(len(b))] = rng.getrandbits(8)
    elif op == 1:                                      # truncate
        del b[rng.randrange(len(b) + 1):]
    elif op == 2:                                      # append garbage
        b += bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 40)))
    else:                                              # set one field-sized chunk to extremes
        if len(b) > 4:
            i = rng.randrange(len(b) - 4)
            b[i:i + 4] = rng.choice([b"\xff\xff\xff\xff", b"\x00\x00\x00\x00", b"\x7f\xff\xff\xff",
                                     b"\x80\x00\x00\x00"])
    return bytes(b)


def _compare(py: Switch, c: Switch, frames: list[tuple[int, bytes]]) -> int:
    """Run every frame through both switches; return how many produced output."""
    produced = 0
    for i, (port, frame) in enumerate(frames):
        want = py.process(port, frame)
        got = c.process(port, frame)
        assert got == want, f"frame {i} (port {port}, {frame.hex()}): python {want} != c {got}"
        produced += bool(want)
    for name, reg in py.registers.items():
        assert list(c.registers[name].values) == list(reg.values), f"register {name} differs"
    return produced


# ---------------------------------------------------------------------------- bench programs

def _ipv4(rng: random.Random, dst: int, ttl: int | None = None) -> bytes:
    eth = rng.getrandbits(48).to_bytes(6, "big") + rng.getrandbits(48).to_bytes(6, "big") + b"\x08\x00"
    ihl = rng.choice([5, 5, 5, 6, 4])
    ip = bytes([0x40 | ihl, rng.getrandbits(8)]) + rng.getrandbits(16).to_bytes(2, "big")
    ip += rng.getrandbits(32).to_bytes(4, "big")
    ip += bytes([rng.choice([0, 1, 2, 64, 255]) if ttl is None else ttl, rng.getrandbits(8)])
    ip += rng.getrandbits(16).to_bytes(2, "big") + rng.getrandbits(32).to_bytes(4, "big") + dst.to_bytes(4, "big")
    return eth + ip + bytes(rng.getrandbits(8) for _ in range(rng.randrange(40)))


def _program_l3(sw: Switch, rng: random.Random, prefixes: list[tuple[int, int]]) -> None:
    for i, (value, plen) in enumerate(prefixes):
        sw.table_insert("Ing.ipv4_lpm", TableEntry({"hdr.ipv4.dst": Lpm(value, plen)},
                                                   ActionCall("Ing.set_nexthop", {"nexthop": i % 64})))
    for nh in range(0, 64, 3):                        # some next hops missing: table misses
        sw.table_insert("Ing.nexthop", TableEntry({"meta.nexthop": Exact(nh)},
                        ActionCall("Ing.set_port_dmac", {"port": nh % 9, "dmac": 0x020000000000 + nh})))
    for port in range(6):
        sw.table_insert("Ing.smac", TableEntry({"sm.egress_spec": Exact(port)},
                                               ActionCall("Ing.set_smac", {"smac": 0x0A0000000000 + port})))


@needs_cc
def test_l3_router_differential() -> None:
    rng = random.Random(11)
    prefixes: set[tuple[int, int]] = set()
    while len(prefixes) < 2000:
        plen = rng.choice((0, 8, 16, 20, 24, 24, 31, 32))
        prefixes.add(((rng.getrandbits(32) >> (32 - plen)) << (32 - plen) if plen else 0, plen))
    ordered = sorted(prefixes)
    py, c = _pair(BENCH / "l3_router.p4")
    for sw in (py, c):
        _program_l3(sw, rng, ordered)
    frames: list[tuple[int, bytes]] = []
    for _ in range(3000):
        kind = rng.random()
        if kind < 0.5:
            value, plen = ordered[rng.randrange(len(ordered))]
            frame = _ipv4(rng, value | (rng.getrandbits(32 - plen) if plen < 32 else 0))
        elif kind < 0.7:
            frame = _ipv4(rng, rng.getrandbits(32))
        elif kind < 0.85:
            frame = _mutate(rng, _ipv4(rng, ordered[rng.randrange(len(ordered))][0]))
        else:
            frame = bytes(rng.getrandbits(8) for _ in range(rng.randrange(64)))
        frames.append((rng.randrange(8), frame))
    assert _compare(py, c, frames) > 400
    # control-plane changes while packets flow: deletes, a new default, a modify
    for sw in (py, c):
        for value, plen in ordered[:500]:
            sw.table_delete("Ing.ipv4_lpm", {"hdr.ipv4.dst": Lpm(value, plen)})
        sw.table_set_default("Ing.smac", ActionCall("Ing.set_smac", {"smac": 0x0C0000000001}))
        sw.table_modify("Ing.nexthop", TableEntry({"meta.nexthop": Exact(3)},
                                                  ActionCall("Ing.set_port_dmac", {"port": 7, "dmac": 5})))
    assert _compare(py, c, frames) > 200


@needs_cc
def test_registers64_differential() -> None:
    rng = random.Random(12)
    py, c = _pair(BENCH / "registers64.p4")
    eth = bytes.fromhex("00aabbccddee001122334455") + b"\x88\xb5"
    frames = []
    for _ in range(3000):
        index = rng.choice([rng.randrange(1024), rng.randrange(1020, 1030), 0xFFFFFFFF])
        value = rng.choice([rng.getrandbits(32), 0xFFFFFFFF, 1])
        frame = eth + struct.pack("!II", index, value)
        if rng.random() < 0.1:
            frame = _mutate(rng, frame)
        frames.append((rng.randrange(4), frame))
    assert _compare(py, c, frames) > 2500
    # the control plane reads and writes the very cells the C code uses
    c.register_write("Ing.r5", 7, 0xDEADBEEF)
    py.register_write("Ing.r5", 7, 0xDEADBEEF)
    frame = eth + struct.pack("!II", 7, 1)
    assert c.process(1, frame) == py.process(1, frame)
    assert c.register_read("Ing.r5", 7) == py.register_read("Ing.r5", 7) == 0xDEADBEEF + 1
    c.register_reset("Ing.r5")
    py.register_reset("Ing.r5")
    assert _compare(py, c, frames[:200]) == 200


# ---------------------------------------------------------------------------- INA (v1model)

def _program_ina(sw: Switch, rng: random.Random) -> None:
    t = InaTables(sw)
    t.add_node(1, pool_base=0, pool_size=16)
    t.add_node(2, pool_base=16, pool_size=8, pipe=0)
    t.add_job(1)
    t.add_job(2, preemption=True)
    t.add_job(3, hold_until_result=True)
    t.add_release(3, 1, pool_base=0, pool_size=16)
    t.add_result_group(1, [(w + 1, f"10.0.0.{w + 1}", 0x020000000000 + w) for w in range(4)], rid_base=100)
    t.add_result_group(3, [(w + 1, f"10.0.0.{w + 1}", 0x020000000000 + w) for w in range(2)], rid_base=300)
    t.level_to_multicast(1, 1, 1)
    t.level_to_node(2, 1, 2, 2)
    t.level_to_ps(2, 2)
    t.level_to_multicast(3, 1, 3)
    for w in range(4):
        t.add_lpm(f"10.0.0.{w + 1}", 32, w + 1, dmac=0x020000000000 + w)
        t.set_smac(w + 1, 0x0A0000000000 + w)
    t.add_lpm("10.0.1.1", 32, 10, dmac=0x02000000FFFF)
    t.add_ecmp_route("10.9.0.0", 16, 5, [(11, 0x1), (12, 0x2)])
    t.add_route(2, 9, 0x99, node_id=2, flags=0)


def _ina_frames(rng: random.Random, n: int) -> list[tuple[int, bytes]]:
    frames = []
    nprng = np.random.default_rng(rng.getrandbits(32))
    for _ in range(n):
        job = rng.choice([1, 1, 1, 2, 3, 4])
        worker = rng.randrange(4)
        flags = Flags(rng.choice([0, 0, 0, 1, 2, 4, 8, 16, 32, rng.getrandbits(6)]))
        h = InaHeader(job, rng.choice([1, 1, 2, 3]), rng.randrange(2), rng.randrange(12), worker,
                      rng.choice([2, 4, 4]), rng.choice([1, 1, 2, 4]), rng.randrange(4),
                      rng.choice([1 << worker, rng.getrandbits(32)]), flags, rng.randrange(3))
        big = rng.random() < 0.2
        lanes = nprng.integers(-2**31 if big else -1000, 2**31 - 1 if big else 1000, 64).astype(np.int32)
        dst = rng.choice(["10.0.1.1", "10.0.1.1", "10.9.3.4", "10.0.0.2", "192.168.0.1"])
        frame = build_frame(h, lanes, src_ip=f"10.0.0.{worker + 1}", dst_ip=dst,
                            src_mac=0x0A0000000000 + worker, dst_mac=0x0B0000000000)
        r = rng.random()
        if r < 0.1:
            frame = _mutate(rng, frame)
        elif r < 0.13:
            frame = bytes(rng.getrandbits(8) for _ in range(rng.randrange(400)))
        frames.append((worker + 1 if rng.random() < 0.9 else rng.randrange(16), frame))
    return frames


@needs_cc
def test_ina_v1model_differential() -> None:
    rng = random.Random(13)
    py, c = _pair(INA_V1MODEL)
    for sw in (py, c):
        _program_ina(sw, random.Random(1))
    frames = _ina_frames(rng, 4000)
    assert _compare(py, c, frames) > 1000
    # registers written by the control plane (P4Runtime does the same) are seen by C
    for sw in (py, c):
        sw.register_write("InaIngress.aggregator.agg_owner", 3, (1 << 79) | 12345)
        sw.register_write("InaIngress.aggregator.agg_lanes", 5, (1 << 32) - 7)   # -7 as bit<32>
    assert c.register_read("InaIngress.aggregator.agg_owner", 3) == (1 << 79) | 12345
    assert c.register_read("InaIngress.aggregator.agg_lanes", 5) == (1 << 32) - 7
    assert _compare(py, c, _ina_frames(rng, 1000)) > 200


# ---------------------------------------------------------------------------- v1model externs

TRUNCATE_P4 = r"""
#include <core.p4>
#include <v1model.p4>
header ethernet_t { bit<48> dst; bit<48> src; bit<16> ether_type; }
header cut_t { bit<8> port; bit<8> ingress_len; bit<8> egress_len; bit<8> mcast; }
struct headers_t { ethernet_t ethernet; cut_t cut; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) { 0x88b7: parse_cut; default: accept; }
    }
    state parse_cut { pkt.extract(hdr.cut); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t meta) { apply { } }
control Ing(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = (bit<9>) hdr.cut.port;
        if (hdr.cut.mcast != 0) { sm.mcast_grp = (bit<16>) hdr.cut.mcast; }
        // an ingress truncate() has no effect (bmv2 and p4sim truncate in egress only)
        if (hdr.cut.ingress_len != 0) { truncate((bit<32>) hdr.cut.ingress_len); }
    }
}
control Eg(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply {
        if (hdr.cut.egress_len != 0) { truncate((bit<32>) hdr.cut.egress_len + (bit<32>) sm.egress_rid); }
    }
}
control CC(inout headers_t hdr, inout meta_t meta) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr); } }
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""


@needs_cc
def test_truncate_differential(tmp_path: Path) -> None:
    py, c = _pair_of_source(tmp_path, TRUNCATE_P4, groups={3: [(1, 0), (2, 5), (4, 9)]})
    rng = random.Random(14)
    frames = []
    for _ in range(2000):
        cut = bytes([rng.randrange(6), rng.choice([0, 0, 10, 40]), rng.choice([0, 1, 14, 20, 30, 200]),
                     rng.choice([0, 0, 0, 3, 7])])
        frame = bytes(12) + b"\x88\xb7" + cut + bytes(rng.getrandbits(8) for _ in range(rng.randrange(60)))
        frames.append((1, _mutate(rng, frame) if rng.random() < 0.1 else frame))
    assert _compare(py, c, frames) > 1000
    long = bytes(12) + b"\x88\xb7" + bytes([2, 10, 20, 0]) + bytes(50)
    assert c.process(1, long) == py.process(1, long) == [(2, long[:20])]   # egress's length wins
    to_group = bytes(12) + b"\x88\xb7" + bytes([2, 0, 14, 3]) + bytes(50)
    assert [len(f) for _, f in c.process(1, to_group)] == [14, 19, 23]       # 14 + egress_rid


# ---------------------------------------------------------------------------- selection, errors

@needs_cc
def test_generated_c_is_warning_free(tmp_path: Path) -> None:
    for path in (BENCH / "l3_router.p4", BENCH / "registers64.p4", INA_V1MODEL):
        source = generate_c(load_program(str(path)).compiled, str(path)).source
        c_file = tmp_path / "prog.c"
        c_file.write_text(source)
        r = subprocess.run([shutil.which(os.environ.get("CC") or "cc"), *native.CFLAGS, "-o",
                            str(tmp_path / "prog.so"), str(c_file)], capture_output=True, text=True)
        assert r.returncode == 0 and "warning" not in r.stderr, r.stderr[:2000]


@needs_cc
def test_shared_library_is_cached_by_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path / "cache"))
    source = generate_c(load_program(str(BENCH / "registers64.p4")).compiled, "r64").source
    first = native.build_shared_library(source)
    again = native.build_shared_library(source)
    assert first.path == again.path and first.path.parent == tmp_path / "cache"
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [first.path.name]   # no temp files left


@needs_cc
def test_the_same_program_from_another_directory_reuses_the_build(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipeline pushed over P4Runtime is written to a fresh temporary directory each time:
    its C build must be found in the cache, not compiled again."""
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(tmp_path / "cache"))
    text = (BENCH / "registers64.p4").read_text()
    builds = []
    for where in ("first", "second/deeper"):
        path = tmp_path / where / "pushed.p4"
        path.parent.mkdir(parents=True)
        path.write_text(text)
        builds.append(native.load_native(load_program(str(path))).build)
    assert builds[0].path == builds[1].path
    assert builds[1].warnings == ""                       # "" means: taken from the cache
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [builds[0].path.name]


def test_cache_keeps_the_most_recently_used_builds_within_its_bound(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    cache.mkdir()
    for i, name in enumerate(["old", "mid", "new"]):
        f = cache / f"p4sim-{name}.so"
        f.write_bytes(b"x" * 1000)
        os.utime(f, (1000 + i, 1000 + i))
    (cache / "unrelated.txt").write_text("not ours")
    removed = native.prune_cache(2500, directory=cache)
    assert [p.name for p in removed] == ["p4sim-old.so"]
    assert sorted(p.name for p in cache.iterdir()) == ["p4sim-mid.so", "p4sim-new.so", "unrelated.txt"]
    # the build in use stays even when it alone exceeds the bound
    native.prune_cache(0, keep=cache / "p4sim-mid.so", directory=cache)
    assert sorted(p.name for p in cache.iterdir()) == ["p4sim-mid.so", "unrelated.txt"]


def test_cache_command_shows_and_clears_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    from p4sim.__main__ import main
    cache = tmp_path / "cache"
    cache.mkdir()
    (cache / "p4sim-a.so").write_bytes(b"x" * 2**20)
    monkeypatch.setenv("P4SIM_CACHE_DIR", str(cache))
    monkeypatch.setenv("P4SIM_CACHE_MAX_MB", "64")
    assert main(["cache"]) == 0
    assert capsys.readouterr().out.strip() == f"{cache}: 1 build(s), 1.0 MB (bound 64 MB)"
    assert main(["cache", "--clear"]) == 0
    assert capsys.readouterr().out.strip() == f"{cache}: removed 1 build(s)"
    assert list(cache.iterdir()) == []
    monkeypatch.setenv("P4SIM_CACHE_MAX_MB", "lots")
    assert main(["cache"]) == 2
    assert "P4SIM_CACHE_MAX_MB='lots' is not a number of megabytes" in capsys.readouterr().err


@needs_cc
def test_unsupported_construct_is_named_with_its_position(tmp_path: Path) -> None:
    src = (ROOT / "tests" / "p4misc" / "legacy_externs.p4")
    prog = load_program(str(src))
    with pytest.raises(CUnsupported) as e:
        Switch(prog, backend="c")
    msg = str(e.value)
    assert "unsupported for the C backend: counter.count" in msg and str(src) in msg
    assert "\n" not in msg
    assert Switch(prog, backend="auto").backend == "python"


@pytest.mark.parametrize("name, construct, line", [
    ("stacks", "header stacks", 43),               # parser: extract(hdr.items.next)
    ("tables", "direct counters", 118),            # the apply of a table with a direct counter
    ("unions", "header_union addr_u", 23),         # the declaration
])
def test_unsupported_construct_found_in_generated_code_is_named_by_its_p4_line(
        name: str, construct: str, line: int) -> None:
    """Constructs the C backend meets only in the generated code are reported at the P4
    statement or declaration they came from (position markers), in P4 terms."""
    src = ROOT / "tests" / "p4" / f"{name}.p4"
    with pytest.raises(CUnsupported) as e:
        generate_c(load_program(str(src)).compiled, str(src))
    assert str(e.value).startswith(f"{src}:{line}:")
    assert str(e.value).endswith(f"unsupported for the C backend: {construct}")


def test_no_compiler_means_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CC", "/nonexistent/cc")
    prog = load_program(str(BENCH / "registers64.p4"))
    assert Switch(prog, backend="auto").backend == "python"
    with pytest.raises(native.NativeUnavailable, match="no C compiler"):
        Switch(load_program(str(BENCH / "registers64.p4")), backend="c")


@needs_cc
def test_default_is_c_where_supported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("P4SIM_BACKEND", raising=False)
    assert Switch(load_program(str(BENCH / "registers64.p4"))).backend == "c"
    assert Switch(load_program(str(ROOT / "p4src" / "tna" / "ina.p4"), arch="tna")).backend == "c"


def test_backend_from_environment_and_bad_name(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("P4SIM_BACKEND", "python")
    assert Switch(load_program(str(BENCH / "registers64.p4"))).backend == "python"
    with pytest.raises(CompileError, match="unknown backend 'fast'"):
        Switch(load_program(str(BENCH / "registers64.p4")), backend="fast")


@needs_cc
def test_cli_forced_c_on_unsupported_program_is_one_line() -> None:
    prog = ROOT / "tests" / "p4misc" / "legacy_externs.p4"
    r = subprocess.run([sys.executable, "-m", "p4sim", "compile", "-q", "--backend", "c", str(prog)],
                       capture_output=True, text=True, cwd=ROOT)
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "unsupported for the C backend" in r.stderr, r.stderr
