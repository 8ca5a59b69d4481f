"""BfRuntime (Tofino's control-plane API) as client and server both speak it: the bf-rt.json
schema (:mod:`.schema`), the field codec (:mod:`.codec`) and the protobuf bindings
(:mod:`.proto`, from ``bfruntime.proto`` here or the Tofino SDE's ``bfrt_grpc``)."""
from __future__ import annotations

# first: it fixes the protobuf backend before anything imports protobuf
from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (selects the protobuf backend first)
