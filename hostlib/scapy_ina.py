"""Scapy layers for the INA protocol, bound to UDP port 47100 so captures dissect themselves.

    >>> from scapy.all import rdpcap
    >>> import hostlib.scapy_ina  # registers the layers
    >>> rdpcap("s1-eth1.pcap")[0].show()

Field names and widths mirror :mod:`hostlib.protocol` (the one home of the wire format); the
lane count K is the only parameter: ``InaLanes`` takes all remaining 4-byte words.
"""
from __future__ import annotations

from scapy.fields import BitField, FieldListField, FlagsField, SignedIntField, XIntField
from scapy.layers.inet import UDP
from scapy.packet import Packet, bind_layers

from .protocol import INA_UDP_PORT, INA_VERSION, Flags

_FLAG_NAMES = [f.name for f in sorted(Flags, key=lambda f: f.value)]


class Ina(Packet):
    name = "INA"
    fields_desc = [
        BitField("version", INA_VERSION, 4),
        BitField("rsvd", 0, 4),
        FlagsField("flags", 0, 8, _FLAG_NAMES),
        BitField("job_id", 0, 16),
        BitField("node_id", 0, 16),
        BitField("submodel_id", 0, 16),
        BitField("fragment_id", 0, 32),
        BitField("worker_id", 0, 8),
        BitField("fan_in", 0, 8),
        BitField("count", 1, 8),
        BitField("priority", 0, 8),
        XIntField("bitmap", 0),
        BitField("round", 0, 32),
    ]

    def mysummary(self) -> str:
        return self.sprintf("INA job=%job_id% node=%node_id% sub=%submodel_id% frag=%fragment_id% "
                            "round=%round% w=%worker_id% %count%/%fan_in% flags=%flags%")


class InaLanes(Packet):
    name = "INA lanes"
    fields_desc = [FieldListField("values", [], SignedIntField("v", 0), length_from=lambda p: len(p.original or b""))]

    def do_dissect(self, s: bytes) -> bytes:
        n = len(s) // 4
        self.values = [int.from_bytes(s[4 * i:4 * i + 4], "big", signed=True) for i in range(n)]
        return s[4 * n:]

    def self_build(self, field_pos_list=None) -> bytes:
        return b"".join(int(v).to_bytes(4, "big", signed=True) for v in self.values)


bind_layers(UDP, Ina, dport=INA_UDP_PORT)
bind_layers(Ina, InaLanes)
