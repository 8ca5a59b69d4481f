"""Stateful externs: registers, indexed counters and two-rate three-color meters.

Data-plane methods (``read``/``write``/``count``/``execute``) are fast and never raise: an
out-of-range index behaves as in bmv2 ``simple_switch`` (targets/simple_switch/primitives.cpp):
the write/count/meter update is skipped and the destination of a read or of a meter execution
is left unchanged -- callers get that by passing the destination's current value as
``default``. Control-plane methods (``cp_*``, ``Counter.read``/``write``,
``Meter.set_rates``...) validate and raise P4Runtime errors: a negative index is
INVALID_ARGUMENT, an index past the end OUT_OF_RANGE (P4Runtime spec, RegisterEntry).
"""
from __future__ import annotations

from typing import Literal

import p4control.errors as errors

GREEN = 0
YELLOW = 1
RED = 2
V1MODEL_COLORS = (GREEN, YELLOW, RED)
TNA_COLORS = (0, 1, 3)                 # tna.p4 MeterColor_t: GREEN 0, YELLOW 1, RED 3


def _check_index(name: str, size: int, index: int) -> None:
    if not isinstance(index, int) or index < 0:
        raise errors.InvalidArgument(f"{name}: index {index!r} must be a non-negative integer")
    if index >= size:
        raise errors.OutOfRange(f"{name}: index {index} is out of range (size {size})")


class Register:
    """``register<bit<W>>`` / ``register<int<W>>``. Values are ints; signed registers hold
    signed values (two's complement wrap on write)."""

    def __init__(self, name: str, size: int, bitwidth: int, signed: bool = False,
                 initial: int = 0) -> None:
        self.name = name
        self.size = size
        self.bitwidth = bitwidth
        self.signed = signed
        self.mask = (1 << bitwidth) - 1
        self._sign = 1 << (bitwidth - 1) if bitwidth > 0 else 0
        self.initial = self._wrap(initial)
        self.values: list[int] = [self.initial] * size
        self._shared_address: int | None = None      # see use_shared_storage
        # Bound once so callers may cache reg.write.
        self.write = self._write_signed if signed else self._write_unsigned

    def _wrap(self, v: int) -> int:
        v &= self.mask
        if self.signed and v & self._sign:
            v -= 1 << self.bitwidth
        return v

    def read(self, index: int, default: int = 0) -> int:
        """Element ``index``; ``default`` when out of range (bmv2 leaves the destination
        unchanged, so pass the destination's current value to get exactly that)."""
        return self.values[index] if index < self.size else default

    def write(self, index: int, value: int) -> None:  # replaced per instance
        """Store ``value`` truncated to the register width; ignored when out of range."""
        self.write(index, value)

    def _write_unsigned(self, index: int, value: int) -> None:
        if index < self.size:
            self.values[index] = value & self.mask

    def _write_signed(self, index: int, value: int) -> None:
        if index < self.size:
            self.values[index] = self._wrap(value)

    def reset(self) -> None:
        self.values[:] = [self.initial] * self.size

    def use_shared_storage(self) -> int:
        """Move the cells into a C array that compiled code reads and writes in place (the
        C backend) and return its address. Cells up to 64 bits are one ``int64``/``uint64``
        each; wider ones two 64-bit words, low word first. ``values`` keeps its list-like
        interface (ints, signed as before), so the control plane and the Python runtime see
        exactly what the data plane wrote, with no copying in either direction."""
        import ctypes
        if self._shared_address is not None:
            return self._shared_address
        old = list(self.values)
        if self.bitwidth <= 64:
            cell = ctypes.c_int64 if self.signed else ctypes.c_uint64
            cells = (cell * max(1, self.size))()
            cells[:self.size] = old
            self.values = cells                      # type: ignore[assignment]
            self._shared_address = ctypes.addressof(cells)
            return self._shared_address
        wide = _WideCells(self.size, self.bitwidth, self.signed)
        wide[:] = old
        self.values = wide                           # type: ignore[assignment]
        self._shared_address = wide.address
        return self._shared_address

    def cp_read(self, index: int) -> int:
        _check_index(self.name, self.size, index)
        return self.values[index]

    def cp_write(self, index: int, value: int) -> None:
        """A signed register also accepts the two's complement bit pattern (0..2**W-1), which
        is how P4Runtime bytestrings carry it."""
        _check_index(self.name, self.size, index)
        lo = -self._sign if self.signed else 0
        if not isinstance(value, int) or not lo <= value <= self.mask:
            raise errors.InvalidArgument(
                f"{self.name}: value {value!r} does not fit in "
                f"{'int' if self.signed else 'bit'}<{self.bitwidth}>")
        self.values[index] = self._wrap(value)


class _CellArray:
    """Register cells in a C array of 64-bit words (``words``, shared with compiled code),
    indexed like a list: subclasses convert one cell with ``_get``/``_set``."""

    def __init__(self, size: int, words_per_cell: int) -> None:
        import ctypes
        self.size = size
        self.words = (ctypes.c_uint64 * max(1, size * words_per_cell))()
        self.address = ctypes.addressof(self.words)

    def _get(self, index: int):  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def _set(self, index: int, value) -> None:  # type: ignore[no-untyped-def]
        raise NotImplementedError

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, index: int):  # type: ignore[no-untyped-def]
        if not 0 <= index < self.size:
            raise IndexError(index)
        return self._get(index)

    def __setitem__(self, index: int | slice, value) -> None:  # type: ignore[no-untyped-def]
        if isinstance(index, slice):
            for i, v in zip(range(*index.indices(self.size)), value, strict=True):
                self._set(i, v)
            return
        if not 0 <= index < self.size:
            raise IndexError(index)
        self._set(index, value)

    def __iter__(self):  # type: ignore[no-untyped-def]
        return (self._get(i) for i in range(self.size))


class _WideCells(_CellArray):
    """Register cells wider than 64 bits (up to 128): two 64-bit words per cell, low word
    first; ints."""

    def __init__(self, size: int, bitwidth: int, signed: bool) -> None:
        super().__init__(size, 2)
        self.bitwidth = bitwidth
        self.signed = signed

    def _get(self, index: int) -> int:
        v = self.words[2 * index] | (self.words[2 * index + 1] << 64)
        if self.signed and v >> (self.bitwidth - 1):
            v -= 1 << self.bitwidth
        return v

    def _set(self, index: int, value: int) -> None:
        v = value & ((1 << 128) - 1)
        self.words[2 * index] = v & 0xFFFFFFFFFFFFFFFF
        self.words[2 * index + 1] = v >> 64


class _StructCells(_CellArray):
    """Register<struct> cells: one 64-bit word per field (its raw bits); a read builds a new
    element object, a write stores its fields."""

    def __init__(self, size: int, fields: list[tuple[str, int, bool]], cls: type | None) -> None:
        super().__init__(size, len(fields))
        self.fields = fields
        self.cls = cls

    def _get(self, index: int):  # type: ignore[no-untyped-def]
        assert self.cls is not None, "element class not bound yet"
        obj = self.cls()
        base = index * len(self.fields)
        for k, (name, width, signed) in enumerate(self.fields):
            v = self.words[base + k]
            if signed and v >> (width - 1):
                v -= 1 << width
            setattr(obj, name, v)
        return obj

    def _set(self, index: int, value) -> None:  # type: ignore[no-untyped-def]
        base = index * len(self.fields)
        for k, (name, width, _) in enumerate(self.fields):
            self.words[base + k] = getattr(value, name) & ((1 << width) - 1)


class StructRegister:
    """TNA ``Register<S, I>`` whose elements are structs of bit fields (e.g. a lo/hi pair).

    Elements are the program's generated struct objects (filled in once the program's classes
    exist); RegisterAction bodies update them in place. The control plane sees tuples of the
    field values in declaration order."""

    def __init__(self, name: str, size: int, fields: list[tuple[str, int, bool]],
                 initial: tuple[int, ...]) -> None:
        self.name = name
        self.size = size
        self.fields = fields
        self.initial = initial
        self.values: list = []
        self._cls: type | None = None

    def bind_class(self, cls: type) -> None:
        self._cls = cls
        if isinstance(self.values, _StructCells):
            self.values.cls = cls
        self.reset()

    def use_shared_storage(self) -> int:
        """Move the cells into a C array (the C backend; see Register.use_shared_storage):
        one 64-bit word per field, the field's raw bits. ``values`` then builds element
        objects on reading and stores their fields on writing, so the generated Python code,
        the control plane and the compiled code all see the same cells."""
        if not isinstance(self.values, _StructCells):
            self.values = _StructCells(self.size, self.fields, self._cls)  # type: ignore[assignment]
            if self._cls is not None:
                self.reset()
        return self.values.address

    def _new(self, values: tuple[int, ...]):
        obj = self._cls()
        for (n, width, signed), v in zip(self.fields, values):
            v &= (1 << width) - 1
            if signed and v >> (width - 1):
                v -= 1 << width
            setattr(obj, n, v)
        return obj

    def reset(self) -> None:
        self.values[:] = [self._new(self.initial) for _ in range(self.size)]

    def read(self, index: int, default=None):
        return self.values[index].copy() if index < self.size else default

    def write(self, index: int, value) -> None:
        if index < self.size:
            self.values[index] = value.copy()

    def cp_read(self, index: int) -> tuple[int, ...]:
        _check_index(self.name, self.size, index)
        v = self.values[index]
        return tuple(getattr(v, n) for n, _, _ in self.fields)

    def cp_write(self, index: int, value: tuple[int, ...]) -> None:
        _check_index(self.name, self.size, index)
        if not isinstance(value, tuple) or len(value) != len(self.fields):
            raise errors.InvalidArgument(f"{self.name}: a value is a tuple of {len(self.fields)} fields")
        for (n, width, signed), v in zip(self.fields, value):
            # signed fields take a signed value or its raw bits
            lo, hi = (-(1 << (width - 1)), (1 << width) - 1) if signed else (0, (1 << width) - 1)
            if not lo <= v <= hi:
                raise errors.InvalidArgument(f"{self.name}: field {n} value {v} does not fit {width} bits")
        self.values[index] = self._new(value)


class Counter:
    """Indexed counter. Packets and bytes are both kept whatever the unit (as bmv2 does); the
    unit only tells the control plane which one to report."""

    def __init__(self, name: str, size: int,
                 unit: Literal["packets", "bytes", "packets_and_bytes"]) -> None:
        if unit not in ("packets", "bytes", "packets_and_bytes"):
            raise ValueError(f"counter {name}: bad unit {unit!r}")
        self.name = name
        self.size = size
        self.unit = unit
        self.packets: list[int] = [0] * size
        self.bytes: list[int] = [0] * size

    def count(self, index: int, nbytes: int) -> None:
        if index < self.size:          # out of range: no update (bmv2)
            self.packets[index] += 1
            self.bytes[index] += nbytes

    def read(self, index: int) -> tuple[int, int]:
        _check_index(self.name, self.size, index)
        return self.packets[index], self.bytes[index]

    def write(self, index: int, packets: int, nbytes: int) -> None:
        _check_index(self.name, self.size, index)
        if packets < 0 or nbytes < 0:
            raise errors.InvalidArgument(f"{self.name}: counter values must be >= 0")
        self.packets[index] = packets
        self.bytes[index] = nbytes

    def reset(self) -> None:
        self.packets[:] = [0] * self.size
        self.bytes[:] = [0] * self.size


class Meter:
    """Two-rate three-color marker (RFC 2698, color-blind) with bmv2's arithmetic
    (src/bm_sim/meters.cpp): one token bucket per rate, rates in units per microsecond,
    buckets start full when configured, refill = floor(elapsed_us * rate) tokens counted from
    a fixed time origin, the PIR bucket is tested first (short -> RED, nothing consumed), then
    the CIR bucket (short -> YELLOW), tokens are consumed from each bucket that passes.

    ``kind`` is "indirect" (indexed by the program) or "direct" (one cell per table entry,
    indexed by the caller); ``colors`` is the (green, yellow, red) encoding returned:
    v1model (0, 1, 2) by default, :data:`TNA_COLORS` for tna."""

    def __init__(self, name: str, size: int, unit: Literal["packets", "bytes"],
                 kind: Literal["indirect", "direct"] = "indirect",
                 colors: tuple[int, int, int] = V1MODEL_COLORS) -> None:
        if unit not in ("packets", "bytes"):
            raise ValueError(f"meter {name}: bad unit {unit!r}")
        if kind not in ("indirect", "direct"):
            raise ValueError(f"meter {name}: bad kind {kind!r}")
        self.name = name
        self.size = size
        self.unit = unit
        self.kind = kind
        self.colors = colors
        self._packets = unit == "packets"
        # Per cell: None (unconfigured: always green) or the buckets, PIR first. A bucket is
        # [rate_per_us, burst, tokens, tokens_at_last_refill, color_when_short].
        self._cells: list[list[list] | None] = [None] * size
        self._configs: list[tuple[int, int, int, int] | None] = [None] * size
        self.time_origin: float | None = None

    def set_rates(self, index: int, cir: int, cburst: int, pir: int, pburst: int) -> None:
        """P4Runtime MeterConfig: rates in units (bytes or packets) per second, bursts in
        units. Requires cir <= pir (bmv2 rejects the opposite)."""
        _check_index(self.name, self.size, index)
        for label, v in (("cir", cir), ("cburst", cburst), ("pir", pir), ("pburst", pburst)):
            if not isinstance(v, int) or v < 0:
                raise errors.InvalidArgument(f"{self.name}: {label} must be a non-negative "
                                             f"integer, got {v!r}")
        self._configure(index, cir / 1e6, cburst, pir / 1e6, pburst)
        self._configs[index] = (cir, cburst, pir, pburst)

    def set_rates_cli(self, index: int, rates: list[tuple[float, int]]) -> None:
        """bmv2 CLI form (``meter_set_rates m i 0.5:10 1:20``): [(cir_per_us, cburst),
        (pir_per_us, pburst)]."""
        _check_index(self.name, self.size, index)
        if len(rates) != 2:
            raise errors.InvalidArgument(f"{self.name}: expected 2 rates (CIR, PIR), got "
                                         f"{len(rates)}")
        (c, cb), (p, pb) = rates
        if min(c, cb, p, pb) < 0:
            raise errors.InvalidArgument(f"{self.name}: rates and bursts must be >= 0")
        self._configure(index, float(c), int(cb), float(p), int(pb))
        self._configs[index] = (round(c * 1e6), int(cb), round(p * 1e6), int(pb))

    def _configure(self, index: int, cir_us: float, cburst: int, pir_us: float,
                   pburst: int) -> None:
        if cir_us > pir_us:
            raise errors.InvalidArgument(f"{self.name}: CIR must not exceed PIR")
        green, yellow, red = self.colors
        self._cells[index] = [[pir_us, pburst, pburst, 0, red],
                              [cir_us, cburst, cburst, 0, yellow]]

    def get_rates(self, index: int) -> tuple[int, int, int, int] | None:
        """(cir, cburst, pir, pburst) in units per second, or None if unconfigured."""
        _check_index(self.name, self.size, index)
        return self._configs[index]

    def reset_rates(self, index: int) -> None:
        _check_index(self.name, self.size, index)
        self._cells[index] = None
        self._configs[index] = None

    def reset(self) -> None:
        self._cells = [None] * self.size
        self._configs = [None] * self.size
        self.time_origin = None

    def reset_time_origin(self, now_seconds: float | None = None) -> None:
        """Set the instant refills are counted from (default: the first execute())."""
        self.time_origin = now_seconds

    def execute(self, index: int, nbytes: int, now_seconds: float, default: int = GREEN) -> int:
        """Color of one packet. Unconfigured cell -> green; index out of range -> ``default``
        (bmv2 leaves the destination unchanged: pass its current value)."""
        if index >= self.size:
            return default
        cell = self._cells[index]
        if cell is None:
            return self.colors[0]
        if self.time_origin is None:
            self.time_origin = now_seconds
        micros = int((now_seconds - self.time_origin) * 1_000_000)
        need = 1 if self._packets else nbytes
        for bucket in cell:
            since_origin = int(micros * bucket[0])
            if since_origin > bucket[3]:   # time going backwards just adds no tokens
                bucket[2] = min(bucket[2] + since_origin - bucket[3], bucket[1])
                bucket[3] = since_origin
            if bucket[2] < need:
                return bucket[4]
            bucket[2] -= need
        return self.colors[0]


__all__ = ["Register", "Counter", "Meter", "GREEN", "YELLOW", "RED", "V1MODEL_COLORS",
           "TNA_COLORS"]
