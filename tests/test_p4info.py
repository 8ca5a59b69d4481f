"""P4Info generation: p4c-compatible ids, aliases and message contents."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import p4sim.p4runtime  # noqa: F401  (protobuf backend first)
from p4sim.errors import CompileError
from p4sim.p4info import (build_p4info, explicit_id, format_p4info, jenkins_one_at_a_time,
                          main, map_value, p4info_differences, p4info_message_class)
from p4control.model import (ActionCall, ActionInfo, ActionParam, ActionRef,
                             ControllerHeader, CounterInfo, DigestInfo, Exact, KeyField,
                             MeterInfo, ProgramInfo, RegisterInfo, StructField, TableEntry,
                             TableInfo, ValueSetInfo)

from google.protobuf import json_format, text_format  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402

PROGRAM = Path(__file__).parent / "p4rt" / "p4rt_test.p4"
ROOT = Path(__file__).resolve().parent.parent

MatchField = p4info_pb2.MatchField
ActionRefPb = p4info_pb2.ActionRef


def p4c_id(prefix: int, name: str) -> int:
    return (prefix << 24) | (jenkins_one_at_a_time(name.encode()) & 0xFFFFFF)


# Ids copied from p4c output: p4lang/tutorials basic.p4 and p4c's
# testdata/p4_16_samples_outputs/fabric_20190420/fabric.p4.p4info.txtpb.
@pytest.mark.parametrize("prefix,name,expected", [
    (0x02, "MyIngress.ipv4_lpm", 37375156),
    (0x01, "NoAction", 21257015),
    (0x01, "MyIngress.drop", 25652968),
    (0x01, "MyIngress.ipv4_forward", 28792405),
    (0x01, "nop", 28485346),
    (0x02, "FabricIngress.acl.acl", 44104738),
    (0x12, "FabricIngress.port_counters_control.egress_port_counter", 314528581),
    (0x13, "FabricIngress.acl.acl_counter", 319194241),
    (0x11, "FabricIngress.next.hashed_selector", 291115404),
    (0x04, "packet_in_header_t", 81826293),
    (0x04, "packet_out_header_t", 76689799),
])
def test_ids_match_p4c(prefix, name, expected):
    assert p4c_id(prefix, name) == expected


def fabric_like() -> ProgramInfo:
    """A slice of fabric.p4 whose P4Info p4c has published (ids above)."""
    info = ProgramInfo(arch="v1model")
    for name, params in [("nop", []),
                         ("FabricIngress.acl.set_next_id_acl", [ActionParam("next_id", 32)]),
                         ("FabricIngress.acl.punt_to_cpu", []),
                         ("FabricIngress.acl.drop", []),
                         ("FabricIngress.acl.nop_acl", [])]:
        info.actions[name] = ActionInfo(name, params)
    info.tables["FabricIngress.acl.acl"] = TableInfo(
        "FabricIngress.acl.acl",
        [KeyField("ig_port", 9, "ternary"), KeyField("ip_proto", 8, "ternary")],
        [ActionRef("FabricIngress.acl.set_next_id_acl"), ActionRef("FabricIngress.acl.punt_to_cpu"),
         ActionRef("FabricIngress.acl.drop"), ActionRef("FabricIngress.acl.nop_acl")],
        ActionCall("FabricIngress.acl.nop_acl"), default_is_const=True,
        direct_counter="FabricIngress.acl.acl_counter")
    info.counters["FabricIngress.acl.acl_counter"] = CounterInfo(
        "FabricIngress.acl.acl_counter", 0, "packets_and_bytes",
        direct_table="FabricIngress.acl.acl")
    info.counters["FabricIngress.port_counters_control.egress_port_counter"] = CounterInfo(
        "FabricIngress.port_counters_control.egress_port_counter", 511, "packets_and_bytes")
    info.controller_headers["packet_in"] = ControllerHeader(
        "packet_in", "packet_in_header_t", [StructField("ingress_port", 9),
                                            StructField("_pad", 7)])
    info.controller_headers["packet_out"] = ControllerHeader(
        "packet_out", "packet_out_header_t", [StructField("egress_port", 9),
                                              StructField("_pad", 7)])
    return info


def test_fabric_slice_matches_p4c_output():
    p = build_p4info(fabric_like())
    assert p.pkg_info.arch == "v1model"
    (table,) = p.tables
    assert (table.preamble.id, table.preamble.name, table.preamble.alias) == (
        44104738, "FabricIngress.acl.acl", "acl")
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in table.match_fields] == [
        (1, "ig_port", 9, MatchField.TERNARY), (2, "ip_proto", 8, MatchField.TERNARY)]
    assert [r.id for r in table.action_refs] == [23623126, 23579892, 23570973, 29607214]
    assert table.const_default_action_id == 29607214
    assert table.initial_default_action.action_id == 29607214
    assert list(table.direct_resource_ids) == [319194241]
    assert table.size == 1024
    (dc,) = p.direct_counters
    assert (dc.preamble.id, dc.direct_table_id, dc.spec.unit) == (
        319194241, 44104738, p4info_pb2.CounterSpec.BOTH)
    (c,) = p.counters
    assert (c.preamble.id, c.preamble.alias, c.size) == (314528581, "egress_port_counter", 511)
    pin, pout = p.controller_packet_metadata
    assert (pin.preamble.id, pin.preamble.name, pin.preamble.alias) == (
        81826293, "packet_in", "packet_in")
    assert list(pin.preamble.annotations) == ['@controller_header("packet_in")']
    assert [(m.id, m.name, m.bitwidth) for m in pin.metadata] == [
        (1, "ingress_port", 9), (2, "_pad", 7)]
    assert pout.preamble.id == 76689799
    action = next(a for a in p.actions if a.preamble.name == "FabricIngress.acl.set_next_id_acl")
    assert (action.preamble.id, action.preamble.alias) == (23623126, "set_next_id_acl")
    assert [(x.id, x.name, x.bitwidth) for x in action.params] == [(1, "next_id", 32)]


def full_program() -> ProgramInfo:
    info = ProgramInfo(arch="v1model")
    for name, params in [("NoAction", []), ("I.drop", []), ("E.drop", []),
                         ("I.fwd", [ActionParam("port", 9), ActionParam("mac", 48)])]:
        info.actions[name] = ActionInfo(name, params)
    info.tables["I.t"] = TableInfo(
        "I.t", [KeyField("hdr.a", 8, "exact"), KeyField("hdr.b", 32, "lpm"),
                KeyField("hdr.c", 16, "ternary"), KeyField("hdr.d", 16, "range"),
                KeyField("hdr.e", 4, "optional")],
        [ActionRef("I.fwd", table_only=True), ActionRef("I.drop"),
         ActionRef("NoAction", default_only=True, annotations=["@defaultonly"])],
        ActionCall("I.fwd", {"port": 3, "mac": 0}), size=64,
        annotations=['@name("I.t")', "@my_anno(1)"],
        direct_meter="I.dm")
    info.tables["E.t"] = TableInfo(
        "E.t", [KeyField("x", 8, "exact")], [ActionRef("E.drop"), ActionRef("NoAction")],
        ActionCall("NoAction"), default_is_const=True,
        const_entries=[TableEntry({"x": Exact(1)}, ActionCall("E.drop"))],
        has_const_entries=True)
    info.tables["E.init"] = TableInfo(
        "E.init", [KeyField("x", 8, "exact")], [ActionRef("E.drop"), ActionRef("NoAction")],
        ActionCall("NoAction"), const_entries=[TableEntry({"x": Exact(1)}, ActionCall("E.drop"))])
    info.tables["E.hidden"] = TableInfo("E.hidden", [], [ActionRef("NoAction")],
                                        ActionCall("NoAction"), annotations=["@hidden"])
    info.registers["I.r"] = RegisterInfo("I.r", 32, 128)
    info.registers["I.s"] = RegisterInfo("I.s", 12, 4, signed=True)
    info.counters["I.c"] = CounterInfo("I.c", 10, "packets")
    info.counters["I.b"] = CounterInfo("I.b", 10, "bytes")
    info.meters["I.m"] = MeterInfo("I.m", 4, "bytes")
    info.meters["I.dm"] = MeterInfo("I.dm", 0, "packets", direct_table="I.t")
    info.digests["mac_learn_t"] = DigestInfo("mac_learn_t", [StructField("mac", 48),
                                                             StructField("port", 9)])
    info.value_sets["P.vs"] = ValueSetInfo("P.vs", 4, [StructField("", 16)])
    return info


def test_full_program_contents():
    p = build_p4info(full_program())
    tables = {t.preamble.name: t for t in p.tables}
    assert set(tables) == {"I.t", "E.t", "E.init"}  # @hidden tables are left out
    t = tables["I.t"]
    assert [(m.id, m.match_type) for m in t.match_fields] == [
        (1, MatchField.EXACT), (2, MatchField.LPM), (3, MatchField.TERNARY),
        (4, MatchField.RANGE), (5, MatchField.OPTIONAL)]
    assert [r.scope for r in t.action_refs] == [
        ActionRefPb.TABLE_ONLY, ActionRefPb.TABLE_AND_DEFAULT, ActionRefPb.DEFAULT_ONLY]
    assert [list(r.annotations) for r in t.action_refs] == [["@tableonly"], [],
                                                            ["@defaultonly"]]
    assert list(t.preamble.annotations) == ["@my_anno(1)"]  # @name is consumed
    assert t.size == 64 and t.const_default_action_id == 0
    assert not t.is_const_table and not t.has_initial_entries
    init = t.initial_default_action
    assert init.action_id == p4c_id(0x01, "I.fwd")
    assert [(a.param_id, a.value) for a in init.arguments] == [(1, b"\x03"), (2, b"\x00")]
    assert list(t.direct_resource_ids) == [p4c_id(0x15, "I.dm")]
    assert tables["E.t"].is_const_table and tables["E.t"].has_initial_entries
    assert tables["E.t"].const_default_action_id == p4c_id(0x01, "NoAction")
    assert not tables["E.init"].is_const_table and tables["E.init"].has_initial_entries

    aliases = {a.preamble.name: a.preamble.alias for a in p.actions}
    assert aliases == {"NoAction": "NoAction", "I.drop": "I.drop", "E.drop": "E.drop",
                       "I.fwd": "fwd"}
    assert {x.preamble.name: x.preamble.alias for x in p.tables} == {
        "I.t": "I.t", "E.t": "E.t", "E.init": "init"}

    regs = {r.preamble.name: r for r in p.registers}
    assert regs["I.r"].type_spec.bitstring.bit.bitwidth == 32 and regs["I.r"].size == 128
    assert regs["I.s"].type_spec.bitstring.int.bitwidth == 12
    assert regs["I.r"].preamble.id >> 24 == 0x16
    units = {c.preamble.name: c.spec.unit for c in p.counters}
    assert units == {"I.c": p4info_pb2.CounterSpec.PACKETS, "I.b": p4info_pb2.CounterSpec.BYTES}
    (meter,) = p.meters
    assert (meter.preamble.id >> 24, meter.size, meter.spec.unit) == (
        0x14, 4, p4info_pb2.MeterSpec.BYTES)
    (dmeter,) = p.direct_meters
    assert dmeter.direct_table_id == tables["I.t"].preamble.id
    assert dmeter.spec.unit == p4info_pb2.MeterSpec.PACKETS

    (digest,) = p.digests
    assert digest.preamble.id == p4c_id(0x17, "mac_learn_t")
    assert digest.type_spec.struct.name == "mac_learn_t"
    struct = map_value(p.type_info.structs, "mac_learn_t")
    assert [(m.name, m.type_spec.bitstring.bit.bitwidth) for m in struct.members] == [
        ("mac", 48), ("port", 9)]

    (vs,) = p.value_sets
    assert vs.preamble.id == p4c_id(0x03, "P.vs") and vs.size == 4
    assert [(m.id, m.name, m.bitwidth, m.match_type) for m in vs.match] == [
        (1, "", 16, MatchField.EXACT)]


def test_ids_are_stable_and_independent_of_declaration_order():
    a = build_p4info(full_program())
    assert build_p4info(full_program()).SerializeToString() == a.SerializeToString()
    info = full_program()
    info.actions = dict(reversed(list(info.actions.items())))
    b = build_p4info(info)
    assert ({x.preamble.name: x.preamble.id for x in a.actions}
            == {x.preamble.name: x.preamble.id for x in b.actions})


def test_explicit_ids_and_collision_probing():
    info = ProgramInfo(arch="v1model")
    taken = p4c_id(0x01, "b")
    info.actions["a"] = ActionInfo("a", [], annotations=[f"@id({taken & 0xFFFFFF})"])
    info.actions["b"] = ActionInfo("b", [])
    info.actions["c"] = ActionInfo("c", [], annotations=["@id(0x01000007)"])
    info.direct_calls = {"a", "b", "c"}  # listed by p4c: called from an apply block
    ids = {x.preamble.name: x.preamble.id for x in build_p4info(info).actions}
    # @id without a prefix gets the type prefix; "b" hashes onto it and probes to the next id
    assert ids == {"a": taken, "b": (taken & 0xFF000000) | ((taken + 1) & 0xFFFFFF),
                   "c": 0x01000007}

    info.actions["c"].annotations = ["@id(0x02000007)"]
    with pytest.raises(CompileError, match="prefix"):
        build_p4info(info)
    info.actions["c"].annotations = [f"@id({taken})"]
    with pytest.raises(CompileError, match="multiple"):
        build_p4info(info)


def test_match_field_ids_follow_p4c_field_allocator():
    info = ProgramInfo(arch="v1model")
    info.actions["NoAction"] = ActionInfo("NoAction", [])
    info.tables["t"] = TableInfo("t", [KeyField("a", 8, "exact"),
                                       KeyField("b", 8, "exact", annotations=["@id(5)"]),
                                       KeyField("c", 8, "exact")],
                                 [ActionRef("NoAction")], ActionCall("NoAction"))
    (t,) = build_p4info(info).tables
    assert [(m.name, m.id) for m in t.match_fields] == [("a", 1), ("b", 5), ("c", 2)]


def test_explicit_id_parsing():
    assert explicit_id(["@name(\"x\")", "@id(12)"]) == 12
    assert explicit_id(["id(0x10)"]) == 16
    assert explicit_id(["@ids(3)"]) is None
    with pytest.raises(CompileError):
        explicit_id(["@id(x)"])


def parse_p4info(data: bytes, fmt: str) -> p4info_pb2.P4Info:
    """Parse any output format back into a p4info_pb2.P4Info (via the map-aware class)."""
    if fmt == "binary":
        return p4info_pb2.P4Info.FromString(data)
    msg = p4info_message_class()()
    if fmt == "json":
        json.loads(data)
        json_format.Parse(data.decode(), msg)
    else:
        text_format.Parse(data.decode(), msg)
    return p4info_pb2.P4Info.FromString(msg.SerializeToString())


@pytest.mark.parametrize("fmt", ["text", "binary", "json"])
def test_formats_round_trip(fmt):
    p = build_p4info(full_program())
    data = format_p4info(p, fmt)
    assert parse_p4info(data, fmt).SerializeToString() == p.SerializeToString()
    if fmt == "text":  # maps print the way p4c prints them
        assert 'structs {\n    key: "mac_learn_t"' in data.decode()


# ---------------------------------------------------------------------- command line

@pytest.mark.parametrize("fmt", ["text", "binary", "json"])
def test_main_writes_the_p4info(tmp_path, fmt):
    out = tmp_path / f"p4info.{fmt}"
    assert main(["p4info", str(PROGRAM), "--format", fmt, "-o", str(out)]) == 0
    p = parse_p4info(out.read_bytes(), fmt)
    tables = {t.preamble.name: t for t in p.tables}
    assert tables["MyIngress.exact_t"].preamble.id == p4c_id(0x02, "MyIngress.exact_t")
    assert tables["MyIngress.const_t"].is_const_table
    assert {c.preamble.name for c in p.controller_packet_metadata} == {"packet_in",
                                                                      "packet_out"}
    assert [d.preamble.name for d in p.digests] == ["learn_digest_t"]
    assert [r.preamble.name for r in p.registers] == ["MyIngress.pkt_count"]
    assert [c.preamble.name for c in p.counters] == ["MyIngress.port_counter"]


def test_main_direct_counter_and_meter(tmp_path):
    out = tmp_path / "p4info.bin"
    program = PROGRAM.parent / "counters_meters.p4"
    assert main([str(program), "--format", "binary", "-o", str(out)]) == 0
    p = p4info_pb2.P4Info.FromString(out.read_bytes())
    (table,) = p.tables
    (dc,) = p.direct_counters
    assert dc.preamble.id == p4c_id(0x13, "MyIngress.count_counter")
    assert dc.direct_table_id == table.preamble.id
    assert list(table.direct_resource_ids) == [dc.preamble.id]
    (meter,) = p.meters
    assert meter.preamble.id == p4c_id(0x14, "MyIngress.port_meter") and meter.size == 4


def test_main_reports_load_errors(tmp_path, capsys):
    bad = tmp_path / "bad.p4"
    bad.write_text("this is not P4 {\n")
    assert main([str(bad)]) == 2
    assert "bad.p4" in capsys.readouterr().err
    assert main([str(tmp_path / "missing.p4")]) == 2


def test_module_command_line(tmp_path):
    out = tmp_path / "p4info.txt"
    proc = subprocess.run([sys.executable, "-m", "p4sim", "p4info", str(PROGRAM), "-o", str(out)],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "MyIngress.exact_t" in out.read_text()


# ---------------------------------------------------------------- which actions p4c lists

ACTIONS_PROG = Path(__file__).parent / "p4misc" / "p4info_actions.p4"


def _actions_of(path: Path) -> dict[str, list[tuple[int, str, int]]]:
    from p4sim import load_program
    p4info = build_p4info(load_program(str(path)).info)
    return {a.preamble.name: [(x.id, x.name, x.bitwidth) for x in a.params] for a in p4info.actions}


def test_actions_listed_as_p4c_front_end_leaves_them():
    # p4c inlines actions called from actions, drops unused ones, and removes every parameter of
    # an action only called from an apply block (frontends/p4/removeParameters.cpp)
    assert _actions_of(ACTIONS_PROG) == {
        "Ing.set_a": [(1, "v", 8)],
        "Ing.bump": [(1, "step", 8)],     # the directional parameter bound in the list is gone
        "Ing.direct": [],
        "Ing.both": [(1, "v", 8)],        # the table's copy comes first and keeps its parameter
        "NoAction": [],
    }


def test_ina_program_actions_match_p4c():
    # measured with p4c-bm2-ss on p4src/v1model/ina.p4: lanes_swap (only called from
    # swap_state) is not listed, swap_state (called from the apply block) has no parameter
    actions = _actions_of(ROOT / "p4src" / "v1model" / "ina.p4")
    assert "InaIngress.aggregator.lanes_swap" not in actions
    assert actions["InaIngress.aggregator.swap_state"] == []
    assert actions["InaIngress.aggregator.lanes_add"] == []


# ---------------------------------------------------------------- against p4c's own output

P4C_INA_P4INFO = ROOT / "p4src" / "v1model" / "ina.p4info.txtpb"


def test_difference_report_names_the_entity():
    ours = build_p4info(full_program())
    theirs = build_p4info(full_program())
    assert p4info_differences(ours, theirs) == []
    theirs.actions[0].params.add(id=9, name="extra", bitwidth=3)
    del theirs.registers[:1]
    diff = p4info_differences(ours, theirs)
    assert len(diff) == 2
    assert diff[0].startswith(f"actions {theirs.actions[0].preamble.name}: p4sim ")
    assert diff[1] == "registers I.r: only in p4sim's P4Info"


@pytest.mark.skipif(not P4C_INA_P4INFO.exists(),
                    reason="p4src/v1model/ina.p4info.txtpb is written by docker/check_with_p4c.sh "
                           "(p4c-bm2-ss --p4runtime-files); p4c is not installed here")
def test_ina_p4info_equals_p4c_output():
    from p4sim import load_program
    cls = p4info_message_class()
    theirs = text_format.Parse(P4C_INA_P4INFO.read_text(), cls())
    ours_pb = build_p4info(load_program(str(ROOT / "p4src" / "v1model" / "ina.p4")).info)
    ours = cls.FromString(ours_pb.SerializeToString())
    assert p4info_differences(ours, theirs) == []


def test_main_compare_reports_each_difference(tmp_path, capsys):
    ref = tmp_path / "p4c.p4info.txtpb"
    assert main([str(ACTIONS_PROG), "-o", str(ref)]) == 0
    assert main([str(ACTIONS_PROG), "--compare", str(ref)]) == 0
    assert "agrees entity by entity" in capsys.readouterr().out
    ref.write_text(ref.read_text().replace('name: "step"', 'name: "stride"'))
    assert main([str(ACTIONS_PROG), "--compare", str(ref)]) == 1
    (line,) = capsys.readouterr().out.splitlines()
    assert line.startswith(f"{ref}: actions Ing.bump: p4sim ") and "'stride'" in line
    ref.write_text("not a p4info")
    assert main([str(ACTIONS_PROG), "--compare", str(ref)]) == 2
    assert "not a P4Info in text format" in capsys.readouterr().err
    assert main([str(ACTIONS_PROG), "--compare", str(tmp_path / "missing")]) == 2
    assert capsys.readouterr().err.strip() == (
        f"p4sim p4info: {tmp_path / 'missing'}: No such file or directory")
