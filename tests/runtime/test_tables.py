import random

import pytest

from p4control import errors
from p4sim.errors import CompileError
from p4control.model import (ActionCall, ActionInfo, ActionParam, ActionRef, Exact, KeyField,
                             Lpm, Optional, Range, TableEntry, TableInfo, Ternary)
from p4sim.runtime.tables import Table

ACTIONS = {
    "NoAction": ActionInfo("NoAction", []),
    "drop": ActionInfo("drop", []),
    "fwd": ActionInfo("fwd", [ActionParam("port", 9)]),
    "set2": ActionInfo("set2", [ActionParam("a", 8), ActionParam("b", 16)]),
    "miss_only": ActionInfo("miss_only", []),
    "hit_only": ActionInfo("hit_only", []),
}
REFS = [ActionRef("NoAction"), ActionRef("drop"), ActionRef("fwd"), ActionRef("set2"),
        ActionRef("miss_only", default_only=True), ActionRef("hit_only", table_only=True)]


def make(keys, **kw):
    kw.setdefault("default_action", ActionCall("NoAction"))
    kw.setdefault("actions", REFS)
    return Table(TableInfo("ingress.t", keys, **kw), ACTIONS)


def fwd(port):
    return ActionCall("fwd", {"port": port})


def entry(match, action=None, priority=0):
    return TableEntry(match, action or fwd(1), priority)


EXACT = [KeyField("dst", 16, "exact"), KeyField("port", 9, "exact")]
LPM = [KeyField("ip", 32, "lpm"), KeyField("vrf", 8, "exact")]
TERN = [KeyField("a", 16, "ternary"), KeyField("b", 8, "exact")]
ALLKINDS = [KeyField("e", 8, "exact"), KeyField("t", 8, "ternary"), KeyField("l", 8, "lpm"),
            KeyField("r", 8, "range"), KeyField("o", 8, "optional")]


# ---------------------------------------------------------------- basics and exact tables

def test_action_index_order_and_default_result():
    t = make(EXACT, default_action=fwd(7))
    assert t.action_names == ["NoAction", "drop", "fwd", "set2", "miss_only", "hit_only"]
    assert t.lookup((1, 2)) == (2, (7,), None)
    assert t.default == fwd(7)


def test_exact_insert_lookup_modify_delete():
    t = make(EXACT)
    lookup = t.lookup                    # callers may cache the bound lookup
    t.insert(entry({"dst": Exact(5), "port": Exact(3)}, ActionCall("set2", {"b": 2, "a": 1})))
    idx, args, h = lookup((5, 3))
    assert (idx, args) == (3, (1, 2)) and h is not None
    assert lookup((5, 4)) == (0, (), None)
    t.modify(entry({"dst": Exact(5), "port": Exact(3)}, fwd(9)))
    assert lookup((5, 3))[:2] == (2, (9,))
    assert t.get({"dst": Exact(5), "port": Exact(3)}).action == fwd(9)
    t.delete({"dst": Exact(5), "port": Exact(3)})
    assert lookup((5, 3)) == (0, (), None)
    assert len(t) == 0


def test_entries_insertion_order_and_copies():
    t = make(EXACT)
    for d in (3, 1, 2):
        t.insert(entry({"dst": Exact(d), "port": Exact(0)}, fwd(d)))
    t.modify(entry({"dst": Exact(3), "port": Exact(0)}, fwd(8)))
    got = t.entries()
    assert [e.match["dst"].value for e in got] == [3, 1, 2]
    assert got[0].action == fwd(8) and got[0].priority == 0 and not got[0].is_const
    got[0].action.args["port"] = 99                       # mutating a read has no effect
    got[0].match.clear()
    assert t.get({"dst": Exact(3), "port": Exact(0)}).action == fwd(8)


def test_duplicate_missing_and_size_errors():
    t = make(EXACT, size=2)
    m = {"dst": Exact(1), "port": Exact(1)}
    t.insert(entry(m))
    with pytest.raises(errors.AlreadyExists):
        t.insert(entry(m, fwd(2)))
    missing = {"dst": Exact(9), "port": Exact(9)}
    for call in (lambda: t.modify(entry(missing)), lambda: t.delete(missing),
                 lambda: t.get(missing), lambda: t.read_counter(missing),
                 lambda: t.write_counter(missing, 0, 1, 1)):
        with pytest.raises(errors.NotFound):
            call()
    t.insert(entry({"dst": Exact(2), "port": Exact(1)}))
    with pytest.raises(errors.ResourceExhausted):
        t.insert(entry({"dst": Exact(3), "port": Exact(1)}))
    t.delete(m)                                           # room again
    t.insert(entry({"dst": Exact(3), "port": Exact(1)}))


@pytest.mark.parametrize("match, msg", [
    ({"dst": Exact(1), "port": Exact(1), "bogus": Exact(1)}, "unknown match field"),
    ({"dst": Exact(1 << 16), "port": Exact(1)}, "does not fit"),
    ({"dst": Exact(-1), "port": Exact(1)}, "does not fit"),
    ({"dst": Exact("1"), "port": Exact(1)}, "must be an integer"),
    ({"dst": Exact(1)}, "exact fields cannot be omitted"),
    ({"dst": Ternary(1, 0xFFFF), "port": Exact(1)}, "expected a exact match"),
])
def test_exact_match_validation(match, msg):
    with pytest.raises(errors.InvalidArgument, match=msg):
        make(EXACT).insert(entry(match))


def test_priority_rules():
    with pytest.raises(errors.InvalidArgument, match="priority must be 0"):
        make(EXACT).insert(entry({"dst": Exact(1), "port": Exact(1)}, priority=5))
    with pytest.raises(errors.InvalidArgument, match="priority must be 0"):
        make(LPM).insert(entry({"vrf": Exact(1)}, priority=1))
    t = make(TERN)
    with pytest.raises(errors.InvalidArgument, match="priority must be > 0"):
        t.insert(entry({"b": Exact(1)}))
    with pytest.raises(errors.InvalidArgument, match="int32"):
        t.insert(entry({"b": Exact(1)}, priority=1 << 31))
    with pytest.raises(errors.InvalidArgument, match="priority must be > 0"):
        t.delete({"b": Exact(1)}, 0)


# ---------------------------------------------------------------- actions and defaults

@pytest.mark.parametrize("action, exc, msg", [
    (ActionCall("nope"), errors.InvalidArgument, "is not one of"),
    (ActionCall("miss_only"), errors.PermissionDenied, "@defaultonly"),
    (ActionCall("fwd"), errors.InvalidArgument, "missing argument port"),
    (ActionCall("fwd", {"port": 1, "x": 2}), errors.InvalidArgument, "no parameter"),
    (ActionCall("fwd", {"port": 512}), errors.InvalidArgument, "does not fit"),
    (ActionCall("fwd", {"port": -1}), errors.InvalidArgument, "does not fit"),
])
def test_entry_action_validation(action, exc, msg):
    t = make(EXACT)
    with pytest.raises(exc, match=msg):
        t.insert(entry({"dst": Exact(1), "port": Exact(1)}, action))
    t.insert(entry({"dst": Exact(1), "port": Exact(1)}))
    with pytest.raises(exc, match=msg):
        t.modify(entry({"dst": Exact(1), "port": Exact(1)}, action))


def test_set_and_reset_default():
    t = make(EXACT, default_action=ActionCall("drop"))
    t.set_default(ActionCall("miss_only"))                # @defaultonly is fine as default
    assert t.lookup((0, 0)) == (4, (), None)
    t.set_default(fwd(3))
    assert t.lookup((0, 0)) == (2, (3,), None) and t.default == fwd(3)
    with pytest.raises(errors.PermissionDenied, match="@tableonly"):
        t.set_default(ActionCall("hit_only"))
    with pytest.raises(errors.InvalidArgument):
        t.set_default(ActionCall("fwd", {"port": 1000}))
    assert t.default == fwd(3)                            # failed writes change nothing
    t.reset_default()
    assert t.lookup((0, 0)) == (1, (), None) and t.default == ActionCall("drop")


def test_const_default_action():
    t = make(EXACT, default_action=fwd(1), default_is_const=True)
    with pytest.raises(errors.PermissionDenied, match="const"):
        t.set_default(ActionCall("drop"))
    with pytest.raises(errors.PermissionDenied):
        t.reset_default()
    assert t.lookup((0, 0)) == (2, (1,), None)


def test_bad_program_is_a_compile_error():
    with pytest.raises(CompileError, match="not defined"):
        Table(TableInfo("t", EXACT, [ActionRef("ghost")], ActionCall("ghost")), ACTIONS)
    with pytest.raises(CompileError, match="default action"):
        make(EXACT, actions=[ActionRef("fwd")], default_action=ActionCall("NoAction"))


def test_keyless_table():
    t = make([], default_action=fwd(4))
    assert t.lookup(()) == (2, (4,), None)
    with pytest.raises(errors.InvalidArgument, match="no key"):
        t.insert(entry({}))
    t.set_default(ActionCall("drop"))
    assert t.lookup(()) == (1, (), None)


# ---------------------------------------------------------------- canonical form

def test_dont_care_matches_are_normalized_away():
    t = make(ALLKINDS)
    t.insert(entry({"e": Exact(1), "t": Ternary(0, 0), "l": Lpm(0, 0), "r": Range(0, 255),
                    "o": Optional(3)}, priority=10))
    [e] = t.entries()
    assert e.match == {"e": Exact(1), "o": Optional(3)}
    # the same entry written in canonical form is a duplicate, and can be read/deleted by it
    with pytest.raises(errors.AlreadyExists):
        t.insert(entry({"e": Exact(1), "o": Optional(3)}, priority=10))
    assert t.get({"e": Exact(1), "o": Optional(3)}, 10).match == e.match
    t.insert(entry({"e": Exact(1), "o": Optional(3)}, priority=11))   # other priority: new
    t.delete({"e": Exact(1), "t": Ternary(0, 0), "o": Optional(3)}, 10)
    assert [x.priority for x in t.entries()] == [11]


@pytest.mark.parametrize("match, msg", [
    ({"e": Exact(1), "t": Ternary(0x13, 0xF0)}, "outside mask"),
    ({"e": Exact(1), "t": Ternary(0x10, 0x1F0)}, "mask 0x1f0 does not fit"),
    ({"e": Exact(1), "t": Ternary(0x100, 0xF0)}, "value 0x100 does not fit"),
    ({"e": Exact(1), "l": Lpm(0x0F, 4)}, "beyond the /4 prefix"),
    ({"e": Exact(1), "l": Lpm(0, 9)}, "prefix length 9"),
    ({"e": Exact(1), "l": Lpm(0, -1)}, "prefix length -1"),
    ({"e": Exact(1), "l": Lpm(0x100, 8)}, "does not fit"),
    ({"e": Exact(1), "r": Range(5, 4)}, "low 0x5 > high 0x4"),
    ({"e": Exact(1), "r": Range(0, 256)}, "does not fit"),
    ({"e": Exact(1), "o": Optional(256)}, "does not fit"),
    ({"e": Exact(1), "o": Exact(1)}, "expected a optional match"),
    ({"e": Exact(1), "r": Ternary(1, 1)}, "expected a range match"),
    ({"e": Exact(1), "l": Ternary(1, 1)}, "expected a lpm match"),
    ({"e": Exact(1), "t": Lpm(1, 8)}, "expected a ternary match"),
    ({"t": Ternary(1, 1)}, "exact fields cannot be omitted"),
])
def test_match_validation_all_kinds(match, msg):
    with pytest.raises(errors.InvalidArgument, match=msg):
        make(ALLKINDS).insert(entry(match, priority=1))


# ---------------------------------------------------------------- lookup semantics

def test_lpm_longest_prefix_with_exact_field():
    t = make(LPM)
    t.insert(entry({"vrf": Exact(1)}, fwd(1)))                         # /0 default route
    t.insert(entry({"ip": Lpm(0x0A000000, 8), "vrf": Exact(1)}, fwd(8)))
    t.insert(entry({"ip": Lpm(0x0A010000, 16), "vrf": Exact(1)}, fwd(16)))
    t.insert(entry({"ip": Lpm(0x0A010203, 32), "vrf": Exact(1)}, fwd(32)))
    t.insert(entry({"ip": Lpm(0x0A010000, 16), "vrf": Exact(2)}, fwd(99)))
    port = lambda ip, vrf=1: t.lookup((ip, vrf))[1]
    assert port(0x0A010203) == (32,)
    assert port(0x0A010204) == (16,)
    assert port(0x0A020304) == (8,)
    assert port(0x0B000000) == (1,)
    assert port(0x0A010203, 2) == (99,)
    assert t.lookup((0x0B000000, 2)) == (0, (), None)
    t.delete({"ip": Lpm(0x0A010203, 32), "vrf": Exact(1)})
    assert port(0x0A010203) == (16,)


def test_ternary_highest_priority_wins_and_ties_go_to_first_inserted():
    t = make(TERN)
    t.insert(entry({"a": Ternary(0x1200, 0xFF00), "b": Exact(1)}, fwd(1), priority=10))
    t.insert(entry({"a": Ternary(0x1234, 0xFFFF), "b": Exact(1)}, fwd(2), priority=5))
    t.insert(entry({"b": Exact(1)}, fwd(3), priority=20))
    assert t.lookup((0x1234, 1))[1] == (3,)
    t.delete({"b": Exact(1)}, 20)
    assert t.lookup((0x1234, 1))[1] == (1,)
    assert t.lookup((0x1299, 1))[1] == (1,)
    assert t.lookup((0x1334, 1)) == (0, (), None)
    # same priority: the entry inserted first wins, whatever the mask
    t.insert(entry({"a": Ternary(0x1234, 0xFFFF), "b": Exact(2)}, fwd(4), priority=7))
    t.insert(entry({"a": Ternary(0x0034, 0x00FF), "b": Exact(2)}, fwd(5), priority=7))
    assert t.lookup((0x1234, 2))[1] == (4,)
    t.modify(entry({"a": Ternary(0x1234, 0xFFFF), "b": Exact(2)}, fwd(6), priority=7))
    assert t.lookup((0x1234, 2))[1] == (6,)                # modify keeps the position


def test_single_field_lpm_table():
    t = make([KeyField("ip", 32, "lpm")])
    assert t.lookup((1,)) == (0, (), None)
    t.insert(entry({}, fwd(0)))                                       # /0
    t.insert(entry({"ip": Lpm(0xC0A80000, 16)}, fwd(16)))
    t.insert(entry({"ip": Lpm(0xC0A80100, 24)}, fwd(24)))
    assert t.lookup((0xC0A80101,))[1] == (24,)
    assert t.lookup((0xC0A80201,))[1] == (16,)
    assert t.lookup((0x01020304,))[1] == (0,)
    t.modify(entry({"ip": Lpm(0xC0A80100, 24)}, ActionCall("drop")))
    assert t.lookup((0xC0A80101,))[:2] == (1, ())
    t.delete({})
    assert t.lookup((0x01020304,)) == (0, (), None)


def test_empty_and_all_wildcard_priority_tables():
    t = make(TERN[:1])
    assert t.lookup((5,)) == (0, (), None)
    t.insert(entry({}, fwd(1), priority=1))                           # matches everything
    assert t.lookup((5,))[1] == (1,)
    t.delete({}, 1)
    assert t.lookup((5,)) == (0, (), None)


def test_lpm_in_a_ternary_table_is_only_a_mask():
    t = make([KeyField("ip", 32, "lpm"), KeyField("t", 8, "ternary")])
    t.insert(entry({"ip": Lpm(0x0A000000, 8)}, fwd(8), priority=100))
    t.insert(entry({"ip": Lpm(0x0A010000, 16)}, fwd(16), priority=1))
    assert t.lookup((0x0A010101, 0))[1] == (8,)            # bmv2: priority beats prefix


def test_range_and_optional_lookup():
    t = make([KeyField("r", 16, "range"), KeyField("o", 8, "optional")])
    t.insert(entry({"r": Range(10, 20), "o": Optional(1)}, fwd(1), priority=3))
    t.insert(entry({"r": Range(15, 30)}, fwd(2), priority=2))
    t.insert(entry({"o": Optional(1)}, fwd(3), priority=1))
    assert t.lookup((12, 1))[1] == (1,)
    assert t.lookup((12, 2)) == (0, (), None)
    assert t.lookup((16, 2))[1] == (2,)
    assert t.lookup((20, 1))[1] == (1,)
    assert t.lookup((21, 1))[1] == (2,)
    assert t.lookup((31, 1))[1] == (3,)


def _reference_lookup(t, key):
    best = None
    for e in t.entries():
        ok = True
        for i, kf in enumerate(t.info.keys):
            fm = e.match.get(kf.name)
            v = key[i]
            if fm is None:
                continue
            if isinstance(fm, (Exact, Optional)):
                ok = v == fm.value
            elif isinstance(fm, Ternary):
                ok = v & fm.mask == fm.value
            elif isinstance(fm, Lpm):
                ok = v >> (kf.bitwidth - fm.prefix_len) == fm.value >> (kf.bitwidth - fm.prefix_len)
            else:
                ok = fm.low <= v <= fm.high
            if not ok:
                break
        if ok and (best is None or e.priority > best.priority):
            best = e
    return best.action.args["port"] if best else None


def test_randomized_priority_lookup_matches_reference():
    rng = random.Random(7)
    t = make(ALLKINDS, size=10_000)
    for _ in range(150):
        m = {"e": Exact(rng.randrange(4))}
        if rng.random() < 0.7:
            mask = rng.choice([0xFF, 0xF0, 0x0F, 0x03, 0x80])
            m["t"] = Ternary(rng.randrange(256) & mask, mask)
        if rng.random() < 0.5:
            plen = rng.randrange(1, 9)
            m["l"] = Lpm(rng.randrange(256) >> (8 - plen) << (8 - plen), plen)
        if rng.random() < 0.5:
            lo = rng.randrange(256)
            m["r"] = Range(lo, min(255, lo + rng.randrange(64)))
        if rng.random() < 0.3:
            m["o"] = Optional(rng.randrange(4))
        try:
            t.insert(entry(m, fwd(rng.randrange(512)), priority=rng.randrange(1, 40)))
        except errors.AlreadyExists:
            pass
    hits = 0
    for _ in range(400):
        key = (rng.randrange(4), rng.randrange(256), rng.randrange(256), rng.randrange(256),
               rng.randrange(4))
        idx, args, h = t.lookup(key)
        assert (args[0] if h else None) == _reference_lookup(t, key)
        hits += h is not None
    assert len(t) > 100 and hits > 40                   # the test really exercises hits


# ---------------------------------------------------------------- const tables and entries

def test_const_entries_table():
    const = [TableEntry({"a": Ternary(0x1200, 0xFF00), "b": Exact(1)}, fwd(1)),
             TableEntry({"b": Exact(1)}, fwd(2))]
    t = make(TERN, const_entries=const, has_const_entries=True, size=1)
    t.install_const_entries()
    got = t.entries()
    assert [e.priority for e in got] == [2, 1]             # first entry wins, as in p4c
    assert all(e.is_const for e in got)
    assert t.lookup((0x1234, 1))[1] == (1,)
    assert t.lookup((0x3434, 1))[1] == (2,)
    m = {"a": Ternary(0x1200, 0xFF00), "b": Exact(1)}
    with pytest.raises(errors.PermissionDenied):
        t.insert(entry({"b": Exact(2)}, priority=1))
    with pytest.raises(errors.PermissionDenied):
        t.modify(entry(m, fwd(5), priority=2))
    with pytest.raises(errors.PermissionDenied):
        t.delete(m, 2)
    t.write_counter(m, 2, 5, 500)                         # direct resources stay writable
    assert t.read_counter(m, 2) == (5, 500)
    t.set_default(ActionCall("drop"))                     # so does a non-const default
    t.clear()
    assert len(t) == 2


def test_preinitialized_table_with_mixed_const_entries():
    init = [TableEntry({"dst": Exact(1), "port": Exact(0)}, fwd(1), is_const=True),
            TableEntry({"dst": Exact(2), "port": Exact(0)}, fwd(2)),
            TableEntry({"dst": Exact(1), "port": Exact(0)}, fwd(3))]   # repeated key: ignored
    t = make(EXACT, const_entries=init)
    t.install_const_entries()
    assert [(e.match["dst"].value, e.is_const) for e in t.entries()] == [(1, True), (2, False)]
    assert t.lookup((1, 0))[1] == (1,)
    with pytest.raises(errors.PermissionDenied, match="is const"):
        t.modify(entry({"dst": Exact(1), "port": Exact(0)}, fwd(9)))
    with pytest.raises(errors.PermissionDenied):
        t.delete({"dst": Exact(1), "port": Exact(0)})
    t.modify(entry({"dst": Exact(2), "port": Exact(0)}, fwd(9)))
    t.insert(entry({"dst": Exact(3), "port": Exact(0)}))
    t.clear()                                             # keeps only the const entry
    assert [e.match["dst"].value for e in t.entries()] == [1]
    assert t.lookup((2, 0)) == (0, (), None)


def test_is_const_flag_rejected_in_writes():
    t = make(EXACT)
    bad = TableEntry({"dst": Exact(1), "port": Exact(0)}, fwd(1), is_const=True)
    with pytest.raises(errors.InvalidArgument, match="is_const"):
        t.insert(bad)
    t.insert(entry({"dst": Exact(1), "port": Exact(0)}))
    with pytest.raises(errors.InvalidArgument, match="is_const"):
        t.modify(bad)


def test_program_entries_are_masked_and_size_is_not_enforced():
    const = [TableEntry({"ip": Lpm(0x0A0B0C0D, 8), "vrf": Exact(0)}, fwd(1)),
             TableEntry({"ip": Lpm(0x0B000000, 8), "vrf": Exact(0)}, fwd(2))]
    t = make(LPM, const_entries=const, has_const_entries=True, size=1)
    t.install_const_entries()
    assert t.entries()[0].match["ip"] == Lpm(0x0A000000, 8)
    assert t.lookup((0x0AFFFFFF, 0))[1] == (1,)


# ---------------------------------------------------------------- direct counters

def test_direct_counters():
    t = make(TERN, direct_counter="ingress.c")
    m = {"a": Ternary(1, 0xFFFF), "b": Exact(1)}
    t.insert(entry(m, priority=1))
    _, _, h = t.lookup((1, 1))
    t.count(h, 100)
    t.count(h, 60)
    t.count(None, 1000)                                   # miss: bmv2 counts nothing
    assert t.read_counter(m, 1) == (2, 160)
    t.modify(entry(m, fwd(3), priority=1))                # MODIFY keeps the counter
    assert t.read_counter(m, 1) == (2, 160)
    t.write_counter(m, 1, 7, 70)
    assert t.read_counter(m, 1) == (7, 70)
    with pytest.raises(errors.InvalidArgument):
        t.write_counter(m, 1, -1, 0)
    t.reset_counters()
    assert t.read_counter(m, 1) == (0, 0)
