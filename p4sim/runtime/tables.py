"""Match-action tables: control-plane state plus a fast data-plane lookup.

The control plane speaks :mod:`p4control.model` objects (``TableEntry``, ``FieldMatch``,
``ActionCall``) and gets P4Runtime error codes back (:mod:`p4sim.errors`). The data plane calls
:meth:`Table.lookup` with a tuple of already-masked key values and receives
``(action_index, args, handle)`` where ``handle`` is ``None`` on a miss.

Rules followed (P4Runtime spec v1.3+, "TableEntry" and "Constant Tables"):

* match fields are stored in canonical form: "don't care" matches (ternary mask 0, lpm prefix 0,
  a range covering the whole field, an absent optional) are dropped, so reads are symmetric
  with writes whatever form the caller used;
* ``priority`` must be > 0 iff the key has a ternary/range/optional field; a larger value wins,
  ties go to the entry inserted first;
* writes to a ``const entries`` table, to a const entry, or to a const default action, and
  action-scope violations (@defaultonly in an entry, @tableonly as default) are
  PERMISSION_DENIED; every other malformed request is INVALID_ARGUMENT.

Lookup semantics follow bmv2: exact-only tables are one dict lookup; a table whose key is one
lpm field plus exact fields picks the longest prefix; any table with a ternary, range or optional
field picks the highest priority (an lpm field there is just a prefix mask, as in bmv2).
"""
from __future__ import annotations

from bisect import bisect_right
from operator import and_
from typing import Callable

import p4control.errors as errors
from p4sim.errors import CompileError
from p4control.model import (ActionCall, ActionInfo, Exact, FieldMatch, KeyField, Lpm,
                             Optional, Range, TableEntry, TableInfo, Ternary)

LookupResult = tuple[int, tuple[int, ...], "object | None"]

_MAX_PRIORITY = (1 << 31) - 1          # P4Runtime carries priority in an int32
_MATCH_CLASS = {"exact": Exact, "ternary": Ternary, "lpm": Lpm, "range": Range,
                "optional": Optional}


class _Entry:
    """The per-entry handle handed to the data plane (it also carries the direct counter)."""

    __slots__ = ("key", "match", "priority", "action", "is_const", "seq", "rank", "masks",
                 "values", "ranges", "result", "counter_packets", "counter_bytes")

    def __init__(self, key: tuple, match: dict[str, FieldMatch], priority: int,
                 is_const: bool, seq: int, rank: int, masks: tuple[int, ...],
                 values: tuple[int, ...], ranges: tuple[tuple[int, int, int], ...]) -> None:
        self.key = key
        self.match = match
        self.priority = priority
        self.is_const = is_const
        self.seq = seq
        self.rank = rank
        self.masks = masks
        self.values = values
        self.ranges = ranges
        self.action: ActionCall = ActionCall("")
        self.result: LookupResult = (0, (), None)
        self.counter_packets = 0
        self.counter_bytes = 0

    def set_action(self, call: ActionCall, index: int, args: tuple[int, ...]) -> None:
        self.action = ActionCall(call.name, dict(call.args))
        # Precomputed so that a hit returns a ready-made tuple and allocates nothing.
        self.result = (index, args, self)

    def __repr__(self) -> str:
        return f"<entry {self.match} prio={self.priority} -> {self.action.name}>"


class Table:
    """One P4 table instance. ``lookup`` is bound once at construction, so callers may cache
    ``table.lookup`` in a local variable."""

    def __init__(self, info: TableInfo, actions: dict[str, ActionInfo]) -> None:
        self.info = info
        self.name = info.name
        self.action_names: list[str] = [ref.name for ref in info.actions]
        self._action_index = {name: i for i, name in enumerate(self.action_names)}
        self._action_refs = {ref.name: ref for ref in info.actions}
        self._action_info: list[ActionInfo] = []
        for name in self.action_names:
            if name not in actions:
                raise CompileError(f"table {self.name}: action {name} is not defined")
            self._action_info.append(actions[name])

        self._keys: list[KeyField] = list(info.keys)
        self._key_pos = {k.name: i for i, k in enumerate(self._keys)}
        self._full = [(1 << k.bitwidth) - 1 for k in self._keys]
        kinds = [k.match_kind for k in self._keys]
        self.needs_priority = info.needs_priority
        self._exact_only = all(kind == "exact" for kind in kinds)

        self._entries: dict[tuple, _Entry] = {}     # identity key -> entry, insertion order
        self._seq = 0
        self._exact: dict[tuple[int, ...], LookupResult] = {}
        # Lazily rebuilt lookup structures (see _rebuild_lpm / _rebuild_priority).
        self._lpm_groups: list[tuple] = []
        self._order: list[_Entry] = []
        self._field_sets: list[tuple] = []
        self._dirty = True
        # Bumped on every data-plane-visible change (entries, actions, default action), so a
        # compiled copy of the table (the C backend's snapshot) knows when to reload;
        # on_change, when set, is told at once.
        self.generation = 0
        self.on_change: Callable[[], None] | None = None

        try:
            self._default_result = self._resolve_default(info.default_action)
        except errors.ControlPlaneError as e:
            raise CompileError(f"table {self.name}: bad default action: {e}") from None
        self._default_call = ActionCall(info.default_action.name, dict(info.default_action.args))
        self._program_default = self._default_call

        if not self._keys:
            self.lookup = self._lookup_keyless
        elif self._exact_only:
            self.lookup = self._lookup_exact
        elif self.needs_priority:
            self.lookup = self._lookup_priority
        elif len(self._keys) == 1:
            self.lookup = self._lookup_lpm_single
        else:
            self.lookup = self._lookup_lpm

    # ------------------------------------------------------------------ data plane

    def lookup(self, key: tuple[int, ...]) -> LookupResult:  # replaced per instance
        """Return ``(action_index, args, handle)``; on a miss the default action and None.
        ``key`` holds one non-negative, width-masked int per key field in ``info.keys``
        order."""
        return self.lookup(key)

    def _lookup_keyless(self, key: tuple[int, ...]) -> LookupResult:
        return self._default_result

    def _lookup_exact(self, key: tuple[int, ...]) -> LookupResult:
        return self._exact.get(key) or self._default_result

    def _lookup_lpm(self, key: tuple[int, ...]) -> LookupResult:
        # Tuple-space search over one dict per prefix length, longest first: the first hit
        # is the longest matching prefix (exact fields are part of every dict key).
        if self._dirty:
            self._rebuild_lpm()
        for masks, entries in self._lpm_groups:
            e = entries.get(tuple(map(and_, key, masks)))
            if e is not None:
                return e.result
        return self._default_result

    def _lookup_lpm_single(self, key: tuple[int, ...]) -> LookupResult:
        # Same search for the common one-field table (ipv4_lpm), keyed by plain ints: no
        # tuple building per probe, about 3x faster.
        if self._dirty:
            self._rebuild_lpm()
        k = key[0]
        for mask, entries in self._lpm_groups:
            e = entries.get(k & mask)
            if e is not None:
                return e.result
        return self._default_result

    def _lookup_priority(self, key: tuple[int, ...]) -> LookupResult:
        # Bit-vector classification: entries are numbered best first (priority desc, then
        # insertion order); each field yields the set of entries it lets through as an int
        # bitmap; the lowest set bit of the intersection is the winner. The cost grows with
        # the number of distinct masks *per field*, not with their combinations.
        if self._dirty:
            self._rebuild_priority()
        acc = -1
        for pos, wild, groups, points, interval_sets in self._field_sets:
            k = key[pos]
            if points is None:
                b = wild
                for mask, sets in groups:
                    s = sets.get(k & mask)
                    if s:
                        b |= s
            else:
                b = interval_sets[bisect_right(points, k)]
            acc &= b
            if not acc:
                return self._default_result
        return self._order[(acc & -acc).bit_length() - 1].result

    def count(self, handle: object | None, packet_length_bytes: int) -> None:
        """Direct counter update. Like bmv2, only hits are counted: a None handle is a no-op."""
        if handle is not None:
            handle.counter_packets += 1
            handle.counter_bytes += packet_length_bytes

    def _lpm_groups_ordered(self) -> list[tuple[tuple[int, ...], tuple[int, dict[tuple[int, ...], _Entry]]]]:
        groups: dict[tuple[int, ...], tuple[int, dict[tuple[int, ...], _Entry]]] = {}
        for e in self._entries.values():
            groups.setdefault(e.masks, (e.rank, {}))[1][e.values] = e
        # Longest (total) prefix first; ties -- only possible with several lpm fields, which
        # bmv2 does not allow -- keep the order in which the prefix lengths first appeared.
        return sorted(groups.items(), key=lambda g: -g[1][0])

    def _rebuild_lpm(self) -> None:
        ordered = self._lpm_groups_ordered()
        if len(self._keys) == 1:             # see _lookup_lpm_single
            self._lpm_groups = [(masks[0], {v[0]: e for v, e in entries.items()})
                                for masks, (_, entries) in ordered]
        else:
            self._lpm_groups = [(masks, entries) for masks, (_, entries) in ordered]
        self._dirty = False

    def _rebuild_priority(self) -> None:
        order = sorted(self._entries.values(), key=_rank_order)
        everyone = (1 << len(order)) - 1
        field_sets = []
        for pos, kf in enumerate(self._keys):
            wild = 0
            if kf.match_kind == "range":
                # Elementary intervals between all range bounds; interval_sets[j] holds the
                # entries whose range covers [points[j-1], points[j]).
                events: dict[int, list[int]] = {}
                for i, e in enumerate(order):
                    r = next((r for r in e.ranges if r[0] == pos), None)
                    if r is None:
                        wild |= 1 << i
                    else:
                        events.setdefault(r[1], []).append(i)
                        events.setdefault(r[2] + 1, []).append(~i)
                points = sorted(events)
                interval_sets = [wild]
                live = wild
                for p in points:
                    for i in events[p]:
                        live = live | (1 << i) if i >= 0 else live & ~(1 << ~i)
                    interval_sets.append(live)
                if wild != everyone:
                    field_sets.append((pos, wild, None, points, interval_sets))
                continue
            by_mask: dict[int, dict[int, int]] = {}
            for i, e in enumerate(order):
                mask = e.masks[pos]
                if mask == 0:
                    wild |= 1 << i
                else:
                    sets = by_mask.setdefault(mask, {})
                    v = e.values[pos]
                    sets[v] = sets.get(v, 0) | (1 << i)
            if wild != everyone:            # a field nobody constrains filters nothing
                field_sets.append((pos, wild, list(by_mask.items()), None, None))
        # Most selective fields first so that misses exit early.
        field_sets.sort(key=lambda f: (f[1].bit_count(), f[3] is not None))
        if not order:                       # empty table: one filter that passes nobody
            field_sets = [(0, 0, [], None, None)]
        self._order = order
        self._field_sets = field_sets
        self._dirty = False

    def _bump(self) -> None:
        self.generation += 1
        if self.on_change is not None:
            self.on_change()

    def dataplane_plan(self) -> tuple[str, list[tuple[tuple[int, ...], list[_Entry]]], LookupResult]:
        """How the data plane searches this table, for a compiled copy of it (the C backend):
        ``("groups", [(masks, entries), ...], default)`` -- probe each group's masked key in
        order, the first hit wins (exact tables are one group, lpm tables one group per
        prefix length, longest first) -- or ``("priority", [([], entries best first)],
        default)`` -- the first entry whose ternary masks and ranges all match wins. Entries
        are the handles whose ``masks``, ``values``, ``ranges`` and ``result`` the lookups
        here use, so both searches give the same answers."""
        if self._keys and self.needs_priority:
            return "priority", [((), sorted(self._entries.values(), key=_rank_order))], self._default_result
        if not self._keys:
            return "groups", [], self._default_result
        if self._exact_only:
            return "groups", [(tuple(self._full), list(self._entries.values()))], self._default_result
        return ("groups", [(masks, list(entries.values())) for masks, (_, entries) in self._lpm_groups_ordered()],
                self._default_result)

    def _changed(self, e: _Entry, added: bool) -> None:
        self._bump()
        # Exact tables are updated in place (learning tables write while packets flow);
        # the other kinds rebuild lazily on the next lookup.
        if self._exact_only:
            if added:
                self._exact[e.values] = e.result
            else:
                self._exact.pop(e.values, None)
        else:
            self._dirty = True

    # ------------------------------------------------------------------ control plane

    def insert(self, entry: TableEntry) -> None:
        self._check_entries_writable("insert entries into")
        if entry.is_const:
            raise errors.InvalidArgument(f"table {self.name}: is_const must be false in a write")
        self._add(entry, strict=True, is_const=False, check_size=True)

    def modify(self, entry: TableEntry) -> None:
        """Change the action of an existing entry (match and priority identify it). The entry
        keeps its position and its direct counter."""
        self._check_entries_writable("modify entries of")
        if entry.is_const:
            raise errors.InvalidArgument(f"table {self.name}: is_const must be false in a write")
        e = self._find(entry.match, entry.priority)
        if e.is_const:
            raise errors.PermissionDenied(f"table {self.name}: entry {e.match} is const")
        index, args = self._resolve_action(entry.action, for_default=False)
        e.set_action(entry.action, index, args)
        if self._exact_only:
            self._exact[e.values] = e.result
        # The other lookup structures hold the entry objects themselves: no rebuild needed.
        self._bump()

    def delete(self, match: dict[str, FieldMatch], priority: int = 0) -> None:
        self._check_entries_writable("delete entries of")
        e = self._find(match, priority)
        if e.is_const:
            raise errors.PermissionDenied(f"table {self.name}: entry {e.match} is const")
        del self._entries[e.key]
        self._changed(e, added=False)

    def get(self, match: dict[str, FieldMatch], priority: int = 0) -> TableEntry:
        return _to_table_entry(self._find(match, priority))

    def entries(self) -> list[TableEntry]:
        """All entries (const ones included) in insertion order, in canonical form."""
        return [_to_table_entry(e) for e in self._entries.values()]

    def __len__(self) -> int:
        return len(self._entries)

    def clear(self) -> None:
        """Delete every entry the control plane may delete (all but the const ones), like
        bmv2's ``table_clear``. The default action and remaining counters are untouched."""
        doomed = [e for e in self._entries.values() if not e.is_const]
        for e in doomed:
            del self._entries[e.key]
            self._changed(e, added=False)

    def install_const_entries(self) -> None:
        """Install ``info.const_entries`` (``const entries`` or ``entries``) at load time.

        Program-supplied entries are taken leniently: stray ternary/lpm value bits are masked
        off, a missing priority in a priority table is inferred from the order (first entry
        wins, like p4c: N for the first of N entries down to 1), a key repeated later is
        ignored (the first one wins) and the table size is not enforced."""
        n = len(self.info.const_entries)
        for i, src in enumerate(self.info.const_entries):
            priority = src.priority if self.needs_priority else 0
            if self.needs_priority and priority <= 0:
                priority = n - i
            entry = TableEntry(src.match, src.action, priority)
            key, _, _ = self._canonical(entry.match, priority, strict=False)
            if key in self._entries:
                continue
            self._add(entry, strict=False, is_const=self.info.has_const_entries or src.is_const,
                      check_size=False)

    # ---- default action

    @property
    def default(self) -> ActionCall:
        return ActionCall(self._default_call.name, dict(self._default_call.args))

    def set_default(self, call: ActionCall) -> None:
        if self.info.default_is_const:
            raise errors.PermissionDenied(f"table {self.name}: the default action is const")
        self._default_result = self._resolve_default(call)
        self._default_call = ActionCall(call.name, dict(call.args))
        self._bump()

    def reset_default(self) -> None:
        """Back to the P4 program's default action (P4Runtime MODIFY with no action)."""
        self.set_default(self._program_default)

    # ---- direct counters

    def read_counter(self, match: dict[str, FieldMatch], priority: int = 0) -> tuple[int, int]:
        e = self._find(match, priority)
        return e.counter_packets, e.counter_bytes

    def write_counter(self, match: dict[str, FieldMatch], priority: int, packets: int,
                      nbytes: int) -> None:
        """Allowed on const tables too (P4Runtime allows MODIFY of direct resources)."""
        if packets < 0 or nbytes < 0:
            raise errors.InvalidArgument(f"table {self.name}: counter values must be >= 0")
        e = self._find(match, priority)
        e.counter_packets = packets
        e.counter_bytes = nbytes

    def reset_counters(self) -> None:
        for e in self._entries.values():
            e.counter_packets = e.counter_bytes = 0

    # ------------------------------------------------------------------ helpers

    def _check_entries_writable(self, what: str) -> None:
        if self.info.has_const_entries:
            raise errors.PermissionDenied(
                f"cannot {what} table {self.name}: its entries are const (const entries)")

    def _add(self, entry: TableEntry, *, strict: bool, is_const: bool, check_size: bool) -> None:
        if not self._keys:
            raise errors.InvalidArgument(f"table {self.name} has no key: entries cannot be "
                                         "inserted, only the default action can be set")
        key, match, compiled = self._canonical(entry.match, entry.priority, strict=strict)
        index, args = self._resolve_action(entry.action, for_default=False)
        if key in self._entries:
            raise errors.AlreadyExists(
                f"table {self.name}: an entry with match {match} and priority "
                f"{entry.priority} already exists")
        if check_size and 0 < self.info.size <= len(self._entries):
            raise errors.ResourceExhausted(
                f"table {self.name} is full ({self.info.size} entries)")
        masks, values, ranges, lpm_len = compiled
        rank = entry.priority if self.needs_priority else lpm_len
        e = _Entry(key, match, entry.priority, is_const, self._seq, rank, masks, values, ranges)
        self._seq += 1
        e.set_action(entry.action, index, args)
        self._entries[key] = e
        self._changed(e, added=True)

    def _find(self, match: dict[str, FieldMatch], priority: int) -> _Entry:
        key, canon, _ = self._canonical(match, priority, strict=True)
        e = self._entries.get(key)
        if e is None:
            raise errors.NotFound(
                f"table {self.name}: no entry with match {canon} and priority {priority}")
        return e

    def _canonical(self, match: dict[str, FieldMatch], priority: int, *, strict: bool):
        """Validate ``match``/``priority``; return the identity key, the canonical match dict
        and the compiled (masks, values, ranges, lpm prefix length) data-plane form."""
        t = self.name
        if self.needs_priority:
            if priority <= 0:
                raise errors.InvalidArgument(
                    f"table {t}: priority must be > 0 (the key has ternary/range/optional "
                    f"fields); got {priority}")
            if priority > _MAX_PRIORITY:
                raise errors.InvalidArgument(f"table {t}: priority {priority} exceeds int32")
        elif priority != 0:
            raise errors.InvalidArgument(
                f"table {t}: priority must be 0 (no ternary/range/optional field); "
                f"got {priority}")
        for name in match:
            if name not in self._key_pos:
                raise errors.InvalidArgument(f"table {t}: unknown match field {name!r}; key "
                                             f"fields are {[k.name for k in self._keys]}")
        ident: list = []
        canon: dict[str, FieldMatch] = {}
        masks: list[int] = []
        values: list[int] = []
        ranges: list[tuple[int, int, int]] = []
        lpm_len = 0
        for i, kf in enumerate(self._keys):
            fm = match.get(kf.name)
            full = self._full[i]
            kind = kf.match_kind
            where = f"table {t}, field {kf.name} (bit<{kf.bitwidth}>, {kind})"
            if fm is None:
                if kind == "exact":
                    raise errors.InvalidArgument(f"{where}: exact fields cannot be omitted")
                ident.append(None); masks.append(0); values.append(0)
                continue
            if type(fm) is not _MATCH_CLASS[kind]:
                raise errors.InvalidArgument(
                    f"{where}: expected a {kind} match, got {type(fm).__name__}")
            if kind in ("exact", "optional"):
                v = _check_value(fm.value, full, where, "value")
                ident.append(v); masks.append(full); values.append(v)
                canon[kf.name] = fm
            elif kind == "ternary":
                m = _check_value(fm.mask, full, where, "mask")
                v = _check_value(fm.value, full, where, "value")
                if v & ~m:
                    if strict:
                        raise errors.InvalidArgument(
                            f"{where}: value {v:#x} has bits outside mask {m:#x}")
                    v &= m
                if m == 0:                   # "don't care": canonical form omits it
                    ident.append(None); masks.append(0); values.append(0)
                    continue
                ident.append((v, m)); masks.append(m); values.append(v)
                canon[kf.name] = Ternary(v, m)
            elif kind == "lpm":
                plen = fm.prefix_len
                if not 0 <= plen <= kf.bitwidth:
                    raise errors.InvalidArgument(
                        f"{where}: prefix length {plen} is not in 0..{kf.bitwidth}")
                v = _check_value(fm.value, full, where, "value")
                m = full ^ ((1 << (kf.bitwidth - plen)) - 1)
                if v & ~m:
                    if strict:
                        raise errors.InvalidArgument(
                            f"{where}: value {v:#x} has bits beyond the /{plen} prefix")
                    v &= m
                lpm_len += plen
                if plen == 0:
                    ident.append(None); masks.append(0); values.append(0)
                    continue
                ident.append((v, plen)); masks.append(m); values.append(v)
                canon[kf.name] = Lpm(v, plen)
            else:  # range
                lo = _check_value(fm.low, full, where, "low bound")
                hi = _check_value(fm.high, full, where, "high bound")
                if lo > hi:
                    raise errors.InvalidArgument(f"{where}: low {lo:#x} > high {hi:#x}")
                masks.append(0); values.append(0)
                if lo == 0 and hi == full:
                    ident.append(None)
                    continue
                ident.append((lo, hi))
                ranges.append((i, lo, hi))
                canon[kf.name] = fm
        return ((tuple(ident), priority), canon,
                (tuple(masks), tuple(values), tuple(ranges), lpm_len))

    def _resolve_action(self, call: ActionCall, *,
                        for_default: bool) -> tuple[int, tuple[int, ...]]:
        t = self.name
        index = self._action_index.get(call.name)
        if index is None:
            raise errors.InvalidArgument(
                f"table {t}: action {call.name!r} is not one of {self.action_names}")
        ref = self._action_refs[call.name]
        if for_default and ref.table_only:
            raise errors.PermissionDenied(
                f"table {t}: action {call.name} is @tableonly and cannot be the default")
        if not for_default and ref.default_only:
            raise errors.PermissionDenied(
                f"table {t}: action {call.name} is @defaultonly and cannot be used in entries")
        params = self._action_info[index].params
        names = {p.name for p in params}
        extra = [n for n in call.args if n not in names]
        if extra:
            raise errors.InvalidArgument(f"table {t}: action {call.name} has no parameter(s) "
                                         f"{extra}; parameters are {[p.name for p in params]}")
        args = []
        for p in params:
            if p.name not in call.args:
                raise errors.InvalidArgument(
                    f"table {t}: action {call.name}: missing argument {p.name}")
            args.append(_check_value(call.args[p.name], (1 << p.bitwidth) - 1,
                                     f"table {t}: action {call.name}, parameter {p.name} "
                                     f"(bit<{p.bitwidth}>)", "argument"))
        return index, tuple(args)

    def _resolve_default(self, call: ActionCall) -> LookupResult:
        index, args = self._resolve_action(call, for_default=True)
        return (index, args, None)


def _rank_order(e: _Entry) -> tuple[int, int]:
    return (-e.rank, e.seq)


def _check_value(v: int, full: int, where: str, what: str) -> int:
    if not isinstance(v, int) or isinstance(v, bool):
        raise errors.InvalidArgument(f"{where}: {what} must be an integer, got {v!r}")
    if v < 0 or v > full:
        raise errors.InvalidArgument(
            f"{where}: {what} {v:#x} does not fit in {full.bit_length()} bits")
    return v


def _to_table_entry(e: _Entry) -> TableEntry:
    return TableEntry(dict(e.match), ActionCall(e.action.name, dict(e.action.args)),
                      e.priority, e.is_const)


__all__ = ["Table", "LookupResult"]
