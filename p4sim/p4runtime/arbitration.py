"""Client arbitration for the P4Runtime StreamChannel (primary/backup election).

Each open stream is a :class:`StreamSession` with an outgoing message queue. Clients are grouped
by role name; within a role the primary is the live client with the highest election id (a
client without an election id is a backup forever). Unlike the "highest id ever seen" rule of
P4Runtime >= 1.4, a primary that disconnects hands over to the next-highest live client, which
is what bmv2/PI do and what controllers with fail-over expect; every client of the role is told
about each primary change. Arbitration status codes follow the spec: OK for the primary,
ALREADY_EXISTS for backups when there is a primary, NOT_FOUND when there is none.
"""
from __future__ import annotations

import logging
import queue
import threading
from typing import Iterator

from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (selects the protobuf backend first)

import grpc  # noqa: E402
from google.rpc import code_pb2, status_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402

log = logging.getLogger("p4sim.p4runtime")

ElectionId = tuple[int, int]          # (high, low): tuple order is the spec's 128-bit order

_CLOSE = object()                     # queue sentinel: end the stream normally


class ArbitrationError(Exception):
    """An arbitration message that must terminate the stream with ``code``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class StreamSession:
    """One StreamChannel: its arbitration state and the responses waiting to be sent."""

    MAX_QUEUE = 10000                 # beyond this, packet-ins/digests are dropped

    def __init__(self, peer: str = "") -> None:
        self.peer = peer
        self.device_id: int | None = None
        self.role = ""
        self.role_set = False         # echo the role back only if the client sent one
        self.election_id: ElectionId | None = None
        self.arbitrated = False
        self._queue: queue.Queue = queue.Queue(self.MAX_QUEUE)
        self.dropped = 0

    def send(self, msg: p4runtime_pb2.StreamMessageResponse) -> bool:
        try:
            self._queue.put_nowait(msg)
            return True
        except queue.Full:
            self.dropped += 1
            if self.dropped == 1 or self.dropped % 1000 == 0:
                log.warning("stream %s: send queue full, %d message(s) dropped", self.peer,
                            self.dropped)
            return False

    def close(self, error: ArbitrationError | None = None) -> None:
        """Ask the stream's writer to finish (with ``error`` as the RPC status if given)."""
        while True:
            try:
                self._queue.put_nowait(error or _CLOSE)
                return
            except queue.Full:  # make room: closing matters more than stale messages
                try:
                    self._queue.get_nowait()
                except queue.Empty:
                    pass

    def outgoing(self) -> Iterator[p4runtime_pb2.StreamMessageResponse | ArbitrationError]:
        """Messages to write until the session is closed; an ArbitrationError comes last."""
        while True:
            item = self._queue.get()
            if item is _CLOSE:
                return
            yield item
            if isinstance(item, ArbitrationError):
                return


def _status(code: int, message: str) -> status_pb2.Status:
    return status_pb2.Status(code=code, message=message)


class Arbiter:
    """Tracks the live sessions of one device and elects a primary per role."""

    def __init__(self, device_id: int) -> None:
        self.device_id = device_id
        self._lock = threading.Lock()
        self._sessions: list[StreamSession] = []
        self._primary: dict[str, StreamSession | None] = {}
        self._highest: dict[str, ElectionId] = {}   # highest id ever seen, for notifications

    # ---------------------------------------------------------------- stream events

    def update(self, session: StreamSession, msg: p4runtime_pb2.MasterArbitrationUpdate) -> None:
        """Handle a MasterArbitrationUpdate; raise ArbitrationError to end the stream."""
        eid = ((msg.election_id.high, msg.election_id.low)
               if msg.HasField("election_id") else None)
        role = msg.role.name if msg.HasField("role") else ""
        with self._lock:
            if not session.arbitrated:
                if msg.device_id != self.device_id:
                    raise ArbitrationError(grpc.StatusCode.NOT_FOUND,
                                           f"unknown device id {msg.device_id}")
                self._check_unique(role, eid, session)
                session.device_id = msg.device_id
                session.role = role
                session.role_set = msg.HasField("role")
                session.arbitrated = True
                self._sessions.append(session)
            else:
                if msg.device_id != session.device_id:
                    raise ArbitrationError(grpc.StatusCode.FAILED_PRECONDITION,
                                           "the device id of a stream cannot change")
                if role != session.role:
                    raise ArbitrationError(grpc.StatusCode.FAILED_PRECONDITION,
                                           "the role of a stream cannot change; open a new one")
                self._check_unique(role, eid, session)
            session.election_id = eid
            if eid is not None and eid > self._highest.get(role, (-1, -1)):
                self._highest[role] = eid
            changed = self._elect(role)
            for s in (self._members(role) if changed else [session]):
                s.send(self._notification(s))

    def remove(self, session: StreamSession) -> None:
        """The stream ended: forget it and hand the primary role over if it held it."""
        with self._lock:
            if session not in self._sessions:
                return
            self._sessions.remove(session)
            if self._elect(session.role):
                for s in self._members(session.role):
                    s.send(self._notification(s))

    def close_all(self) -> None:
        with self._lock:
            sessions, self._sessions = self._sessions, []
            self._primary.clear()
        for s in sessions:
            s.close()

    # ---------------------------------------------------------------- queries

    def is_primary(self, role: str, election_id: ElectionId | None) -> bool:
        with self._lock:
            primary = self._primary.get(role)
            return (primary is not None and election_id is not None
                    and primary.election_id == election_id)

    def session_is_primary(self, session: StreamSession) -> bool:
        with self._lock:
            return session.arbitrated and self._primary.get(session.role) is session

    def primaries(self) -> list[StreamSession]:
        with self._lock:
            return [s for s in self._primary.values() if s is not None]

    # ---------------------------------------------------------------- helpers

    def _members(self, role: str) -> list[StreamSession]:
        return [s for s in self._sessions if s.role == role]

    def _check_unique(self, role: str, eid: ElectionId | None, me: StreamSession) -> None:
        if eid is None:
            return
        for s in self._members(role):
            if s is not me and s.election_id == eid:
                raise ArbitrationError(grpc.StatusCode.INVALID_ARGUMENT,
                                       f"election id {eid} is used by another controller")

    def _elect(self, role: str) -> bool:
        """Recompute the primary of ``role``; return True if it changed."""
        candidates = [s for s in self._members(role) if s.election_id is not None]
        new = max(candidates, key=lambda s: s.election_id, default=None)
        old = self._primary.get(role)
        self._primary[role] = new
        if new is not old:
            log.info("role %r: primary is now %s", role or "<default>",
                     f"{new.peer} (election id {new.election_id})" if new else "none")
        return new is not old

    def _notification(self, s: StreamSession) -> p4runtime_pb2.StreamMessageResponse:
        resp = p4runtime_pb2.StreamMessageResponse()
        upd = resp.arbitration
        upd.device_id = self.device_id
        if s.role_set:
            upd.role.name = s.role
        primary = self._primary.get(s.role)
        highest = primary.election_id if primary is not None else self._highest.get(s.role)
        if highest is not None:
            upd.election_id.high, upd.election_id.low = highest
        if primary is s:
            upd.status.CopyFrom(_status(code_pb2.OK, "is primary"))
        elif primary is not None:
            upd.status.CopyFrom(_status(code_pb2.ALREADY_EXISTS, "is backup"))
        else:
            upd.status.CopyFrom(_status(code_pb2.NOT_FOUND, "no primary"))
        return resp
