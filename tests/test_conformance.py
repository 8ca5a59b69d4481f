"""Regressions from the conformance sweep over public P4_16 programs (p4lang/tutorials, p4c
testdata, p4-guide, p4-learning, Open-Tofino examples). The v1model ones are STF programs in
tests/p4/conformance_*.p4; here: TNA externs, P4Info, and load-time errors."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import p4sim.p4runtime  # noqa: F401  (protobuf backend first)
from p4sim import CompileError, Switch, load_program
from p4sim.p4info import build_p4info
from p4control.model import ActionCall, Exact, TableEntry

from p4.config.v1 import p4info_pb2  # noqa: E402

HERE = Path(__file__).parent

TNA_PROG = """
#include <core.p4>
#include <tna.p4>
header eth_h { bit<48> dst; bit<48> src; bit<16> type; }
header port_md_h { bit<16> tag; bit<16> pad; }    // the first 32 of the 64 port metadata bits
header res_h { bit<16> tag; bit<8> size; }
header br_h { bit<8> kind; @flexible PortId_t port; }   // 17 bits: bf-p4c pads @flexible headers
struct hdr_t { eth_h eth; res_h res; br_h br; }
struct md_t { port_md_h pmd; }
parser IP(packet_in pkt, out hdr_t hdr, out md_t md, out ingress_intrinsic_metadata_t ig_intr_md) {
    state start {
        pkt.extract(ig_intr_md);
        md.pmd = port_metadata_unpack<port_md_h>(pkt);
        pkt.extract(hdr.eth);
        transition accept;
    }
}
control Ig(inout hdr_t hdr, inout md_t md, in ingress_intrinsic_metadata_t ig_intr_md,
           in ingress_intrinsic_metadata_from_parser_t ig_prsr_md,
           inout ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md,
           inout ingress_intrinsic_metadata_for_tm_t ig_tm_md) {
    Counter<bit<32>, bit<8>>(16, CounterType_t.PACKETS_AND_BYTES) cnt;
    DirectCounter<bit<32>>(CounterType_t.PACKETS) dcnt;
    action hit(PortId_t port) { dcnt.count(); ig_tm_md.ucast_egress_port = port; }
    table fwd {
        key = { hdr.eth.dst : exact; }
        actions = { hit; @defaultonly NoAction; }
        counters = dcnt;
    }
    apply {
        cnt.count(1);
        cnt.count(2, 32w0xfffffff6);          // adjust_byte_count -10
        fwd.apply();
        hdr.res.setValid();
        hdr.res.tag = md.pmd.tag;
        hdr.res.size = (bit<8>) sizeInBytes(hdr.eth);
        hdr.br.setValid();
        hdr.br.kind = 0x5a;
        hdr.br.port = ig_intr_md.ingress_port;
        ig_tm_md.bypass_egress = 1;
    }
}
control IgD(packet_out pkt, inout hdr_t hdr, in md_t md,
            in ingress_intrinsic_metadata_for_deparser_t ig_dprsr_md) {
    apply { pkt.emit(hdr); }
}
struct e_hdr_t { }
struct e_md_t { }
parser EP(packet_in pkt, out e_hdr_t hdr, out e_md_t md, out egress_intrinsic_metadata_t eg_intr_md) {
    state start { pkt.extract(eg_intr_md); transition accept; }
}
control Eg(inout e_hdr_t hdr, inout e_md_t md, in egress_intrinsic_metadata_t eg_intr_md,
           in egress_intrinsic_metadata_from_parser_t eg_prsr_md,
           inout egress_intrinsic_metadata_for_deparser_t eg_dprsr_md,
           inout egress_intrinsic_metadata_for_output_port_t eg_oport_md) { apply { } }
control EgD(packet_out pkt, inout e_hdr_t hdr, in e_md_t md,
            in egress_intrinsic_metadata_for_deparser_t eg_dprsr_md) { apply { } }
Pipeline(IP(), Ig(), IgD(), EP(), Eg(), EgD()) pipe;
Switch(pipe) main;
"""


def _write(tmp_path: Path, src: str, name: str = "prog.p4") -> str:
    p = tmp_path / name
    p.write_text(src)
    return str(p)


def test_tna_counters_port_metadata_and_sizes(tmp_path: Path) -> None:
    # Open-Tofino tna_counter / tna_resubmit / tna_mirror style: Counter.count(index[,
    # adjust_byte_count]), DirectCounter.count() in the table's actions, port_metadata_unpack,
    # sizeInBytes, a header with @flexible fields (kept in order, zero-padded to 3 bytes)
    sw = Switch(load_program(_write(tmp_path, TNA_PROG), arch="tna"))
    sw.table_insert("Ig.fwd", TableEntry({"hdr.eth.dst": Exact(2)}, ActionCall("Ig.hit", {"port": 5})))
    frame = bytes.fromhex("000000000002 000000000001 0800".replace(" ", "")) + bytes(10)
    outs = sw.process(1, frame)
    # res: tag 0 (port metadata), size 14; br: 5a, port 1 in 9 bits, 7 pad bits
    assert outs == [(5, frame[:14] + bytes([0, 0, 14, 0x5a, 0x00, 0x80]) + frame[14:])]
    assert sw.counter_read("Ig.cnt", 1) == (1, len(frame))
    assert sw.counter_read("Ig.cnt", 2) == (1, len(frame) - 10)
    assert sw.direct_counter_read("Ig.fwd", {"hdr.eth.dst": Exact(2)})[0] == 1


def test_tna_direct_counter_adjust_is_a_clear_error(tmp_path: Path) -> None:
    src = TNA_PROG.replace("dcnt.count();", "dcnt.count(32w4);")
    with pytest.raises(CompileError, match=r"prog\.p4:\d+:\d+: DirectCounter.count\(adjust_byte_count\) is not supported"):
        load_program(_write(tmp_path, src), arch="tna")


def test_implicit_noaction_is_a_defaultonly_action_of_the_table() -> None:
    # as p4c: a table without default_action gets NoAction, listed as @defaultonly
    info = load_program(str(HERE / "p4" / "conformance_tables.p4")).info
    t = info.tables["Ing.no_default"]
    assert t.default_action.name == "NoAction"
    assert [(r.name, r.default_only) for r in t.actions] == [("Ing.fwd", False), ("NoAction", True)]
    p4i = build_p4info(info)
    table = next(x for x in p4i.tables if x.preamble.name == "Ing.no_default")
    noaction = next(a for a in p4i.actions if a.preamble.name == "NoAction")
    ref = next(r for r in table.action_refs if r.id == noaction.preamble.id)
    assert ref.scope == p4info_pb2.ActionRef.DEFAULT_ONLY


PRELUDE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<8> b; }
struct hs_t { h_t h; }
struct m_t { bit<8> x; error e; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control Eg(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
"""
MAIN = "V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;\n"


@pytest.mark.parametrize("top, body, message", [
    ("", "action set(out bit<8> d, bit<8> v) { d = v; }"
         " table t { key = { hdr.h.a : exact; } actions = { set; } } apply { t.apply(); }",
     "the actions list must bind its 1 directional parameter(s), it gives 0"),
    ("", "action set(out bit<8> d, bit<8> v) { d = v; }"
         " table t { key = { hdr.h.a : exact; } actions = { set(hdr.h.a, 1); } } apply { t.apply(); }",
     "the actions list must bind its 1 directional parameter(s), it gives 2"),
    ("", "apply { meta.x = (bit<8>) meta.minSizeInBytes(); }", "minSizeInBytes(): m_t has no fixed size"),
    ("", "apply { resubmit({meta.x}); }", "resubmit: unknown extern function"),
    ("", "apply { resubmit({}); }", "use resubmit_preserving_field_list and @field_list"),
    ("", "apply { clone3(CloneType.I2E, 32w5, {}); }", "clone3: unknown extern function"),
    # constructs from p4c's corpus that cannot work are rejected clearly
    ("", "apply { Ing.apply(hdr, meta, sm); }",
     "Ing is instantiated or applied inside itself (recursion)"),
    ("", "apply { hs_t.apply(); }", "'hs_t' is not a control or parser declaration"),
    ("control K(inout bit<8> v)(bit<8> k) { apply { } }", "apply { K.apply(meta.x); }",
     "K has constructor parameters: instantiate it to apply it"),
    ("control K(inout bit<8> v)(VC c) { apply { } }", "K(meta) k; apply { k.apply(meta.x); }",
     "constructor parameter 'c' of type VC needs the name of a control instance"),
    ("", "action a() { Eg.apply(hdr, meta, sm); } apply { a(); }", "Eg.apply() is not allowed in an action"),
    ("", "apply { hdr.h.a += true; }", "type mismatch: bit<8> and bool"),
    ("", "apply { hdr.h += 1; }", "operator + is not defined on h_t"),
    ("header v2_t { varbit<8> a; varbit<8> b; }", "apply { }", "header v2_t has more than one varbit field"),
    ("struct vs_t { varbit<8> z; }", "apply { }", "field 'z': varbit fields are only supported in headers"),
    ("header v3_t { bit<4> n; varbit<8> o; }", "apply { }",
     "header v3_t: its fixed fields are 4 bits"),
])
def test_load_errors(tmp_path: Path, top: str, body: str, message: str) -> None:
    src = PRELUDE + top + "\ncontrol Ing(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {\n" \
        + body + "\n}\n" + MAIN
    with pytest.raises(CompileError) as ei:
        load_program(_write(tmp_path, src))
    assert message in str(ei.value)
    assert str(ei.value).startswith(str(tmp_path / "prog.p4") + ":")


def test_compile_command_builds_the_switch(tmp_path: Path) -> None:
    # `python -m p4sim compile` checks what a Switch needs too (tables, default actions)
    r = subprocess.run([sys.executable, "-m", "p4sim", "compile", "-q", str(HERE / "p4" / "conformance_tables.p4")],
                       capture_output=True, text=True, cwd=HERE.parent)
    assert r.returncode == 0, r.stderr
