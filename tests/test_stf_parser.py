"""Unit tests of the STF parser and of the runner's semantics (on a fake switch, so they run
without the compiler)."""
from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Callable

import pytest

from p4control.model import (ActionCall, ActionInfo, ActionParam, ActionRef, CounterInfo,
                             Exact, KeyField, Lpm, Optional, ProgramInfo, Range,
                             RegisterInfo, TableEntry, TableInfo, Ternary)
from p4sim.runtime.pre import PacketReplicationEngine
from p4sim.stf import parser as P
from p4sim.stf.parser import StfError, parse_stf
from p4sim.stf.runner import resolve_name, run_stf_on_switch

HERE = Path(__file__).parent
STF_ERRORS = sorted((HERE / "stf_errors").glob("*.stf"))


def parse(text: str) -> list[P.Command]:
    return parse_stf(text, "t.stf").commands


# ------------------------------------------------------------------------------------ parser

def test_packet_and_expect() -> None:
    cmds = parse("packet 0 00 11 2233\nexpect 1 00 1* ** 33 $\nexpect 2 ab\nexpect 3\n")
    assert cmds[0] == P.Packet(1, 1, 0, bytes.fromhex("00112233"))
    assert isinstance(cmds[1], P.Expect)
    assert (cmds[1].port, cmds[1].pattern, cmds[1].exact) == (1, "001***33", True)
    assert (cmds[2].pattern, cmds[2].exact) == ("AB", False)
    assert cmds[3].pattern is None


def test_expect_empty_exact_packet() -> None:
    (e,) = parse("expect 4 $")
    assert isinstance(e, P.Expect) and e.pattern == "" and e.exact


def test_comments_blank_lines_and_case() -> None:
    cmds = parse("# p4sim-stf-extensions: data_comments\n\n  PACKET 0 0102  # trailing comment\n"
                 "Wait\n\t\nwAiT # x\n")
    assert [type(c).__name__ for c in cmds] == ["Packet", "Wait", "Wait"]
    assert cmds[0].line == 3 and cmds[1].line == 4 and cmds[2].line == 6


def test_numbers() -> None:
    n = P.parse_number("0x0A0000**")
    assert (n.value, n.care, n.digits, n.bits_per_digit) == (0x0A000000, 0xFFFFFF00, 8, 4)
    n = P.parse_number("0b1*0")
    assert (n.value, n.care, n.digits, n.bits_per_digit) == (0b100, 0b101, 3, 1)
    n = P.parse_number("1234")
    assert (n.value, n.care, n.is_decimal, n.has_wildcards) == (1234, None, True, False)
    assert P.parse_number("0XfF").value == 255


def test_add_full() -> None:
    (a,) = parse("add ingress.t 100 hdr.stack$0.f:0x12** ip:10/8 "
                 "x.$valid$:1 ingress.act(p:0x7f, q:2) = H1\n")
    assert isinstance(a, P.Add)
    assert a.table == "ingress.t" and a.priority == 100 and a.handle == "H1"
    assert [k[0] for k in a.keys] == ["hdr.stack$0.f", "ip", "x.$valid$"]
    assert isinstance(a.keys[1][1], P.KeyPrefix)
    assert a.keys[1][1].prefix_len.value == 8
    assert a.action.name == "ingress.act"
    assert [(n, v.value) for n, v in a.action.args] == [("p", 0x7F), ("q", 2)]


def test_add_without_priority_and_multiline() -> None:
    (a,) = parse("add t\n  k:5\n  a()\n")
    assert a.priority is None and a.action.args == [] and a.keys[0][0] == "k"


def test_add_extensions() -> None:
    (a,) = parse("# p4sim-stf-extensions: masks, ranges\nadd t 1 k:0x10&&&0xF0 r:5..10 s[2].f:1 act()")
    assert isinstance(a.keys[0][1], P.KeyMasked)
    assert isinstance(a.keys[1][1], P.KeyRange)
    assert (a.keys[1][1].low.value, a.keys[1][1].high.value) == (5, 10)
    assert a.keys[2][0] == "s[2].f"


def test_setdefault_remove_wait_no_packet() -> None:
    cmds = parse("setdefault t a(x:1)\nremove all\nno_packet\nwait\n")
    assert isinstance(cmds[0], P.SetDefault) and cmds[0].action.args[0][1].value == 1
    assert [type(c).__name__ for c in cmds[1:]] == ["RemoveAll", "NoPacket", "Wait"]


def test_check_counter_forms() -> None:
    c1, c2, c3, c4 = parse("# p4sim-stf-extensions: qualified_counter\n"
                           "check_counter cnt(10) packets == 2\ncheck_counter cnt($A)\n"
                           "check_counter ingress.c(3) bytes >= 64\ncheck_counter c(B) packets != 1")
    assert (c1.counter, c1.index, c1.count_type, c1.op, c1.value) == ("cnt", 10, "packets", "==", 2)
    assert (c2.index, c2.count_type, c2.op, c2.value) == ("A", None, "==", 0)
    assert (c3.counter, c3.count_type, c3.op, c3.value) == ("ingress.c", "bytes", ">=", 64)
    assert (c4.index, c4.op) == ("B", "!=")


def test_direct_commands() -> None:
    cmds = parse("mirroring_add 5 3\nmirroring_add_mc 6 1\nmirroring_delete 5\n"
                 "mc_mgrp_create 1\nmc_node_create 16 1 2 3\nmc_node_update 0 4\n"
                 "mc_node_associate 1 0\ncounter_read c 1\ncounter_write c 1 2 3\n"
                 "register_read r 1\nregister_read r 2\nregister_write r 1 7\n"
                 "register_reset r\nmeter_set_rates m 0 0.5:10 1:20\n"
                 "meter_array_set_rates m 2:3 4:5\nmeter_get_rates m 0\nmirroring_get 5\n")
    assert cmds[0] == P.MirroringAdd(1, 1, 5, 3)
    assert cmds[1] == P.MirroringAddMc(2, 1, 6, 1)
    assert cmds[4] == P.McNodeCreate(5, 1, 16, [1, 2, 3])
    assert cmds[5] == P.McNodeUpdate(6, 1, 0, [4])
    assert cmds[6] == P.McNodeAssociate(7, 1, 1, 0)
    assert cmds[8] == P.CounterWrite(9, 1, "c", 1, 2, 3)
    assert cmds[9] == P.RegisterRead(10, 1, "r", 1)
    assert cmds[10] == P.RegisterRead(11, 1, "r", 2)
    (check,) = parse("# p4sim-stf-extensions: register_read\nregister_read r 2 == 0x10")
    assert check == P.RegisterRead(2, 1, "r", 2, "==", 16)
    assert cmds[13] == P.MeterSetRates(14, 1, "m", 0, [(0.5, 10), (1.0, 20)])
    assert cmds[14] == P.MeterSetRates(15, 1, "m", None, [(2.0, 3), (4.0, 5)])
    assert isinstance(cmds[15], P.MeterGetRates) and isinstance(cmds[16], P.MirroringGet)


def test_packet_without_data_is_empty() -> None:
    # bmv2stf.py sends an empty packet for `packet N` with no data (p4c gauntlet tests do this)
    (p, e) = parse("packet 1 \nexpect 2 00\n")
    assert p.port == 1 and p.data == b"" and e.port == 2


def test_packet_odd_digits_last_is_a_byte() -> None:
    # bmv2stf.py's hex_to_byte converts pairs; a final lone digit becomes a byte of its own
    (p,) = parse("packet 0 ab c\n")
    assert p.data == b"\xab\x0c"


def test_quoted_identifier() -> None:
    (a,) = parse('add "my.table" "k":1 "act"()')
    assert a.table == "my.table" and a.keys[0][0] == "k" and a.action.name == "act"


@pytest.mark.parametrize("text,line,msg", [
    ("packet 0 0g", 1, "invalid packet data"),
    ("expect 0 12\nexpect 1 1 2 3 $ $", 2, "nothing may follow"),
    ("packet\n1 00", 2, "expected a port number"),
    ("add t k:1 a(x:1,)", 1, "expected an action argument name"),
    ("add t k:0x1/ a()", 1, "expected a prefix length"),
    ("setdefault t", 1, "expected an action name"),
    ("wait\n\n 12", 3, "expected a command"),
    ("check_counter c(0x1*)", 1, "don't-care digits"),
    ("mc_node_create 1", 1, "expected a port"),
    ("meter_set_rates m 0 1", 1, "expected ':'"),
])
def test_syntax_errors(text: str, line: int, msg: str) -> None:
    with pytest.raises(StfError) as ei:
        parse(text)
    assert ei.value.line == line
    assert msg in ei.value.message
    assert str(ei.value).startswith(f"t.stf:{line}:")


def _expected_error(path: Path) -> tuple[int, str]:
    first = path.read_text().splitlines()[0]
    m = re.match(r"#\s*expect-error:\s*(\d+):\s*(.*\S)", first)
    assert m, f"{path.name}: line 1 must be '# expect-error: LINE: SUBSTRING'"
    return int(m.group(1)), m.group(2)


@pytest.mark.parametrize("path", STF_ERRORS, ids=[p.name for p in STF_ERRORS])
def test_malformed_stf_files(path: Path) -> None:
    line, sub = _expected_error(path)
    with pytest.raises(StfError) as ei:
        P.parse_stf_file(str(path))
    assert ei.value.line == line, str(ei.value)
    assert sub in ei.value.message, str(ei.value)
    assert str(ei.value).startswith(f"{path}:{line}:")


def test_missing_file() -> None:
    with pytest.raises(StfError, match="cannot read STF file"):
        P.parse_stf_file("/nonexistent/x.stf")


# ------------------------------------------------------------------------------ name lookup

def test_resolve_name() -> None:
    names = ["MyIngress.ipv4_lpm", "MyIngress.my_ipv4_lpm", "MyEgress.t", "NoAction"]
    assert resolve_name("NoAction", names, "x") == "NoAction"
    assert resolve_name("ipv4_lpm", names, "x") == "MyIngress.ipv4_lpm"   # '.' boundary first
    assert resolve_name("t", names, "x") == "MyEgress.t"
    assert resolve_name("y_ipv4_lpm", names, "x") == "MyIngress.my_ipv4_lpm"  # plain suffix
    with pytest.raises(ValueError, match="ambiguous: MyIngress.ipv4_lpm, MyIngress.my_ipv4_lpm"):
        resolve_name("lpm", names, "table")
    with pytest.raises(ValueError, match="no table named 'zz'"):
        resolve_name("zz", names, "table")


# ----------------------------------------------------------------------- runner on a fake switch

class FakeSwitch:
    """Records control-plane calls; process() is supplied by the test."""

    def __init__(self, info: ProgramInfo,
                 process: Callable[[int, bytes], list[tuple[int, bytes]]] | None = None) -> None:
        self.info = info
        self._process = process or (lambda port, data: [(1, data)])
        self.inserted: list[tuple[str, TableEntry]] = []
        self.defaults: dict[str, ActionCall] = {}
        self.registers: dict[tuple[str, int], int] = {}
        self.counters: dict[tuple[str, int], tuple[int, int]] = {}
        self.direct: dict[str, tuple[int, int]] = {}
        self.pre = PacketReplicationEngine()
        self.cleared: list[str] = []

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        return self._process(port, data)

    def table_insert(self, table: str, entry: TableEntry) -> None:
        self.inserted.append((table, entry))

    def table_set_default(self, table: str, call: ActionCall) -> None:
        self.defaults[table] = call

    def table_clear(self, table: str) -> None:
        self.cleared.append(table)

    def register_read(self, name: str, index: int) -> int:
        return self.registers.get((name, index), 0)

    def register_write(self, name: str, index: int, value: int) -> None:
        self.registers[(name, index)] = value

    def register_reset(self, name: str) -> None:
        for k in [k for k in self.registers if k[0] == name]:
            del self.registers[k]

    def counter_read(self, name: str, index: int) -> tuple[int, int]:
        return self.counters.get((name, index), (0, 0))

    def direct_counter_read(self, table: str, match: dict, priority: int = 0) -> tuple[int, int]:
        return self.direct.get(table, (0, 0))


def make_info() -> ProgramInfo:
    info = ProgramInfo(arch="v1model")
    info.actions = {
        "NoAction": ActionInfo("NoAction", []),
        "MyIngress.set": ActionInfo("MyIngress.set", [ActionParam("v", 8), ActionParam("port", 9)]),
        "MyIngress.drop": ActionInfo("MyIngress.drop", []),
    }
    refs = [ActionRef("MyIngress.set"), ActionRef("MyIngress.drop"), ActionRef("NoAction")]
    info.tables = {
        "MyIngress.t_exact": TableInfo("MyIngress.t_exact",
                                       [KeyField("hdr.h.a", 8, "exact"),
                                        KeyField("hdr.h.b", 16, "exact")],
                                       refs, ActionCall("NoAction"),
                                       direct_counter="MyIngress.dc"),
        "MyIngress.t_tern": TableInfo("MyIngress.t_tern",
                                      [KeyField("hdr.h.a", 8, "exact"),
                                       KeyField("hdr.stack[1].f", 32, "ternary"),
                                       KeyField("hdr.ip.isValid()", 1, "exact")],
                                      refs, ActionCall("NoAction")),
        "MyIngress.t_lpm": TableInfo("MyIngress.t_lpm", [KeyField("hdr.ip.dst", 32, "lpm")],
                                     refs, ActionCall("NoAction")),
        "MyIngress.t_misc": TableInfo("MyIngress.t_misc",
                                      [KeyField("meta.r", 16, "range"),
                                       KeyField("meta.o", 8, "optional")],
                                      refs, ActionCall("NoAction")),
    }
    info.counters = {
        "MyIngress.dc": CounterInfo("MyIngress.dc", 0, "packets_and_bytes",
                                    direct_table="MyIngress.t_exact"),
        "MyIngress.c": CounterInfo("MyIngress.c", 8, "packets_and_bytes"),
    }
    info.registers = {"MyIngress.r": RegisterInfo("MyIngress.r", 32, 8)}
    return info


def run(text: str, sw: FakeSwitch | None = None) -> tuple[tuple[int, int], str, FakeSwitch]:
    sw = sw or FakeSwitch(make_info())
    out = io.StringIO()
    res = run_stf_on_switch(sw, parse_stf(text, "t.stf"), out)
    return res, out.getvalue(), sw


def test_summary_is_last_line() -> None:
    (p, f), out, _ = run("packet 0 0102\nexpect 1 0102\n")
    assert (p, f) == (1, 0)
    assert out.splitlines()[-1] == "1 passed, 0 failed"


def test_expect_prefix_wildcards_and_exact_length() -> None:
    (p, f), out, _ = run("packet 0 010203\nexpect 1 01\n"        # longer output is fine
                         "packet 0 010203\nexpect 1 0*0*03 $\n"   # '*' nibbles, exact length
                         "packet 0 010203\nexpect 1 0102 $\n"     # too long for '$'
                         "packet 0 010203\nexpect 1 01020304\n"   # too short
                         "packet 0 010203\nexpect 1 010204\n")    # differs
    assert (p, f) == (2, 3)
    assert "t.stf:6: packet #3 on port 1" in out and "too long" in out
    assert "t.stf:8:" in out and "too short" in out
    assert "t.stf:10:" in out and "differs at nibble 5" in out


def test_expect_order_per_port_and_leftovers() -> None:
    def proc(port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(data[0], data)]
    sw = FakeSwitch(make_info(), proc)
    (p, f), out, _ = run("expect 2 0201\nexpect 2 0202\nexpect 3 0300\n"
                         "packet 0 0201\npacket 0 0202\npacket 0 0203\npacket 0 0900\n", sw)
    # 0201, 0202 match; 0203 on port 2 is unexpected; nothing on port 3; port 9 is not
    # connected (no packet/expect line names it), so its packet is discarded.
    assert (p, f) == (2, 2)
    assert "unexpected packet #3 on port 2: 0203" in out
    assert "t.stf:3: expected packet #1 on port 3 was not received" in out
    assert "port 9" in out and "discarded" in out


def test_expect_any_on_port() -> None:
    def proc(port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [(5, data), (5, data)]
    (p, f), _, _ = run("expect 5\npacket 0 00\n", FakeSwitch(make_info(), proc))
    assert (p, f) == (1, 0)
    with pytest.raises(StfError, match="both"):
        run("expect 5\nexpect 5 00\npacket 0 00\n")


def test_no_packet() -> None:
    def proc(port: int, data: bytes) -> list[tuple[int, bytes]]:
        return [] if data[0] == 0 else [(1, data)]
    (p, f), out, _ = run("packet 0 00\nno_packet\npacket 0 01\nno_packet\nexpect 1 01\n",
                         FakeSwitch(make_info(), proc))
    assert (p, f) == (2, 1)
    assert "t.stf:4: no_packet" in out


def test_add_exact_defaults_and_suffix_names() -> None:
    _, _, sw = run("add t_exact h.a:5 set(v:0x7f, port:2)\n")
    (table, entry), = sw.inserted
    assert table == "MyIngress.t_exact"
    # h.b left out: bmv2stf.py writes 0 for an exact key
    assert entry.match == {"hdr.h.a": Exact(5), "hdr.h.b": Exact(0)}
    assert entry.action == ActionCall("MyIngress.set", {"v": 0x7F, "port": 2})
    assert entry.priority == 0


def test_add_exact_ignores_priority() -> None:
    _, _, sw = run("add t_exact 7 h.a:5 h.b:1 drop()\n")
    assert sw.inserted[0][1].priority == 0


def test_add_ternary_priorities_and_names() -> None:
    _, _, sw = run("# p4sim-stf-extensions: implicit_priority, indexed_names\n"
                   "add t_tern 10 h.a:1 stack$1.f:0x0A0B**** ip.$valid$:1 drop()\n"
                   "add t_tern 20 h.a:1 hdr.stack[1].f:0x0A** ip.valid:1 drop()\n"
                   "add t_tern h.a:2 drop()\nadd t_tern h.a:3 drop()\n")
    e1, e2, e3, e4 = (e for _, e in sw.inserted)
    assert e1.match["hdr.stack[1].f"] == Ternary(0x0A0B0000, 0xFFFF0000)
    assert e1.match["hdr.ip.isValid()"] == Exact(1)
    # digits cover 16 bits only: the upper 16 bits are don't-care (bmv2stf.py's makeMask)
    assert e2.match["hdr.stack[1].f"] == Ternary(0x0A00, 0xFF00)
    assert "hdr.stack[1].f" not in e3.match          # left out: wildcard
    assert e2.priority > e1.priority > e3.priority > e4.priority > 0


def test_add_ternary_rejects_decimal() -> None:
    with pytest.raises(StfError, match="decimal value 5 is not supported for a ternary key"):
        run("add t_tern 1 h.a:1 stack$1.f:5 drop()\n")


def test_add_lpm() -> None:
    _, out, sw = run("add t_lpm ip.dst:0x0A000000/8 drop()\nadd t_lpm dst:0x0A0100** drop()\n"
                     "add t_lpm dst:0x0A0101FF/24 drop()\nadd t_lpm dst:0/0 drop()\n"
                     "add t_lpm dst:0b1******* drop()\n")
    ms = [e.match for _, e in sw.inserted]
    assert ms[0] == {"hdr.ip.dst": Lpm(0x0A000000, 8)}
    assert ms[1] == {"hdr.ip.dst": Lpm(0x0A010000, 24)}
    assert ms[2] == {"hdr.ip.dst": Lpm(0x0A010100, 24)}      # host bits cleared
    assert ms[3] == {}                                        # /0: wildcard
    assert ms[4] == {"hdr.ip.dst": Lpm(0, 1)}                 # 8 binary digits of a 32-bit key
    assert "warning" in out


def test_add_range_optional_extensions() -> None:
    _, _, sw = run("# p4sim-stf-extensions: ranges\n"
                   "add t_misc 1 r:5..10 o:3 drop()\nadd t_misc 2 r:7 drop()\n"
                   "add t_misc 3 r:0..0xFFFF drop()\n")
    ms = [e.match for _, e in sw.inserted]
    assert ms == [{"meta.r": Range(5, 10), "meta.o": Optional(3)}, {"meta.r": Range(7, 7)}, {}]


@pytest.mark.parametrize("text,msg", [
    ("add nosuch h.a:1 drop()", "no table named 'nosuch'"),
    ("add t_ h.a:1 drop()", "no table named 't_'"),
    ("add t_exact zz:1 drop()", "no key field of table MyIngress.t_exact named 'zz'"),
    ("add t_exact h.a:1 nosuch()", "no action of table MyIngress.t_exact named 'nosuch'"),
    ("add t_exact h.a:1 set(v:1)", "missing argument(s) port"),
    ("add t_exact h.a:1 set(v:1, port:2, w:3)", "has no parameter 'w'"),
    ("add t_exact h.a:1 set(v:256, port:2)", "does not fit in bit<8>"),
    ("add t_exact h.a:0x1* drop()", "don't-care digits"),
    ("add t_exact h.a:256 drop()", "does not fit in 8 bits"),
    ("add t_lpm dst:0x0A000000/33 drop()", "prefix length 33 is longer"),
    ("add t_lpm dst:10 drop()", "needs an explicit prefix length"),
    ("add t_lpm dst:0x*1 drop()", "must be trailing"),
    ("add t_misc 1 r:9..3 drop()", "empty range"),
    ("add t_misc 1 o:1..2 drop()", "expects a plain value"),
    ("check_counter nosuch(1)", "no counter named 'nosuch'"),
    ("check_counter dc(1)", "is a direct counter"),
    ("check_counter c($X)", "no entry handle 'X'"),
    ("register_read nosuch 1", "no register named 'nosuch'"),
    ("meter_get_rates m 0", "not supported"),
    ("mc_node_associate 1 0", "multicast group 1 does not exist"),
])
def test_runner_errors(text: str, msg: str) -> None:
    with pytest.raises(StfError) as ei:
        run("# p4sim-stf-extensions: ranges\n" + text + "\n")
    assert msg in ei.value.message
    assert ei.value.line == 2
    assert str(ei.value).startswith("t.stf:2:")


def test_ambiguous_table() -> None:
    info = make_info()
    info.tables["MyEgress.t_lpm"] = TableInfo("MyEgress.t_lpm", [KeyField("x", 8, "exact")], [],
                                              ActionCall("NoAction"))
    with pytest.raises(StfError, match="ambiguous: MyEgress.t_lpm, MyIngress.t_lpm"):
        run("add t_lpm x:1 NoAction()\n", FakeSwitch(info))


def test_setdefault_and_remove_all() -> None:
    _, _, sw = run("setdefault t_lpm set(v:1, port:3)\nremove all\n")
    assert sw.defaults == {"MyIngress.t_lpm": ActionCall("MyIngress.set", {"v": 1, "port": 3})}
    assert sorted(sw.cleared) == sorted(make_info().tables)


def test_check_counter_and_registers() -> None:
    sw = FakeSwitch(make_info())
    sw.counters[("MyIngress.c", 3)] = (2, 128)
    sw.direct["MyIngress.t_exact"] = (4, 256)
    (p, f), out, _ = run("# p4sim-stf-extensions: qualified_counter, register_read\n"
                         "add t_exact h.a:1 drop() = E\n"
                         "check_counter c(3) packets == 2\ncheck_counter c(3) bytes > 100\n"
                         "check_counter c(3)\ncheck_counter dc($E) packets == 4\n"
                         "check_counter MyIngress.t_exact($E) bytes == 255\n"
                         "register_write r 2 99\nregister_read r 2 == 99\nregister_read r 2 < 5\n"
                         "register_reset r\nregister_read r 2 == 0\n", sw)
    assert (p, f) == (5, 3)
    assert "t.stf:5: check_counter MyIngress.c[3]: packets is 2, expected == 0" in out
    assert "t.stf:7: check_counter MyIngress.dc($E): bytes is 256, expected == 255" in out
    assert "register MyIngress.r[2] is 99, expected < 5" in out
    assert "register_read MyIngress.r[2]= 99" in out


def test_multicast_and_mirroring() -> None:
    (p, f), out, sw = run("mc_mgrp_create 1\nmc_node_create 16 2 1\nmc_node_create 17 3\n"
                          "mc_node_associate 1 0\nmc_node_associate 1 1\nmc_node_update 1 4 5\n"
                          "mirroring_add 5 3\n")
    assert sw.pre.groups() == {1: [(1, 16), (2, 16), (4, 17), (5, 17)]}
    assert sw.pre.clone_replicas(5) == ((3, 0),)
    assert "node handle 1" in out
    with pytest.raises(StfError, match=r"t.stf:1:1: NotFound: clone session [5] does not exist"):
        run("mirroring_delete 5\n")


# ------------------------------------------------------------- p4sim extensions must be declared

@pytest.mark.parametrize("text,col,name", [
    ("packet 0 0102  # comment", 16, "data_comments"),
    ("add t 1 k:0x10&&&0xF0 a()", 15, "masks"),
    ("add t 1 k:5..10 a()", 12, "ranges"),
    ("add t a()", 7, "empty_key"),
    ("add t 1 h.s[1].f:1 a()", 12, "indexed_names"),
    ("register_read r 2 == 5", 19, "register_read"),
    ("check_counter ingress.c(3)", 15, "qualified_counter"),
])
def test_undeclared_extension_is_an_error_at_its_position(text: str, col: int, name: str) -> None:
    with pytest.raises(StfError) as ei:
        parse("wait\n" + text + "\n")
    assert (ei.value.line, ei.value.col) == (2, col)
    assert str(ei.value).startswith(f"t.stf:2:{col}: ")
    assert f"declare it on the first line: '# p4sim-stf-extensions: {name}'" in str(ei.value)
    # declared, it parses
    parse(f"# p4sim-stf-extensions: {name}\nwait\n{text}\n")


def test_declaring_one_extension_does_not_allow_another() -> None:
    with pytest.raises(StfError, match="t.stf:2:12: a KEY:LOW..HIGH range match"):
        parse("# p4sim-stf-extensions: masks\nadd t 1 k:5..10 a()\n")


def test_declared_extensions_are_recorded() -> None:
    stf = parse_stf("#p4sim-stf-extensions:masks ,ranges\nwait\n", "t.stf")
    assert stf.extensions == {"masks", "ranges"}
    assert parse_stf("# plain\nwait\n", "t.stf").extensions == frozenset()


@pytest.mark.parametrize("text,line,msg", [
    ("wait\n# p4sim-stf-extensions: masks\n", 2, "must be the first line of the file"),
    ("wait # p4sim-stf-extensions: masks\n", 1, "must be the first line of the file"),
    ("# p4sim-stf-extensions: masks, rangez\n", 1, "unknown STF extension 'rangez' (known: "),
    ("# p4sim-stf-extensions:\n", 1, "lists no extension"),
    ("# p4sim-stf-extensions masks\n", 1, "expected ':' after 'p4sim-stf-extensions'"),
])
def test_marker_errors(text: str, line: int, msg: str) -> None:
    with pytest.raises(StfError) as ei:
        parse(text)
    assert ei.value.line == line and msg in ei.value.message


def test_entry_without_priority_needs_the_extension() -> None:
    with pytest.raises(StfError) as ei:
        run("wait\nadd t_tern h.a:2 drop()\n")
    assert str(ei.value).startswith("t.stf:2:1: table MyIngress.t_tern needs a priority")
    assert "'# p4sim-stf-extensions: implicit_priority'" in str(ei.value)
    run("add t_exact h.a:2 h.b:1 drop()\n")   # exact tables need none


def test_corpus_markers_list_only_known_extensions_and_unmarked_files_parse_strictly() -> None:
    # every .stf under tests/ either parses as p4c's driver would or declares what it uses
    files = sorted(HERE.glob("**/*.stf"))
    assert len(files) > 20
    marked = []
    for f in files:
        if f.parent.name == "stf_errors":
            continue
        stf = P.parse_stf_file(str(f))
        if stf.extensions:
            marked.append(f.name)
    assert {"registers.stf", "tables_ext.stf"} <= set(marked)
