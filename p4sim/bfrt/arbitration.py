"""Client bookkeeping for the BfRuntime server: subscriptions and program bindings.

A BfRuntime client first subscribes on the StreamChannel under a client id (one stream per id;
a second stream for an id in use is answered ALREADY_EXISTS), then binds to the device's
program with ``SetForwardingPipelineConfig(BIND)`` before it may Read or Write. A client's
binding ends with its stream; loading a new program keeps only the loading client bound.
"""
from __future__ import annotations

import queue
import threading
from typing import Any

import grpc
from google.rpc import code_pb2

from p4control.bfrt.proto import pb


class RpcError(Exception):
    """An RPC-level failure (before any update or entity is looked at): the call ends with
    ``code``."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.code = code


class Clients:
    """The subscribed clients of one device (client id -> its stream's outgoing queue) and the
    program each is bound to. ``lock`` is the server's: subscribing, leaving and rebinding
    after a program load happen under it, together with the program swap."""

    def __init__(self, device_id: int, lock: threading.RLock) -> None:
        self.device_id = device_id
        self._lock = lock
        self.streams: dict[int, queue.Queue] = {}   # subscribed client ids
        self.bound: dict[int, str] = {}             # client id -> p4 name

    def subscribe(self, msg: Any, out: queue.Queue, client: list[int]) -> Any:
        """Answer a Subscribe message that arrived on the stream whose queue is ``out``;
        ``client`` collects the ids that stream holds (released when it ends)."""
        sub = pb.Subscribe()
        sub.CopyFrom(msg.subscribe)
        code, text = code_pb2.OK, ""
        with self._lock:
            if msg.subscribe.device_id != self.device_id:
                code, text = code_pb2.NOT_FOUND, f"no device {msg.subscribe.device_id}"
            elif msg.client_id in self.streams and self.streams[msg.client_id] is not out:
                code, text = code_pb2.ALREADY_EXISTS, f"client id {msg.client_id} is in use"
            else:
                self.streams[msg.client_id] = out
                if msg.client_id not in client:
                    client.append(msg.client_id)
        sub.status.code = code
        sub.status.message = text
        return pb.StreamMessageResponse(subscribe=sub)

    def leave(self, out: queue.Queue, client: list[int]) -> None:
        """The stream whose queue is ``out`` ended: its client ids and bindings go."""
        with self._lock:
            for cid in client:
                if self.streams.get(cid) is out:
                    del self.streams[cid]
                    self.bound.pop(cid, None)

    def bind(self, client_id: int, p4_name: str, running: str) -> None:
        """SetForwardingPipelineConfig(BIND) of ``client_id`` to ``p4_name``; the device runs
        ``running``."""
        if client_id not in self.streams:
            raise RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"client {client_id} has not subscribed on the stream channel")
        if p4_name != running:
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"no program '{p4_name}' on device "
                           f"{self.device_id} (it runs '{running}')")
        self.bound[client_id] = p4_name

    def check_bound(self, client_id: int, p4_name: str, running: str) -> None:
        """A Read or Write of ``client_id`` naming ``p4_name`` (empty: the bound one) may go on."""
        if self.bound.get(client_id) is None:
            raise RpcError(grpc.StatusCode.FAILED_PRECONDITION,
                           f"client {client_id} is not bound to a program "
                           "(SetForwardingPipelineConfig BIND first)")
        if p4_name and p4_name != running:
            raise RpcError(grpc.StatusCode.NOT_FOUND, f"no program '{p4_name}' on device "
                           f"{self.device_id} (it runs '{running}')")

    def loaded(self, client_id: int, p4_name: str) -> None:
        """A new program ``p4_name`` was loaded by ``client_id``: it is bound to it, every other
        client must bind again. Called under the lock."""
        self.bound = {client_id: p4_name} if client_id in self.streams else {}

    def broadcast(self, msg: Any) -> None:
        for q in list(self.streams.values()):
            q.put(msg)

    def close_all(self) -> None:
        """End every stream (the server stops)."""
        for q in list(self.streams.values()):
            q.put(None)
