"""The Tofino Native Architecture's constants, shared by the C generator and the pipelines.

Tofino's local resource rules (SALU limits, hash uses) are checks over the program and stay
with the compiler in :mod:`p4sim.backend.tofino_rules`.
"""
from __future__ import annotations

# The main package's block parameters, in order: Pipeline(IngressParser, Ingress, ...).
ROLES = ["ingress_parser", "ingress", "ingress_deparser", "egress_parser", "egress", "egress_deparser"]

UNSET_PORT = 511
MAX_PASSES = 16             # at most this many resubmits and recirculations of one packet, together
# Tofino 1's recirculation port of each pipe (pipe p: 128 p + 68). A packet sent to one passes
# egress, then ingress again with it as the ingress port.
RECIRCULATION_PORTS = frozenset({68, 196, 324, 452})
PORT_METADATA_BYTES = 8     # after ingress_intrinsic_metadata_t: port metadata or resubmit data
_PARSER_ERROR_BITS = {"NoMatch": 0x1, "PacketTooShort": 0x2, "StackOutOfBounds": 0x4,
                      "HeaderTooShort": 0x2, "ParserTimeout": 0x8}


def parser_error_bit(errors: list[str], code: int) -> int:
    """The ``parser_err`` bit a parser reject with error ``code`` sets (0: no error)."""
    if not code:
        return 0
    name = errors[code] if code < len(errors) else ""
    return _PARSER_ERROR_BITS.get(name, 0x1)
