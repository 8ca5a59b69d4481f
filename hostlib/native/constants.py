"""The constants the C data path shares with Python, written once: here, or in the Python module
that owns them (the wire format, the worker's tuning, the RTO floor).

The build writes :func:`header` into ``constants.h`` beside the C sources (hostlib/native/
library.py), so the C never spells a shared value itself; the loaded library reports what it
was compiled with (``ina_constant``), and ``tests/host_agents/test_native_datapath.py``
compares every one with :func:`shared_constants`.
"""
from __future__ import annotations

from ..protocol import ETH_IP_UDP_LEN, HEADER_LEN, INA_UDP_PORT, INA_VERSION, MAX_WORKERS, WORKER_AGGREGATE, Flags
from ..rto import RETRY_MIN
from ..worker_tuning import ANSWER_BACKOFF, FAST_RETRANSMIT_AFTER, STALE_AFTER

# what the C cores return for one frame (sans-IO calls)
OK = 0
HANDOFF = 1          # the Python core must handle this frame
NEWROUND = 2         # PS: a newer round; the Python core tracks it, then the frame is tried again
GAP_PY = 3           # PS: handled; the gap rule concerns an entry the Python core owns
# why a C UDP loop returned to Python
EV_DONE = 10         # the worker's round is complete
EV_POLL = 11         # the poll interval passed: check the stop condition
EV_TIMER = 12        # a timer is due (C's or the Python core's)
EV_FRAME = 13        # a frame for the Python core (the loop's hand-off datagram)
EV_NEWROUND = 14     # PS: NEWROUND for the hand-off datagram (read again on the next call)
EV_GAP = 15          # PS: GAP_PY for the hand-off datagram

# the C PS's counters, by index: ParameterServer.stats.received kinds
KINDS = ("plain", "partial", "collision", "preempted", "drained", "switch_result", "reminder", "no_contribution",
         "stale", "late", "overlap", "resend", "crossed", "ask")
# the C PS's entry states (ina_ps_take, ina_ps_collect)
ENTRY_OPEN, ENTRY_DONE, ENTRY_PYTHON = 1, 2, 3

# The socket options of UDP GRO, from the system's headers on the C side (Python's socket
# module lacks UDP_GRO); the library reports its values, compared with these.
SOL_UDP, UDP_GRO = 17, 104


def shared_constants() -> dict[str, int | float]:
    """Every constant ``constants.h`` defines, by its C name, with its Python value."""
    out: dict[str, int | float] = {
        "PREFIX": ETH_IP_UDP_LEN, "HDR": HEADER_LEN, "INA_VERSION": INA_VERSION, "INA_UDP_PORT": INA_UDP_PORT,
        "WORKER_AGGREGATE": WORKER_AGGREGATE, "MAX_WORKERS": MAX_WORKERS,
    }
    out.update({f"F_{flag.name}": int(flag) for flag in Flags})
    out.update(FAST_RETRANSMIT_AFTER=FAST_RETRANSMIT_AFTER, STALE_AFTER=STALE_AFTER, RETRY_MIN=RETRY_MIN,
               ANSWER_BACKOFF=ANSWER_BACKOFF)
    out.update(OK=OK, HANDOFF=HANDOFF, NEWROUND=NEWROUND, GAP_PY=GAP_PY)
    out.update(EV_DONE=EV_DONE, EV_POLL=EV_POLL, EV_TIMER=EV_TIMER, EV_FRAME=EV_FRAME, EV_NEWROUND=EV_NEWROUND,
               EV_GAP=EV_GAP)
    out.update({f"K_{kind.upper()}": i for i, kind in enumerate(KINDS)})
    out.update(NKINDS=len(KINDS), E_OPEN=ENTRY_OPEN, E_DONE=ENTRY_DONE, E_PY=ENTRY_PYTHON)
    return out


def system_constants() -> dict[str, int]:
    """The constants the C takes from the system's headers, with the values Python uses."""
    return {"SOL_UDP": SOL_UDP, "UDP_GRO": UDP_GRO}


def _literal(value: int | float) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"not a C constant: {value!r}")
    # repr of a float reads back as the same double in C; an int needs no suffix at this size
    return repr(float(value)) if isinstance(value, float) else str(int(value))


def header() -> str:
    """``constants.h``: a ``#define`` per shared constant, and ``INA_SHARED_CONSTANTS(X)``,
    the list of every name (the system's included) for the library to report them."""
    lines = ["/* constants.h: generated from hostlib's Python constants by hostlib/native/constants.py",
             " * when the library is built. Do not edit: change the Python value. */",
             "#ifndef INAHOST_CONSTANTS_H", "#define INAHOST_CONSTANTS_H", ""]
    shared = shared_constants()
    lines += [f"#define {name} {_literal(value)}" for name, value in shared.items()]
    names = [*shared, *system_constants()]
    lines += ["", "#define INA_SHARED_CONSTANTS(X) \\"]
    lines += [f"    X({name}) \\" for name in names[:-1]] + [f"    X({names[-1]})", "", "#endif", ""]
    return "\n".join(lines)
