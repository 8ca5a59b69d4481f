"""P4Runtime as client and server both speak it: P4Info files and the program they describe
(:mod:`.p4info`), the id-keyed P4Info index and message conversions (:mod:`.convert`).

Importing this package selects the pure-Python protobuf backend first (see
:mod:`p4control.protobuf_env` for why)."""
from __future__ import annotations

from p4control.protobuf_env import BACKEND as _PROTOBUF_BACKEND  # noqa: F401  (first)
