"""Run an STF test against a P4 program on p4sim's :class:`~p4sim.Switch`.

Semantics follow p4c's bmv2 test driver (``backends/bmv2/bmv2stf.py`` with
``tools/testutils.py``'s ``compare_pkt``) except where noted:

* ``packet PORT HEX`` runs the packet through the switch at once (p4sim is synchronous, so
  ``wait`` is a no-op). Like bmv2 under the driver, only ports named by some ``packet`` or
  ``expect`` line exist: output to any other port is discarded (a note is printed).
* ``expect PORT HEX`` lines are matched, per port and in order, with the packets output on
  that port, after the whole file has run (so ``expect`` may come before or after its
  ``packet``). ``*`` matches any nibble; the output may be longer than the expectation unless
  the line ends in ``$``. ``expect PORT`` with no data accepts any number of packets on the
  port. Every output left over and every expectation not met is a failure.
* Table, action, key, counter, register and meter names resolve by suffix: an exact name
  first, then a unique suffix at a ``.`` boundary, then a unique plain suffix (bmv2stf.py's
  rule); ambiguity is an error naming the candidates. ``stack$0.f`` means ``stack[0].f``,
  ``h.$valid$`` / ``h.valid`` mean ``h.isValid()``. Action parameters must be named exactly.
* Key values as bmv2stf.py converts them: ternary ``0x12**`` is value ``0x1200`` with mask
  ``0xFF00`` over the digits written (bits above them are don't-care), decimal is refused for
  ternary keys; lpm ``V/LEN``, or ``0x0A0000**`` = ``0x0A000000/24`` (the prefix length is
  the number of non-``*`` digits times 4, or 1 per binary digit); a key left out is 0 for
  exact keys and a wildcard otherwise.
* Priorities: a larger STF priority wins (bmv2stf.py hands bmv2 ``10000 - PRIORITY`` and in
  bmv2 the smaller number wins), the same as P4Runtime, so the order is kept; the value is
  offset to stay > 0. bmv2stf.py has no default when a ternary table's entry has no priority
  (it fails), and so does p4sim unless the file declares the ``implicit_priority`` extension:
  then such entries get priorities below every explicit one, the earlier entry winning. Priorities are ignored for tables with only exact/lpm keys, as the driver does.
"""
from __future__ import annotations

import argparse
import re
import sys
import traceback
from typing import Any, Callable, Iterable, Sequence, TextIO

from p4sim.errors import P4SIM_ERRORS, CompileError
from p4control.model import (ActionCall, Exact, FieldMatch, KeyField, Lpm, Optional,
                             ProgramInfo, Range, TableEntry, TableInfo, Ternary)
import p4sim.stf.parser as P
from p4sim.stf.parser import StfError, parse_stf_file

# Explicit STF priorities are shifted up by this much so that entries without one can be
# placed below all of them while staying > 0 (P4Runtime needs priority > 0).
_PRIORITY_BASE = 1 << 20

_OPS: dict[str, Callable[[int, int], bool]] = {
    "==": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
}


def resolve_name(name: str, candidates: Iterable[str], what: str) -> str:
    """Find ``name`` among ``candidates``: exact, else a unique ``.``-boundary suffix, else a
    unique plain suffix (bmv2stf.py's ``endswith``). Raises ValueError with a readable text."""
    cands = sorted(set(candidates))
    if name in cands:
        return name
    for matches in ([c for c in cands if c.endswith("." + name)],
                    [c for c in cands if c.endswith(name)]):
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            raise ValueError(f"{what} name '{name}' is ambiguous: {', '.join(matches)}")
    avail = ", ".join(cands) if cands else "none"
    raise ValueError(f"no {what} named '{name}' (available: {avail})")


def compare_packet(pattern: str, exact: bool, data: bytes) -> str | None:
    """Compare an output packet with an expect pattern (hex nibbles, '*' = any nibble) the way
    p4c's testutils.compare_pkt does; return None when it matches, else what is wrong."""
    got = data.hex().upper()
    if exact and len(got) > len(pattern):
        return (f"received packet too long: {len(got) / 2:g} bytes, the expectation ends with "
                f"'$' after {len(pattern) / 2:g}")
    if len(got) < len(pattern):
        return f"received packet too short: {len(got) / 2:g} bytes, expected {len(pattern) / 2:g}"
    for i, ch in enumerate(pattern):
        if ch != "*" and ch != got[i]:
            return (f"differs at nibble {i} (byte {i // 2}): expected {ch}, received {got[i]}")
    return None


def _normalize_key_name(name: str) -> str:
    # bmv2stf.py writes header-stack elements as stack$0; P4 names are stack[0].
    return re.sub(r"\$([0-9]+)", r"[\1]", name)


class _Runner:
    def __init__(self, sw: Any, stf: P.StfFile, out: TextIO) -> None:
        self.sw = sw
        self.info: ProgramInfo = sw.info
        self.stf = stf
        self.out = out
        self.passed = 0
        self.failed = 0
        # bmv2 under the driver only has the interfaces the STF file mentions.
        self.ports = {c.port for c in stf.commands if isinstance(c, (P.Packet, P.Expect))}
        self.outputs: dict[int, list[tuple[bytes, int]]] = {}
        self.expects: dict[int, list[P.Expect]] = {}
        self.any_ports: dict[int, list[P.Expect]] = {}
        self.handles: dict[str, tuple[str, dict[str, FieldMatch], int]] = {}
        self.auto_prio: dict[str, int] = {}
        self.last_packet: tuple[P.Packet, int] | None = None   # (command, outputs seen)
        # bmv2's CLI view of the replication engine (groups of nodes; mirroring sessions)
        # is implemented by the switch's PacketReplicationEngine itself.
        self.pre = sw.pre

    # -- reporting
    def err(self, cmd: P.Command | int, msg: str) -> StfError:
        if isinstance(cmd, int):
            return StfError(msg, self.stf.path, cmd)
        return StfError(msg, self.stf.path, cmd.line, cmd.col)

    def fail(self, line: int, msg: str) -> None:
        self.failed += 1
        print(f"FAIL {self.stf.path}:{line}: {msg}", file=self.out)

    def ok(self) -> None:
        self.passed += 1

    def note(self, line: int, msg: str) -> None:
        print(f"{self.stf.path}:{line}: {msg}", file=self.out)

    def resolve(self, cmd: P.Command, name: str, candidates: Iterable[str], what: str) -> str:
        try:
            return resolve_name(name, candidates, what)
        except ValueError as e:
            raise self.err(cmd, str(e)) from None

    # -- main loop
    def run(self) -> tuple[int, int]:
        self.check_expect_ports()
        for cmd in self.stf.commands:
            handler = getattr(self, "do_" + type(cmd).__name__)
            try:
                handler(cmd)
            except StfError as e:
                if e.line is None:
                    raise self.err(cmd, e.message) from None
                raise
            except P4SIM_ERRORS as e:
                # A control-plane refusal or a run-time error of the program.
                raise self.err(cmd, f"{type(e).__name__}: {e}") from None
        self.match_outputs()
        print(f"{self.passed} passed, {self.failed} failed", file=self.out)
        return self.passed, self.failed

    def check_expect_ports(self) -> None:
        for c in self.stf.commands:
            if isinstance(c, P.Expect):
                (self.expects if c.pattern is not None else self.any_ports).setdefault(
                    c.port, []).append(c)
        for port, anys in self.any_ports.items():
            if port in self.expects:
                raise self.err(anys[0], f"port {port} has both 'expect {port}' without data "
                                        "and expect lines with packet data")

    # -- packets
    def do_Packet(self, cmd: P.Packet) -> None:
        outs = self.sw.process(cmd.port, cmd.data)
        seen = 0
        for port, data in outs:
            if port in self.ports:
                self.outputs.setdefault(port, []).append((bytes(data), cmd.line))
                seen += 1
            else:
                self.note(cmd.line, f"note: packet output on port {port}, which no packet/"
                                    f"expect line uses, is discarded: {bytes(data).hex()}")
        self.last_packet = (cmd, seen)

    def do_Expect(self, cmd: P.Expect) -> None:
        pass  # matched against the outputs at the end of the file

    def do_NoPacket(self, cmd: P.NoPacket) -> None:
        if self.last_packet is None:
            raise self.err(cmd, "no_packet before any packet")
        pkt, seen = self.last_packet
        if seen:
            self.fail(cmd.line, f"no_packet: the packet of line {pkt.line} produced {seen} "
                                "output packet(s)")
        else:
            self.ok()

    def do_Wait(self, cmd: P.Wait) -> None:
        pass  # the switch is synchronous: every packet is done when process() returns

    def match_outputs(self) -> None:
        for port, anys in sorted(self.any_ports.items()):
            for _ in anys:
                self.ok()
        for port in sorted(set(self.expects) | set(self.outputs)):
            if port in self.any_ports:
                continue
            exps = self.expects.get(port, [])
            outs = self.outputs.get(port, [])
            for i, e in enumerate(exps):
                if i >= len(outs):
                    self.fail(e.line, f"expected packet #{i + 1} on port {port} was not "
                                      f"received (only {len(outs)} packet(s) output there)")
                    continue
                data, src = outs[i]
                problem = compare_packet(e.pattern or "", e.exact, data)
                if problem:
                    self.fail(e.line, f"packet #{i + 1} on port {port} (from the packet of "
                                      f"line {src}): {problem}\n    expected: "
                                      f"{e.pattern}{'$' if e.exact else ''}\n    received: "
                                      f"{data.hex().upper()}")
                else:
                    self.ok()
            for j in range(len(exps), len(outs)):
                data, src = outs[j]
                self.fail(src, f"unexpected packet #{j + 1} on port {port}: "
                               f"{data.hex().upper()}")

    # -- tables
    def table(self, cmd: P.Command, name: str) -> TableInfo:
        return self.info.tables[self.resolve(cmd, name, self.info.tables, "table")]

    def action_call(self, cmd: P.Command, table: TableInfo, spec: P.ActionSpec) -> ActionCall:
        aname = self.resolve(cmd, spec.name, [a.name for a in table.actions],
                             f"action of table {table.name}")
        ainfo = self.info.actions.get(aname)
        params = {p.name: p.bitwidth for p in ainfo.params} if ainfo else {}
        args: dict[str, int] = {}
        for pname, num in spec.args:
            if pname not in params:
                raise self.err(cmd, f"action {aname} has no parameter '{pname}' (parameters: "
                                    f"{', '.join(params) or 'none'})")
            if num.has_wildcards:
                raise self.err(cmd, f"action argument {pname}: don't-care digits in "
                                    f"'{num.text}'")
            if num.value >> params[pname]:
                raise self.err(cmd, f"action argument {pname}={num.text} does not fit in "
                                    f"bit<{params[pname]}>")
            args[pname] = num.value
        missing = [p for p in params if p not in args]
        if missing:
            raise self.err(cmd, f"action {aname}: missing argument(s) {', '.join(missing)}")
        return ActionCall(aname, args)

    def key_field(self, cmd: P.Command, table: TableInfo, name: str) -> KeyField:
        by_name = {k.name: k for k in table.keys}
        name = _normalize_key_name(name)
        tries = [name]
        for suffix in (".$valid$", ".valid", "$valid$"):
            if name.endswith(suffix):
                # A validity key is "hdr.h.isValid()" in the P4 source, "hdr.h.$valid$" in
                # p4c's P4Info and bmv2 JSON; STF files write h.$valid$ or h.valid.
                base = name[: -len(suffix)].rstrip(".")
                tries += [base + ".isValid()", base + ".$valid$"]
        first_error = None
        for n in tries:
            try:
                return by_name[resolve_name(n, by_name, f"key field of table {table.name}")]
            except ValueError as e:
                first_error = first_error or e
        raise self.err(cmd, str(first_error))

    def match_value(self, cmd: P.Command, kf: KeyField, kv: P.KeyValue) -> FieldMatch | None:
        """Convert one STF key value to a FieldMatch (None: wildcard)."""
        w = kf.bitwidth
        full = (1 << w) - 1
        where = f"key {kf.name} ({kf.match_kind}, bit<{w}>)"

        def fits(n: int, text: str) -> int:
            if n > full:
                raise self.err(cmd, f"{where}: {text} does not fit in {w} bits")
            return n

        def plain(num: P.Number) -> int:
            if num.has_wildcards:
                raise self.err(cmd, f"{where}: don't-care digits in '{num.text}' are only "
                                    "allowed for ternary and lpm keys")
            return fits(num.value, num.text)

        kind = kf.match_kind
        if kind == "exact":
            if not isinstance(kv, P.KeyNumber):
                raise self.err(cmd, f"{where}: expects a plain value")
            return Exact(plain(kv.number))
        if kind == "optional":
            if not isinstance(kv, P.KeyNumber):
                raise self.err(cmd, f"{where}: expects a plain value (leave the key out for "
                                    "a wildcard)")
            return Optional(plain(kv.number))
        if kind == "ternary":
            if isinstance(kv, P.KeyMasked):
                value, mask = plain(kv.number), plain(kv.mask)
            elif isinstance(kv, P.KeyNumber):
                num = kv.number
                if num.is_decimal:
                    # bmv2stf.py: "Decimal value ... not supported for ternary key".
                    raise self.err(cmd, f"{where}: decimal value {num.text} is not supported "
                                        "for a ternary key; write it in hex or binary")
                value, mask = fits(num.value, num.text), fits(num.care or 0, num.text)
            else:
                raise self.err(cmd, f"{where}: expects VALUE (with * digits) or "
                                    "VALUE&&&MASK")
            return Ternary(value & mask, mask) if mask else None
        if kind == "lpm":
            if isinstance(kv, P.KeyPrefix):
                value = plain(kv.number)
                plen = kv.prefix_len.value
                if kv.prefix_len.has_wildcards:
                    raise self.err(cmd, f"{where}: bad prefix length '{kv.prefix_len.text}'")
            elif isinstance(kv, P.KeyNumber):
                num = kv.number
                if num.is_decimal:
                    # bmv2stf.py turns this into a malformed "0x0x.." string; refuse it.
                    raise self.err(cmd, f"{where}: decimal value {num.text} needs an explicit "
                                        "prefix length (VALUE/LEN)")
                digits = num.text[2:]
                if "*" in digits.rstrip("*"):
                    raise self.err(cmd, f"{where}: '*' digits must be trailing in an lpm "
                                        f"value ('{num.text}')")
                plen = (len(digits) - digits.count("*")) * num.bits_per_digit
                value = fits(num.value, num.text)
                if num.digits * num.bits_per_digit != w:
                    self.note(cmd.line, f"warning: {where}: '{num.text}' has "
                                        f"{num.digits * num.bits_per_digit} bits; bmv2stf.py "
                                        f"reads it as {num.value:#x}/{plen}")
            else:
                raise self.err(cmd, f"{where}: expects VALUE/LEN or a value with trailing * "
                                    "digits")
            if plen > w:
                raise self.err(cmd, f"{where}: prefix length {plen} is longer than the key")
            if plen == 0:
                return None
            pmask = full ^ ((1 << (w - plen)) - 1)
            return Lpm(value & pmask, plen)
        if kind == "range":
            if isinstance(kv, P.KeyRange):
                lo, hi = plain(kv.low), plain(kv.high)
            elif isinstance(kv, P.KeyNumber):
                lo = hi = plain(kv.number)
            else:
                raise self.err(cmd, f"{where}: expects LOW..HIGH or a single value")
            if lo > hi:
                raise self.err(cmd, f"{where}: empty range {lo}..{hi}")
            return None if (lo, hi) == (0, full) else Range(lo, hi)
        raise self.err(cmd, f"{where}: match kind {kind} is not supported by STF")

    def entry_match(self, cmd: P.Add, table: TableInfo) -> dict[str, FieldMatch]:
        given: dict[str, FieldMatch | None] = {}
        for name, kv, _line, _col in cmd.keys:
            kf = self.key_field(cmd, table, name)
            given[kf.name] = self.match_value(cmd, kf, kv)   # a repeated key overrides
        match: dict[str, FieldMatch] = {}
        for kf in table.keys:
            if kf.name in given:
                m = given[kf.name]
                if m is not None:
                    match[kf.name] = m
            elif kf.match_kind == "exact":
                match[kf.name] = Exact(0)   # bmv2stf.py's default for an exact key left out
        return match

    def priority(self, cmd: P.Add, table: TableInfo) -> int:
        if not table.needs_priority:
            return 0
        if cmd.priority is not None:
            return _PRIORITY_BASE + cmd.priority
        if "implicit_priority" not in self.stf.extensions:
            raise self.err(cmd, f"table {table.name} needs a priority for each entry ("
                                f"{P.EXTENSIONS['implicit_priority']} is a p4sim extension; "
                                f"declare it on the first line: '# {P.MARKER}: implicit_priority')")
        # No priority given: below all explicit ones, earlier entries winning.
        n = self.auto_prio.get(table.name, 0)
        self.auto_prio[table.name] = n + 1
        if n >= _PRIORITY_BASE - 1:
            raise self.err(cmd, "too many entries without a priority")
        return _PRIORITY_BASE - 1 - n

    def do_Add(self, cmd: P.Add) -> None:
        table = self.table(cmd, cmd.table)
        match = self.entry_match(cmd, table)
        call = self.action_call(cmd, table, cmd.action)
        prio = self.priority(cmd, table)
        self.sw.table_insert(table.name, TableEntry(match, call, prio))
        if cmd.handle is not None:
            self.handles[cmd.handle] = (table.name, match, prio)

    def do_SetDefault(self, cmd: P.SetDefault) -> None:
        table = self.table(cmd, cmd.table)
        self.sw.table_set_default(table.name, self.action_call(cmd, table, cmd.action))

    def do_RemoveAll(self, cmd: P.RemoveAll) -> None:
        for t in self.info.tables.values():
            if not t.has_const_entries:
                self.sw.table_clear(t.name)
        self.handles.clear()

    # -- counters, registers, meters
    def do_CheckCounter(self, cmd: P.CheckCounter) -> None:
        name = _normalize_key_name(cmd.counter)
        counters = self.info.counters
        try:
            cname = resolve_name(name, counters, "counter")
        except ValueError as e:
            # Also accept the table a direct counter is attached to.
            direct = {t.name: t.direct_counter for t in self.info.tables.values()
                      if t.direct_counter}
            try:
                cname = direct[resolve_name(name, direct, "table")]
            except ValueError:
                raise self.err(cmd, str(e)) from None
        cinfo = counters[cname]
        if isinstance(cmd.index, str):
            if cmd.index not in self.handles:
                raise self.err(cmd, f"no entry handle '{cmd.index}' (name one with "
                                    "'add ... = NAME')")
            tname, match, prio = self.handles[cmd.index]
            if cinfo.direct_table != tname:
                raise self.err(cmd, f"counter {cname} is not the direct counter of table "
                                    f"{tname}")
            packets, nbytes = self.sw.direct_counter_read(tname, match, prio)
            what = f"{cname}(${cmd.index})"
        else:
            if cinfo.direct_table:
                raise self.err(cmd, f"{cname} is a direct counter: name a table entry with "
                                    f"'add ... = NAME' and check {cmd.counter}($NAME)")
            packets, nbytes = self.sw.counter_read(cname, cmd.index)
            what = f"{cname}[{cmd.index}]"
        count_type = cmd.count_type or ("bytes" if cinfo.unit == "bytes" else "packets")
        actual = packets if count_type == "packets" else nbytes
        if _OPS[cmd.op](actual, cmd.value):
            self.ok()
        else:
            self.fail(cmd.line, f"check_counter {what}: {count_type} is {actual}, expected "
                                f"{cmd.op} {cmd.value}")

    def counter(self, cmd: P.Command, name: str) -> str:
        return self.resolve(cmd, _normalize_key_name(name), self.info.counters, "counter")

    def register(self, cmd: P.Command, name: str) -> str:
        return self.resolve(cmd, _normalize_key_name(name), self.info.registers, "register")

    def meter(self, cmd: P.Command, name: str) -> str:
        return self.resolve(cmd, _normalize_key_name(name), self.info.meters, "meter")

    def do_CounterRead(self, cmd: P.CounterRead) -> None:
        name = self.counter(cmd, cmd.name)
        packets, nbytes = self.sw.counter_read(name, cmd.index)
        self.note(cmd.line, f"counter_read {name}[{cmd.index}]= packets={packets} "
                            f"bytes={nbytes}")

    def do_CounterWrite(self, cmd: P.CounterWrite) -> None:
        self.sw.counter_write(self.counter(cmd, cmd.name), cmd.index, cmd.packets, cmd.bytes)

    def do_RegisterRead(self, cmd: P.RegisterRead) -> None:
        name = self.register(cmd, cmd.name)
        value = self.sw.register_read(name, cmd.index)
        self.note(cmd.line, f"register_read {name}[{cmd.index}]= {value}")
        if cmd.op is not None:
            assert cmd.value is not None
            if _OPS[cmd.op](value, cmd.value):
                self.ok()
            else:
                self.fail(cmd.line, f"register {name}[{cmd.index}] is {value}, expected "
                                    f"{cmd.op} {cmd.value}")

    def do_RegisterWrite(self, cmd: P.RegisterWrite) -> None:
        self.sw.register_write(self.register(cmd, cmd.name), cmd.index, cmd.value)

    def do_RegisterReset(self, cmd: P.RegisterReset) -> None:
        self.sw.register_reset(self.register(cmd, cmd.name))

    def do_MeterSetRates(self, cmd: P.MeterSetRates) -> None:
        name = self.meter(cmd, cmd.name)
        if len(cmd.rates) != 2:
            raise self.err(cmd, "meter rates: give committed and peak RATE:BURST pairs (two "
                                "pairs, as for a v1model two-rate three-colour meter)")
        indices = [cmd.index] if cmd.index is not None else range(self.info.meters[name].size)
        meter = getattr(self.sw, "meters", {}).get(name)
        for i in indices:
            if hasattr(meter, "set_rates_cli"):
                # bmv2's CLI form: rates per microsecond, kept exact.
                meter.set_rates_cli(i, list(cmd.rates))
            else:
                # The Switch API takes rates per second.
                (cir, cburst), (pir, pburst) = cmd.rates
                self.sw.meter_set_rates(name, i, round(cir * 1e6), cburst, round(pir * 1e6),
                                        pburst)

    def do_MeterGetRates(self, cmd: P.MeterGetRates) -> None:
        raise self.err(cmd, "meter_get_rates is not supported by the p4sim STF runner")

    # -- packet replication engine (bmv2 simple_switch_CLI commands, passed through)
    def do_McMgrpCreate(self, cmd: P.McMgrpCreate) -> None:
        # As in bmv2's simple_pre, a group's handle is its id.
        self.pre.mc_mgrp_create(cmd.group)

    def do_McNodeCreate(self, cmd: P.McNodeCreate) -> None:
        # bmv2 hands out node handles 0, 1, 2, ... in creation order.
        handle = self.pre.mc_node_create(cmd.rid, list(cmd.ports))
        self.note(cmd.line, f"mc_node_create: node handle {handle}")

    def do_McNodeUpdate(self, cmd: P.McNodeUpdate) -> None:
        self.pre.mc_node_update(cmd.node, list(cmd.ports))

    def do_McNodeAssociate(self, cmd: P.McNodeAssociate) -> None:
        self.pre.mc_node_associate(cmd.group, cmd.node)

    def do_MirroringAdd(self, cmd: P.MirroringAdd) -> None:
        self.pre.mirroring_add(cmd.session, cmd.port)

    def do_MirroringAddMc(self, cmd: P.MirroringAddMc) -> None:
        self.pre.mirroring_add_mc(cmd.session, cmd.group)

    def do_MirroringDelete(self, cmd: P.MirroringDelete) -> None:
        self.pre.mirroring_delete(cmd.session)

    def do_MirroringGet(self, cmd: P.MirroringGet) -> None:
        raise self.err(cmd, "mirroring_get is not supported by the p4sim STF runner")


def run_stf_on_switch(sw: Any, stf: P.StfFile, out: TextIO | None = None) -> tuple[int, int]:
    """Run parsed STF commands on an existing switch (anything with the ``Switch`` API);
    print failures and the final ``N passed, M failed`` line (to ``out``, default: the current
    sys.stdout); return (passed, failed)."""
    return _Runner(sw, stf, out if out is not None else sys.stdout).run()


def run_stf(program_path: str, stf_path: str, arch: str = "v1model",
            include_dirs: Sequence[str] = (), out: TextIO | None = None) -> tuple[int, int]:
    """Load ``program_path``, run the STF test ``stf_path`` on a fresh switch, print failures
    and finally ``N passed, M failed``; return (passed, failed). Raises CompileError for a bad
    program and StfError for a bad STF file or a command the switch refuses."""
    from p4sim import Switch, load_program   # late import: the compiler is heavy

    stf = parse_stf_file(stf_path)
    prog = load_program(program_path, arch=arch, include_dirs=list(include_dirs))
    return run_stf_on_switch(Switch(prog), stf, out)


def main(argv: list[str] | None = None) -> int:
    """``python -m p4sim stf PROGRAM.p4 TEST.stf [--arch v1model|tna] [-I DIR]...``.
    Exit status: 0 all checks passed, 1 some failed, 2 the program or STF file is bad."""
    args_in = list(sys.argv[1:] if argv is None else argv)
    if args_in and args_in[0] == "stf":
        args_in = args_in[1:]
    ap = argparse.ArgumentParser(prog="p4sim stf", description="Run a p4c STF test on p4sim.")
    ap.add_argument("program", help="P4_16 program (.p4)")
    ap.add_argument("stf", help="STF test file (.stf)")
    ap.add_argument("--arch", choices=("v1model", "tna"), default="v1model")
    ap.add_argument("-I", dest="include_dirs", action="append", default=[], metavar="DIR",
                    help="add DIR to the #include search path")
    args = ap.parse_args(args_in)
    try:
        _passed, failed = run_stf(args.program, args.stf, args.arch, args.include_dirs)
    except (CompileError, StfError) as e:
        print(str(e), file=sys.stderr)
        return 2
    except P4SIM_ERRORS as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except Exception:   # a p4sim bug: show it, but keep the exit-status contract
        traceback.print_exc()
        return 2
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
