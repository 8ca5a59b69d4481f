"""ctypes mirrors of the C data path's structs (hostlib/native/inahost.h), and the check that
they match the library: every field's offset, by name, and every struct's size, as the
library reports them (layout.c). A mismatch makes the library unusable, loudly."""
from __future__ import annotations

import ctypes
from typing import Any, Sequence

from ..protocol import ETH_IP_UDP_LEN, MAX_WORKERS
from .constants import KINDS

_i64, _dbl, _ptr = ctypes.c_int64, ctypes.c_double, ctypes.c_void_p


class CRto(ctypes.Structure):
    c_name = "Rto"
    _fields_ = [(n, _dbl) for n in ("initial", "minimum", "maximum", "max_backoff", "srtt", "rttvar")] + [
        ("has_srtt", _i64)]


class CWorker(ctypes.Structure):
    c_name = "Worker"
    _fields_ = ([(n, _i64) for n in ("n", "lanes", "frame_len", "window", "reach", "recovery", "nsubs", "job",
                                     "round", "node_tries")]
                + [(n, _ptr) for n in ("wire", "sub", "first", "count", "node", "pos", "done", "results", "retx",
                                       "first_sent", "timeout", "deadline", "pend", "later", "resent_at",
                                       "path_srtt", "path_rttvar", "path_clean")]
                + [(n, _i64) for n in ("base", "next", "n_done", "n_pending", "n_recovering")]
                + [("newest_answered", _dbl), ("recovery_answered", _dbl), ("rto", CRto), ("resend_rtt", CRto), ("retry_rtt", CRto)]
                + [(n, _i64) for n in ("sent", "resent", "fast_resent", "results_n", "duplicate_results", "out_n",
                                       "out_cap", "scratch_used")]
                + [("out", ctypes.POINTER(ctypes.c_void_p)), ("scratch", _ptr)])


class CJob(ctypes.Structure):
    c_name = "Job"
    _fields_ = ([(n, _i64) for n in ("id", "nworkers", "python_only", "has_newest", "newest")]
                + [("mask", ctypes.c_uint32), ("wid", ctypes.c_int32 * MAX_WORKERS),
                   ("prefix", (ctypes.c_uint8 * ETH_IP_UDP_LEN) * MAX_WORKERS)]
                + [("relay_node", _i64), ("relay_prefix", ctypes.c_uint8 * ETH_IP_UDP_LEN)])


class CPs(ctypes.Structure):
    c_name = "Ps"
    # open: the sentinel of C's list of open entries (an Entry without lanes), opaque here
    _fields_ = ([(n, _i64) for n in ("lanes", "frame_len", "njobs", "ntables", "tables_cap", "seq")]
                + [("jobs", _ptr), ("tables", _ptr), ("open", ctypes.c_uint64 * 9), ("rto", CRto),
                   ("counts", _i64 * len(KINDS))]
                + [(n, _i64) for n in ("completed", "results_sent", "results_relayed", "out_n", "out_cap")]
                + [("out", ctypes.POINTER(ctypes.c_void_p)), ("scratch", _ptr)]
                + [("spare_chunks", _ptr), ("nspare_chunks", _i64), ("spare_chunks_cap", _i64)]
                + [("spare_slots", _ptr), ("spare_slots_cap", _i64), ("query_srtt", _dbl), ("results_resent", _i64)])


class CIo(ctypes.Structure):
    c_name = "Io"
    _fields_ = ([(n, _i64) for n in ("fd", "lanes", "need", "frame_len", "cap", "bufsize", "pos", "cnt", "dst_port",
                                     "gso", "tx_packets", "tx_bytes", "rx_packets", "rx_bytes", "send_dropped")]
                + [(n, _ptr) for n in ("rxbuf", "rxmsgs", "rxiov", "rxnames")]
                + [("txcap", _i64)] + [(n, _ptr) for n in ("txmsgs", "txiov", "txnames")]
                + [("ho_data", _ptr), ("ho_len", _i64), ("ho_source", ctypes.c_uint8 * 6)]
                + [(n, _i64) for n in ("seg_off", "seg_size", "last_pos", "last_off")]
                + [(n, _ptr) for n in ("rxctl", "txctl", "txgid", "txsorted", "bypass", "bypass_fill",
                                       "bypass_send")]
                + [("wake_fd", _i64), ("woken", _i64)])


MIRRORS: tuple[type[ctypes.Structure], ...] = (CRto, CWorker, CJob, CPs, CIo)


def library_layout(lib: Any) -> dict[str, dict[str, int]]:
    """Struct name -> field name -> offset, as the library was compiled (``ina_field``)."""
    out: dict[str, dict[str, int]] = {}
    i = 0
    type_, field, offset = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int64()
    while lib.ina_field(i, ctypes.byref(type_), ctypes.byref(field), ctypes.byref(offset)):
        out.setdefault(type_.value.decode(), {})[field.value.decode()] = offset.value
        i += 1
    return out


def layout_mismatches(lib: Any, mirrors: Sequence[type[ctypes.Structure]] = MIRRORS) -> list[str]:
    """How the ctypes mirrors differ from the library's structs (empty: they match): a field
    missing on either side, at another offset, or a struct of another size."""
    c_layout = library_layout(lib)
    problems = []
    for mirror in mirrors:
        name = mirror.c_name                                    # type: ignore[attr-defined]
        c_fields = c_layout.get(name, {})
        py_fields = {f[0]: getattr(mirror, f[0]).offset for f in mirror._fields_}
        for field in sorted(c_fields.keys() | py_fields.keys()):
            c_off, py_off = c_fields.get(field), py_fields.get(field)
            if c_off != py_off:
                where = lambda off: "missing" if off is None else f"at {off}"      # noqa: E731
                problems.append(f"{name}.{field}: {where(c_off)} in C, {where(py_off)} in ctypes")
        c_size = lib.ina_sizeof(name.encode())
        if c_size != ctypes.sizeof(mirror):
            problems.append(f"sizeof({name}): {c_size} in C, {ctypes.sizeof(mirror)} in ctypes")
    return problems
