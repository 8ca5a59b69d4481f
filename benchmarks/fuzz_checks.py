"""Checks and harness of the robustness fuzzers (benchmarks/fuzz_ina.py, benchmarks/fuzz_bfrt.py):
the run report, the per-frame wall-clock bound, the status oracles of a gRPC request (a Write or
Read sent with a deadline and a second, patient try; the spec's status set) and the request loop
that applies them. ``benchmarks/fuzz_ina.py`` re-exports every name of this module.
"""
from __future__ import annotations

import signal
import threading
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from benchmarks.fuzz_p4rt_requests import _pb


class FrameTimeout(Exception):
    pass


@dataclass
class Report:
    what: str
    count: int = 0
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)

    def violation(self, msg: str) -> None:
        self.violations.append(msg)

    def summary(self) -> str:
        rate = self.count / self.seconds if self.seconds else 0.0
        unit = "frames" if "frames" in self.what else "requests"
        return (f"{self.what}: {self.count} {unit} in {self.seconds:.2f} s = {rate:,.0f} {unit}/s; "
                f"outcomes {dict(sorted(self.outcomes.items()))}; violations {len(self.violations)}")


@contextmanager
def frame_alarm(seconds: float) -> Iterator[Callable[[bool], None]]:
    """Yields ``arm(on)``: arm(True) starts a ``seconds`` SIGALRM bound that raises FrameTimeout,
    arm(False) stops it.  An outer ITIMER_REAL (pytest-timeout's signal method) is suspended
    meanwhile and re-armed with what is left of it afterwards; if it is tighter than
    ``seconds``, or off the main thread, arm does nothing and the outer bound / the measured
    per-frame time is what catches a slow frame."""
    outer = signal.getitimer(signal.ITIMER_REAL)[0]
    if threading.current_thread() is not threading.main_thread() or 0 < outer <= seconds:
        yield lambda on: None
        return

    def on_alarm(signum: int, frame: Any) -> None:
        raise FrameTimeout(f"no answer in {seconds} s")
    t0 = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, 0)
    old = signal.signal(signal.SIGALRM, on_alarm)
    try:
        yield lambda on: signal.setitimer(signal.ITIMER_REAL, seconds if on else 0)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
        if outer > 0:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - t0), 0.001))


def _status_of(err: Any, error_type: Any = None) -> tuple[str, list[str]]:
    """The gRPC code of a failed call, and the per-update / per-entity codes of an UNKNOWN batch
    (``error_type``: the protocol's Error message; P4Runtime's by default)."""
    from google.rpc import code_pb2, status_pb2
    if error_type is None:
        error_type = _pb()[0].Error
    code = err.code().name
    inner: list[str] = []
    if code == "UNKNOWN":
        for k, v in err.trailing_metadata() or ():
            if k == "grpc-status-details-bin":
                st = status_pb2.Status.FromString(v)
                for d in st.details:
                    e = error_type()
                    d.Unpack(e)
                    inner.append(code_pb2.Code.Name(e.canonical_code))
    return code, inner


def bad_status(code: str, inner: list[str], allowed: tuple[str, ...], batch_allowed: tuple[str, ...] = ()) -> bool:
    """Whether an answer is outside what the protocol allows: a code not in ``allowed``, or an
    UNKNOWN batch without per-update errors or with one not in ``allowed + batch_allowed``."""
    if code == "UNKNOWN":
        return not inner or any(c not in allowed + batch_allowed for c in inner)
    return code not in allowed


LARGE_READ = 4096    # register cells: p4sim's pure-Python protobuf answers ~10k cells/s


def wildcard_cells(req: Any, info: Any) -> int:
    """How many register cells a ReadRequest's wildcard register reads cover."""
    sizes = {r.preamble.id: r.size for r in info.registers}
    cells = 0
    for e in getattr(req, "entities", ()):
        if e.WhichOneof("entity") == "register_entry":
            re = e.register_entry
            if re.register_id == 0:
                cells += sum(sizes.values())
            elif not re.HasField("index"):
                cells += sizes.get(re.register_id, 0)
    return cells


def call(fx: Any, kind: str, req: Any, timeout: float) -> tuple[str, list[str]]:
    """Send a Write or Read through ``fx.stub`` (P4Runtime or BfRuntime: the RPCs are named
    alike); its outcome as (code, per-update codes), errors decoded with ``fx.error_type``."""
    import grpc
    try:
        if kind == "write":
            fx.stub.Write(req, timeout=timeout)
        else:
            for _ in fx.stub.Read(req, timeout=timeout):
                pass
        return "OK", []
    except grpc.RpcError as e:
        return _status_of(e, getattr(fx, "error_type", None))


# Seconds a request may take before the server counts as stuck: generous, so that a slow or
# busy machine is never a finding (a small request takes milliseconds on an idle one).
PATIENCE = 120.0


def patient_call(fx: Any, kind: str, req: Any, timeout: float,
                 patience: float = PATIENCE) -> tuple[str, list[str], str]:
    """`call` with `timeout`; a request past it is sent again with `patience` seconds. Returns
    (code, per-update codes, a note for the outcome count: " (slow)" when the second try
    answered). A write sent twice may find its own first copy applied (ALREADY_EXISTS and the
    like), which the spec's set allows anyway."""
    code, inner = call(fx, kind, req, timeout)
    if code != "DEADLINE_EXCEEDED":
        return code, inner, ""
    code, inner = call(fx, kind, req, patience)
    return code, inner, "" if code == "DEADLINE_EXCEEDED" else " (slow: answered past its deadline)"


Exchange = Callable[[int], "tuple[str, Any, str, list[str], str]"]


def drive_requests(rep: Report, where: str, first: int, requests: int, seconds: float | None,
                   exchange: Exchange, allowed: tuple[str, ...], batch_allowed: tuple[str, ...],
                   alive: Callable[[], str | None]) -> None:
    """The fuzzers' loop: `exchange(i)` sends request i and returns (kind, request, status, the
    batch's inner statuses, a note for the outcome count); every status outside `allowed` is a
    violation, and the server must still answer a valid request (`alive`) at the end."""
    deadline = None if seconds is None else time.perf_counter() + seconds
    t0 = time.perf_counter()
    for i in range(first, first + requests):
        if deadline is not None and time.perf_counter() > deadline:
            break
        kind, req, code, inner, note = exchange(i)
        rep.count += 1
        rep.outcomes[f"{kind} {code}{note}"] += 1
        for c in inner:
            rep.outcomes[f"  {kind} batch {c}"] += 1
        if bad_status(code, inner, allowed, batch_allowed):
            rep.violation(f"{where} request index={i} ({kind}) answered {code} {inner}: {str(req)[:600]!r}")
    rep.seconds = time.perf_counter() - t0
    problem = alive()
    if problem is not None:
        rep.violation(f"{where} after requests {first}..{first + rep.count - 1}: {problem}")
