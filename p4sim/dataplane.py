"""The dataplane packet loop: :class:`DataplaneLoop` owns a switch's ports and runs
``switch.process`` for every received frame in one thread.

Frames a port's link delays (an egress impairment, serialization at the link rate, see
:mod:`p4sim.links`) wait in a timer heap; frames a port receives over a link it serializes
(one whose far end, a host, does not) wait in a second heap until their last bit is in, and
are processed then. Frames for the CPU port go to a callback (the P4Runtime server's PacketIn)
instead of an interface.

Ordering: a port with a fixed delay and no jitter keeps FIFO order (send times are monotonic
and heap ties are broken by a sequence number); so does serialization. With jitter each frame
draws its own delay, so frames can be reordered, as with ``netem delay D J``. Impairments are
applied on egress of interface ports only, never on the CPU port (the control channel is not
a lossy link).
"""
from __future__ import annotations

import heapq
import logging
import os
import select
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Protocol

from p4sim.ports import RX_BATCH, Port

log = logging.getLogger("p4sim.dataplane")


class SwitchLike(Protocol):
    lock: Any

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]: ...


@dataclass
class LoopCounters:
    processed: int = 0
    process_errors: int = 0
    to_cpu: int = 0
    from_cpu: int = 0
    no_such_port: int = 0   # outputs to ports that are neither an interface nor the CPU


class DataplaneLoop:
    """Owns ``ports`` and forwards frames through ``switch`` in a background thread.

    ``switch`` may be replaced at any time with :meth:`set_switch` (pipeline reload): every
    frame is processed entirely by the switch object that was current when it was received.
    """

    def __init__(self, switch: SwitchLike, ports: Iterable[Port], *,
                 cpu_port: int | None = None,
                 cpu_handler: Callable[[bytes], None] | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._switch = switch
        self.ports: dict[int, Port] = {}
        for p in ports:
            if p.number in self.ports:
                raise ValueError(f"port {p.number} given twice")
            if cpu_port is not None and p.number == cpu_port:
                raise ValueError(f"port {p.number} is the CPU port")
            self.ports[p.number] = p
        self.cpu_port = cpu_port
        self.cpu_handler = cpu_handler
        self.counters = LoopCounters()
        self._clock = clock
        self._heap: list[tuple[float, int, int, bytes]] = []  # (due, seq, port, frame)
        self._txq: dict[int, list[bytes]] = {}  # loop thread: frames to send per port, in order
        self._plain = {n for n, p in self.ports.items() if p.impairer is None and p.tx_link is None}
        self._rx_heap: list[tuple[float, int, int, bytes]] = []  # loop thread: frames still arriving
        # a frame's time on a link of a few Mb/s is about a millisecond: wait on timers with
        # select()'s microseconds then, not poll()'s milliseconds
        self._fine_timers = any(p.tx_link or p.rx_link for p in self.ports.values())
        self._seq = 0
        self._tx_lock = threading.Lock()  # heap + impairment RNGs: loop and inject_cpu share them
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)

    # -- switch ---------------------------------------------------------------------------
    @property
    def switch(self) -> SwitchLike:
        return self._switch

    def set_switch(self, switch: SwitchLike) -> None:
        """Atomically replace the switch (a reference assignment is atomic in CPython)."""
        self._switch = switch

    # -- lifecycle ------------------------------------------------------------------------
    def open(self) -> None:
        """Open every port; on failure close the ones already opened and raise PortError."""
        opened: list[Port] = []
        try:
            for p in self.ports.values():
                p.open()
                opened.append(p)
        except Exception:
            for p in opened:
                p.close()
            raise

    def start(self) -> None:
        if self._thread is not None:
            raise RuntimeError("dataplane loop already started")
        self.open()
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="p4sim-dataplane", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the thread, discard frames still waiting for their delay, close the ports."""
        self._stop.set()
        self._wake()
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                log.warning("dataplane thread did not stop within %.1fs", timeout)
            self._thread = None
        with self._tx_lock:
            self._heap.clear()
        self._rx_heap.clear()
        for p in self.ports.values():
            p.close()
        for fd in (self._wake_r, self._wake_w):
            try:
                os.close(fd)
            except OSError:
                pass
        self._wake_r = self._wake_w = -1

    def __enter__(self) -> "DataplaneLoop":
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- packets --------------------------------------------------------------------------
    def inject_cpu(self, frame: bytes) -> None:
        """PacketOut: process ``frame`` (starting with the packet_out header) as received on
        the CPU port, in the caller's thread, and transmit the outputs."""
        if self.cpu_port is None:
            raise RuntimeError("no CPU port configured")
        self.counters.from_cpu += 1
        self._process(self.cpu_port, frame)

    def _process(self, port: int, frame: bytes) -> None:
        sw = self._switch  # one switch per frame, even if a reload happens meanwhile
        try:
            with sw.lock:
                outputs = sw.process(port, frame)
        except Exception:
            self.counters.process_errors += 1
            log.exception("processing a %d-byte frame from port %d failed", len(frame), port)
            return
        self.counters.processed += 1
        for out_port, data in outputs:
            self._emit(out_port, data)

    def _process_batch(self, port: int, frames: list[bytes]) -> None:
        """The loop thread's path: ``frames`` from ``port`` through one switch (its lock held
        once for the batch); outputs for unimpaired ports are queued in ``self._txq`` and go
        out with one :meth:`Port.send_batch` per port when the batch is done."""
        sw = self._switch
        results: list[tuple[int, bytes]] = []
        errors = 0
        with sw.lock:
            process = sw.process
            for frame in frames:
                try:
                    results += process(port, frame)
                except Exception:
                    errors += 1
                    log.exception("processing a %d-byte frame from port %d failed",
                                  len(frame), port)
        lc = self.counters
        lc.processed += len(frames) - errors
        lc.process_errors += errors
        txq = self._txq
        plain = self._plain
        for out_port, data in results:
            if out_port in plain:
                q = txq.get(out_port)
                if q is None:
                    txq[out_port] = [data]
                else:
                    q.append(data)
            else:
                self._emit(out_port, data, txq)
        self._flush()

    def _flush(self) -> None:
        txq = self._txq
        if txq:
            for port_no, frames in txq.items():
                self.ports[port_no].send_batch(frames)
            txq.clear()

    def _emit(self, port_no: int, frame: bytes,
              txq: dict[int, list[bytes]] | None = None) -> None:
        if port_no == self.cpu_port and port_no not in self.ports:
            self.counters.to_cpu += 1
            if self.cpu_handler is not None:
                try:
                    self.cpu_handler(frame)
                except Exception:
                    log.exception("PacketIn handler failed")
            return
        port = self.ports.get(port_no)
        if port is None:
            self.counters.no_such_port += 1
            log.debug("output to unknown port %d dropped", port_no)
            return
        if port.impairer is None and port.tx_link is None:
            port.send(frame)
            return
        with self._tx_lock:
            now = self._clock()  # read under the lock: due times stay monotonic across threads
            due = now if port.tx_link is None else port.tx_link.arrival(now, len(frame))
            if port.impairer is not None:
                due = port.impairer.decide(due)
                if due is None:
                    port.counters.dropped += 1
                    return
            # due now only happens without delay (or when jitter draws 0): reordering is
            # allowed then; with a fixed delay every frame goes through the heap in order
            send_now = due <= now
            if not send_now:
                self._seq += 1
                was_first = not self._heap or due < self._heap[0][0]
                heapq.heappush(self._heap, (due, self._seq, port_no, frame))
        if send_now:
            if txq is not None:  # the loop thread: after the frames queued before it
                txq.setdefault(port_no, []).append(frame)
            else:
                port.send(frame)
        elif was_first and threading.current_thread() is not self._thread:
            self._wake()  # the loop may be sleeping past the new deadline

    def _send_due(self) -> float | None:
        """Send every frame that is due; return seconds until the next one (None if none)."""
        wait: float | None = None
        txq: dict[int, list[bytes]] = {}
        with self._tx_lock:
            heap = self._heap
            now = self._clock()
            while heap:
                due = heap[0][0]
                if due > now:
                    wait = due - now
                    break
                _due, _seq, port_no, frame = heapq.heappop(heap)
                q = txq.get(port_no)
                if q is None:
                    txq[port_no] = [frame]
                else:
                    q.append(frame)
        for port_no, frames in txq.items():  # per port in due order
            self.ports[port_no].send_batch(frames)
        return wait

    def _arriving(self, port: Port, frames: list[bytes]) -> None:
        """Frames ``port`` received whose link it serializes: each waits until its last bit is in."""
        now = self._clock()
        arrival = port.rx_link.arrival  # type: ignore[union-attr]
        heap = self._rx_heap
        for frame in frames:
            self._seq += 1
            heapq.heappush(heap, (arrival(now, len(frame)), self._seq, port.number, frame))

    def _process_arrived(self) -> float | None:
        """Process every frame whose last bit is in, consecutive ones of a port as one batch;
        return seconds until the next one arrives (None if none)."""
        heap = self._rx_heap
        while heap:
            now = self._clock()
            if heap[0][0] > now:
                return heap[0][0] - now
            port = heap[0][2]
            batch = []
            while heap and heap[0][2] == port and heap[0][0] <= now:
                batch.append(heapq.heappop(heap)[3])
            self._process_batch(port, batch)
        return None

    def _wake(self) -> None:
        try:
            os.write(self._wake_w, b"x")
        except OSError:
            pass  # pipe full (already woken) or closed (stopping)

    def _run(self) -> None:
        poller = select.poll()
        by_fd: dict[int, Port] = {}
        for p in self.ports.values():
            poller.register(p.fileno(), select.POLLIN)
            by_fd[p.fileno()] = p
        poller.register(self._wake_r, select.POLLIN)
        try:
            fds = list(by_fd) + [self._wake_r]
            while not self._stop.is_set():
                # arrivals first: what they send may be due at once
                arrived = self._process_arrived() if self._rx_heap else None
                wait = self._send_due()
                if arrived is not None and (wait is None or arrived < wait):
                    wait = arrived
                try:
                    if self._fine_timers:
                        events = [(fd, select.POLLIN) for fd in select.select(fds, [], [], wait)[0]]
                    else:
                        events = poller.poll(None if wait is None else max(1, int(wait * 1000 + 0.999)))
                except InterruptedError:
                    continue
                for fd, ev in events:
                    if fd == self._wake_r:
                        try:
                            while os.read(self._wake_r, 4096):
                                pass
                        except OSError:
                            pass
                        continue
                    if self._stop.is_set():
                        return
                    port = by_fd[fd]
                    frames = port.recv_batch(RX_BATCH)
                    if frames:
                        if port.rx_link is None:
                            self._process_batch(port.number, frames)
                        else:
                            self._arriving(port, frames)
                    # keep delayed frames on time even under a long receive burst
                    if self._heap:
                        self._send_due()
        except Exception:
            log.exception("dataplane loop crashed")
            raise

    # -- reporting ------------------------------------------------------------------------
    def port_counters(self) -> dict[int, dict[str, int]]:
        return {n: p.counters.as_dict() for n, p in sorted(self.ports.items())}

    def stats_line(self) -> str:
        parts = []
        for n, p in sorted(self.ports.items()):
            c = p.counters
            parts.append(f"{n}@{p.ifname} rx={c.rx_packets} tx={c.tx_packets} "
                         f"drop={c.dropped} err={c.rx_errors + c.tx_errors}")
        lc = self.counters
        parts.append(f"cpu in={lc.to_cpu} out={lc.from_cpu}")
        if lc.process_errors:
            parts.append(f"process_errors={lc.process_errors}")
        return "; ".join(parts)