"""The client end of a bidirectional gRPC stream (P4Runtime's and BfRuntime's StreamChannel):
requests go in through a queue, responses come out of another, read by a daemon thread; a
stream error arrives as the ``grpc.RpcError`` itself."""
from __future__ import annotations

import queue
import threading
from typing import Any, Callable

import grpc


class StreamChannel:
    def __init__(self, rpc: Callable[[Any], Any], name: str = "grpc-client-stream") -> None:
        self._requests: queue.Queue = queue.Queue()
        self._responses: queue.Queue = queue.Queue()
        self._stream = rpc(iter(self._requests.get, None))
        threading.Thread(target=self._read, daemon=True, name=name).start()

    def _read(self) -> None:
        try:
            for msg in self._stream:
                self._responses.put(msg)
        except grpc.RpcError as e:
            self._responses.put(e)

    def send(self, msg: Any) -> None:
        self._requests.put(msg)

    def receive(self, timeout: float) -> Any:
        """The next response, or the RpcError that ended the stream; queue.Empty on timeout."""
        return self._responses.get(timeout=timeout)

    def close(self) -> None:
        self._requests.put(None)
