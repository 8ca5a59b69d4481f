"""Malformed P4Runtime requests for the robustness fuzz (benchmarks/fuzz_ina.py): requests built
from the program's P4Info and then mutated (ids, value widths, prefix lengths, masks, ranges,
priorities, update types, atomicity, election and device ids, entity kinds, serialized bytes).
Request i of a run comes from ``numpy.random.default_rng([seed, 1 << 20, i])``.
``benchmarks/fuzz_ina.py`` re-exports every name of this module.
"""
from __future__ import annotations

from typing import Any

import numpy as np


ELECTION = (0, 1)
DEVICE = 1


def _pb():
    import p4sim.p4runtime.server  # noqa: F401  (selects the protobuf backend first)
    from p4.v1 import p4data_pb2, p4runtime_pb2, p4runtime_pb2_grpc
    return p4runtime_pb2, p4runtime_pb2_grpc, p4data_pb2


def _rand_bytes(rng: np.random.Generator, n: int) -> bytes:
    return rng.integers(0, 256, size=max(n, 0), dtype=np.uint8).tobytes()


def _width_bytes(rng: np.random.Generator, bits: int) -> bytes:
    n = (bits + 7) // 8
    r = rng.random()
    if r < 0.6:
        v = int(rng.integers(0, 1 << min(bits, 62), dtype=np.uint64)) if bits else 0
        return v.to_bytes(n, "big") if n else b""
    if r < 0.7:
        return b""
    if r < 0.8:
        return b"\x00" * int(rng.integers(1, 4)) + _rand_bytes(rng, n)   # leading zeros: still valid
    return _rand_bytes(rng, int(rng.choice([n + 1, max(n - 1, 0), int(rng.integers(0, 40))])))


def _rand_id(rng: np.random.Generator, valid: list[int]) -> int:
    r = rng.random()
    if valid and r < 0.8:
        return int(rng.choice(valid))
    if valid and r < 0.9:
        return int(rng.choice(valid)) + int(rng.choice([-1, 1, 1 << 24]))  & 0xFFFFFFFF
    return int(rng.integers(0, 1 << 32, dtype=np.uint64))


def _table_entry(rng: np.random.Generator, info: Any, te: Any) -> None:
    tables = list(info.tables)
    tid = _rand_id(rng, [t.preamble.id for t in tables])
    te.table_id = tid
    table = next((t for t in tables if t.preamble.id == tid), tables[int(rng.integers(len(tables)))])
    for mf in table.match_fields:
        if rng.random() < 0.1:
            continue
        m = te.match.add()
        m.field_id = mf.id if rng.random() < 0.9 else _rand_id(rng, [f.id for f in table.match_fields])
        mtype = mf.match_type if rng.random() < 0.85 else int(rng.integers(1, 6))
        if mtype == 2:
            m.exact.value = _width_bytes(rng, mf.bitwidth)
        elif mtype == 3:
            m.ternary.value = _width_bytes(rng, mf.bitwidth)
            m.ternary.mask = _width_bytes(rng, mf.bitwidth)
        elif mtype == 4:
            m.lpm.value = _width_bytes(rng, mf.bitwidth)
            m.lpm.prefix_len = int(rng.choice([0, 1, mf.bitwidth, mf.bitwidth + 1, -1,
                                               int(rng.integers(-2**31, 2**31))]))
        elif mtype == 5:
            m.range.low = _width_bytes(rng, mf.bitwidth)
            m.range.high = _width_bytes(rng, mf.bitwidth)
        else:
            m.optional.value = _width_bytes(rng, mf.bitwidth)
    if rng.random() < 0.05:
        m = te.match.add()      # a duplicate / extra field
        m.field_id = _rand_id(rng, [f.id for f in table.match_fields])
        m.exact.value = _rand_bytes(rng, 2)
    if rng.random() < 0.85:
        aids = [a.id for a in table.action_refs]
        aid = _rand_id(rng, aids)
        actions = {a.preamble.id: a for a in info.actions}
        act = te.action.action
        act.action_id = aid
        params = list(actions[aid].params) if aid in actions else []
        for p in params:
            if rng.random() < 0.1:
                continue
            pm = act.params.add()
            pm.param_id = p.id if rng.random() < 0.9 else _rand_id(rng, [q.id for q in params])
            pm.value = _width_bytes(rng, p.bitwidth)
        if rng.random() < 0.05:
            pm = act.params.add()
            pm.param_id = int(rng.integers(0, 1 << 32, dtype=np.uint64))
            pm.value = _rand_bytes(rng, 3)
    elif rng.random() < 0.3:
        te.action.action_profile_member_id = int(rng.integers(0, 100))
    te.priority = int(rng.choice([0, 0, 1, 10, -1, int(rng.integers(-2**31, 2**31))]))
    if rng.random() < 0.1:
        te.is_default_action = True
    if rng.random() < 0.05:
        te.idle_timeout_ns = int(rng.integers(0, 1 << 40))
    if rng.random() < 0.05:
        te.counter_data.packet_count = int(rng.integers(-5, 5))
    if rng.random() < 0.05:
        te.metadata = _rand_bytes(rng, int(rng.integers(0, 20)))
    if rng.random() < 0.03:
        te.is_const = True


def _p4data(rng: np.random.Generator, d: Any) -> None:
    r = rng.random()
    if r < 0.6:
        d.bitstring = _rand_bytes(rng, int(rng.integers(0, 20)))
    elif r < 0.7:
        d.bool = True
    elif r < 0.8:
        d.struct.members.add().bitstring = _rand_bytes(rng, 4)
    elif r < 0.9:
        d.tuple.members.add().bitstring = _rand_bytes(rng, 4)
    # else: unset


def _entity(rng: np.random.Generator, info: Any, e: Any, for_read: bool) -> None:
    kind = rng.choice(["table_entry"] * 5 + ["register_entry", "counter_entry", "meter_entry",
                                             "direct_counter_entry", "direct_meter_entry",
                                             "packet_replication_engine_entry", "digest_entry",
                                             "action_profile_member", "action_profile_group",
                                             "value_set_entry", "extern_entry", "none"])
    if kind == "table_entry":
        _table_entry(rng, info, e.table_entry)
        if for_read and rng.random() < 0.5:
            e.table_entry.ClearField("action")
    elif kind == "register_entry":
        re = e.register_entry
        re.register_id = _rand_id(rng, [r.preamble.id for r in info.registers])
        if rng.random() < 0.8:
            re.index.index = int(rng.choice([0, 1, 63, 8191, 8192, 16384, 1 << 20, -1,
                                             int(rng.integers(-2**62, 2**62))]))
        if not for_read or rng.random() < 0.2:
            _p4data(rng, re.data)
    elif kind == "counter_entry":
        ce = e.counter_entry
        ce.counter_id = _rand_id(rng, [c.preamble.id for c in info.counters])
        ce.index.index = int(rng.integers(-3, 1 << 16))
        ce.data.packet_count = int(rng.integers(-3, 100))
    elif kind == "meter_entry":
        me = e.meter_entry
        me.meter_id = _rand_id(rng, [m.preamble.id for m in info.meters])
        me.index.index = int(rng.integers(-3, 100))
        me.config.cir, me.config.pir = (int(x) for x in rng.integers(-10, 1000, size=2))
        me.config.cburst, me.config.pburst = (int(x) for x in rng.integers(-10, 1000, size=2))
    elif kind == "direct_counter_entry":
        _table_entry(rng, info, e.direct_counter_entry.table_entry)
        e.direct_counter_entry.data.byte_count = int(rng.integers(-3, 100))
    elif kind == "direct_meter_entry":
        _table_entry(rng, info, e.direct_meter_entry.table_entry)
        e.direct_meter_entry.config.cir = int(rng.integers(-3, 100))
    elif kind == "packet_replication_engine_entry":
        pre = e.packet_replication_engine_entry
        if rng.random() < 0.6:
            g = pre.multicast_group_entry
            g.multicast_group_id = int(rng.choice([0, 1, 2, 5, 0xFFFF, int(rng.integers(0, 1 << 32, dtype=np.uint64))]))
            for _ in range(int(rng.integers(0, 5))):
                rp = g.replicas.add()
                rp.instance = int(rng.integers(0, 1 << 32, dtype=np.uint64))
                if rng.random() < 0.7:
                    rp.egress_port = int(rng.integers(0, 1 << 32, dtype=np.uint64))
                else:
                    rp.port = _rand_bytes(rng, int(rng.integers(0, 6)))
                if rng.random() < 0.05:
                    rp.backup_replicas.add().port = b"\x03"
        elif rng.random() < 0.8:
            c = pre.clone_session_entry
            c.session_id = int(rng.integers(0, 600))
            c.class_of_service = int(rng.integers(0, 10))
            c.packet_length_bytes = int(rng.integers(-5, 100))
            rp = c.replicas.add()
            rp.egress_port = int(rng.integers(0, 1 << 10))
    elif kind == "digest_entry":
        d = e.digest_entry
        d.digest_id = _rand_id(rng, [x.preamble.id for x in info.digests])
        d.config.max_timeout_ns = int(rng.integers(-5, 10**9))
        d.config.max_list_size = int(rng.integers(-5, 100))
        d.config.ack_timeout_ns = int(rng.integers(-5, 10**9))
    elif kind == "action_profile_member":
        e.action_profile_member.action_profile_id = int(rng.integers(0, 1 << 32, dtype=np.uint64))
    elif kind == "action_profile_group":
        e.action_profile_group.group_id = int(rng.integers(0, 100))
    elif kind == "value_set_entry":
        e.value_set_entry.value_set_id = int(rng.integers(0, 1 << 32, dtype=np.uint64))
    elif kind == "extern_entry":
        e.extern_entry.extern_type_id = int(rng.integers(0, 1 << 32, dtype=np.uint64))
    # "none": an Entity with nothing set


def make_request(seed: int, index: int, info: Any) -> tuple[str, Any]:
    """Request ``index`` of the run with ``seed``: ("write" | "read", the request message)."""
    pb, _, _ = _pb()
    rng = np.random.default_rng([seed, 1 << 20, index])
    r = rng.random()
    if r < 0.06:                                   # random bytes decoded as a message, where it parses
        cls = pb.WriteRequest if rng.random() < 0.5 else pb.ReadRequest
        for _ in range(20):
            try:
                msg = cls.FromString(_rand_bytes(rng, int(rng.integers(0, 64))))
                return ("write" if cls is pb.WriteRequest else "read"), msg
            except Exception:  # noqa: BLE001 -- did not parse: try other bytes
                continue
        return "read", pb.ReadRequest(device_id=DEVICE)
    write = r < 0.7
    if write:
        req = pb.WriteRequest(device_id=DEVICE)
        req.election_id.high, req.election_id.low = ELECTION
        for _ in range(int(rng.choice([1, 1, 1, 2, 3, 0]))):
            u = req.updates.add()
            u.type = int(rng.choice([1, 1, 2, 3, 0, 4, 1000]) if rng.random() < 0.98 else rng.integers(-5, 5))
            _entity(rng, info, u.entity, for_read=False)
        x = rng.random()
        if x < 0.04:
            req.ClearField("election_id")
        elif x < 0.08:
            req.election_id.low = int(rng.integers(2, 1 << 40))
        elif x < 0.1:
            req.device_id = int(rng.integers(2, 1 << 40))
        elif x < 0.12:
            req.atomicity = int(rng.integers(1, 5))
        elif x < 0.14:
            req.role = "fuzz-role"
    else:
        req = pb.ReadRequest(device_id=DEVICE if rng.random() < 0.95 else int(rng.integers(0, 1 << 40)))
        for _ in range(int(rng.choice([1, 1, 2, 0]))):
            e = req.entities.add()
            if rng.random() < 0.1:
                e.table_entry.table_id = 0          # wildcard read of every table
            else:
                _entity(rng, info, e, for_read=True)
    if rng.random() < 0.15:                         # byte-level mutation of the serialized request
        raw = bytearray(req.SerializeToString())
        if raw:
            for pos in rng.integers(0, len(raw) * 8, size=int(rng.integers(1, 4))):
                raw[pos >> 3] ^= 1 << int(pos & 7)
            try:
                req = type(req).FromString(bytes(raw))
            except Exception:  # noqa: BLE001 -- no longer parses: keep the unmutated one
                pass
    return ("write" if write else "read"), req
