"""AF_XDP for the native data path (xdp.c): :class:`XskPort`, AF_XDP sockets on the receive
queues of an interface (one each, on one UMEM), that a :class:`~hostlib.native.udp.SocketRings`
reads and sends through instead of its UDP socket.

xdp.c is a library of its own, built like the main one (the build cache, at first use) but
linked against libxdp and libbpf (Debian: ``libxdp-dev``, ``libbpf-dev``), so that the main
data path never needs them. Where they are missing, :func:`unavailable_reason` says so and
hostlib.xdp falls back to the socket path.
"""
from __future__ import annotations

import ctypes
import os
import threading
from pathlib import Path
from typing import Any, Sequence

from cbuild import BuildError

from .constants import header
from .library import CFLAGS, GENERATED_HEADER, SOURCE_DIR, cache

SOURCES = ("inahost.h", "xdp.c")
LIBS = ["-lxdp", "-lbpf"]
MODES = {"auto": 0, "native": 1, "generic": 2}
MODE_NAMES = {v: k for k, v in MODES.items()}
# what ina_xsk_open was doing when it failed (its *stage)
_STAGES = ("allocating", "finding the interface", "mapping the UMEM", "creating the UMEM",
           "creating the XSKMAP", "loading the XDP program", "attaching the XDP program and binding queue 0",
           "binding the other queues", "adding the sockets to the XSKMAP", "filling the fill rings")

_P, _I, _D = ctypes.c_void_p, ctypes.c_int64, ctypes.c_double
_SIGNATURES: dict[str, tuple[list[Any], Any]] = {
    "ina_xsk_open": ([ctypes.c_char_p, _I, _P, _P, _I, _I, _I, _P, _P], _P),
    "ina_xsk_close": ([_P], None),
    "ina_xsk_info": ([_P, _P], None),
    "ina_xsk_send": ([_P, _P, _P, _P, _I], ctypes.c_int),
}


class XdpUnavailable(OSError):
    """AF_XDP cannot be used here (no libxdp/libbpf to build against, no privilege, or the
    interface refuses it)."""


_lib: Any = None
_error: str | None = None
_lock = threading.Lock()


def load() -> Any:
    """The AF_XDP library (built on the first call), or None where it cannot be built."""
    global _lib, _error
    with _lock:
        if _lib is not None or _error is not None:
            return _lib
        sources = {name: (SOURCE_DIR / name).read_text() for name in SOURCES}
        sources[GENERATED_HEADER] = header()
        try:
            path: Path = cache().build(sources, CFLAGS, LIBS, what="the AF_XDP data path").path
            lib = ctypes.CDLL(str(path))
        except (BuildError, OSError) as e:
            _error = f"cannot build the AF_XDP data path against libxdp/libbpf: {e}"
            return None
        for name, (args, res) in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        _lib = lib
        return lib


def unavailable_reason() -> str | None:
    """Why AF_XDP cannot be used here, or None where it may (the interface still decides)."""
    if os.geteuid() != 0:
        return "AF_XDP needs root (CAP_NET_ADMIN and CAP_BPF)"
    load()
    return _error


class XskPort:
    """AF_XDP sockets on the receive queues of ``interface`` (``queues`` of them, 0: all the
    driver reports) for the INA datagrams to ``port``, with an XDP program of their own
    (attached by a BPF link, gone when this closes or the process ends). ``ip``/``mac``: the
    interface's; ``kernel_fd``: the UDP socket bound to (ip, port), for datagrams to a peer whose
    MAC no frame has shown yet. ``mode``: "native" (XDP in the driver, zero-copy where it
    supports it), "generic" (any interface) or "auto" (native, else generic)."""

    def __init__(self, interface: str, queues: int, ip: bytes, mac: bytes, port: int, kernel_fd: int,
                 mode: str = "auto") -> None:
        if mode not in MODES:
            raise ValueError(f"AF_XDP mode {mode!r}: expected one of {', '.join(MODES)}")
        reason = unavailable_reason()
        if reason:
            raise XdpUnavailable(reason)
        self.lib = _lib
        err, stage = ctypes.c_int64(), ctypes.c_int64()
        self.handle = self.lib.ina_xsk_open(interface.encode(), queues, ip, mac, port, kernel_fd, MODES[mode],
                                            ctypes.byref(err), ctypes.byref(stage))
        if not self.handle:
            raise XdpUnavailable(err.value, f"AF_XDP on {interface}: {_STAGES[stage.value]}: "
                                            f"{os.strerror(err.value)}")
        self.interface = interface
        self._send = self.lib.ina_xsk_send

    def attach(self, io: Any) -> None:
        """Make the socket rings ``io`` (a CIo) read and send through this socket."""
        io.bypass = self.handle
        io.bypass_fill = ctypes.cast(self.lib.ina_xsk_fill, ctypes.c_void_p).value
        io.bypass_send = ctypes.cast(self.lib.ina_xsk_send, ctypes.c_void_p).value

    def send(self, io_handle: int, frames: Sequence[bytes]) -> int:
        """Send whole frames (``io_handle``: the rings this port is attached to). 0 or -errno."""
        n = len(frames)
        ptrs = (ctypes.c_char_p * n)(*frames)
        lens = (ctypes.c_int64 * n)(*map(len, frames))
        return self._send(self.handle, io_handle, ptrs, lens, n)

    def info(self) -> dict[str, Any]:
        """The mode it got, whether zero-copy, datagrams sent through the kernel socket (no MAC
        yet for their destination), TX kicks (system calls), datagrams read from the kernel
        socket (from a queue no socket serves) and the queues served."""
        out = (ctypes.c_int64 * 6)()
        self.lib.ina_xsk_info(self.handle, out)
        return {"mode": MODE_NAMES[out[0]], "zerocopy": bool(out[1]), "kernel_sent": out[2], "kicks": out[3],
                "kernel_received": out[4], "queues": out[5]}

    def close(self) -> None:
        if self.handle:
            self.lib.ina_xsk_close(self.handle)
            self.handle = None
