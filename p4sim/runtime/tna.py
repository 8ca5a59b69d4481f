"""The Tofino Native Architecture (single pipe), as far as an INA program needs it.

What the program sees, as on Tofino: the ingress parser's input starts with the 8-byte
``ingress_intrinsic_metadata_t`` followed by 8 bytes of port metadata (or, for a resubmitted
packet, the resubmit header); the egress parser's input starts with
``egress_intrinsic_metadata_t`` followed by whatever the ingress deparser emitted (bridged
metadata, headers, payload). Unicast goes to ``ucast_egress_port``, multicast to
``mcast_grp_a`` through the PRE (``rid`` reaches egress as ``egress_rid``), ``bypass_egress``
skips egress, ``drop_ctl`` bit 0 drops.

A packet egress sends to a recirculation port (``RECIRCULATION_PORTS``: 68, 196, 324, 452)
enters ingress again with that ingress port (port metadata zero), as on Tofino 1; resubmits
and recirculations of one packet are at most ``MAX_PASSES`` together (more are dropped).

Deviations from hardware (documented in docs/p4sim.md): no timing or queues (a recirculated packet
is processed at once, before the next packet); a packet whose ingress sets neither a unicast
port nor a multicast group is dropped (p4sim cannot tell "port 0" from "unset", so it marks unset ports with 511 before
ingress); a parser error continues into the control with ``parser_err`` set (Tofino's default
with the error bit); mirrored copies carry the ``Mirror.emit`` field list in front of the
ingress-deparsed packet; register accesses are limited to one per register per pass.
"""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

from ..arch.tna import (MAX_PASSES, PORT_METADATA_BYTES, RECIRCULATION_PORTS, UNSET_PORT,  # noqa: F401
                        parser_error_bit)
from . import hashes
from .rt import ExitBlock, PacketContext, PacketIn, ParserReject

if TYPE_CHECKING:
    from .switch import Switch



class TnaPipeline:
    def __init__(self, sw: "Switch") -> None:
        self.sw = sw
        self.ns = sw.ns
        comp = sw.program.compiled
        self.blocks = {role: (self.ns[b.py_func], b.params) for role, b in comp.blocks.items()}
        self.classes = {name: self.ns[cls] for name, cls in comp.struct_classes.items()}
        self.errors = comp.errors

    def _new(self, type_name: str) -> Any:
        return self.classes[type_name]()

    def _run(self, role: str, objs: dict[str, Any], packet: Any) -> Any:
        fn, params = self.blocks[role]
        args = []
        for _direction, _name, t in params:
            tname = getattr(t, "name", "")
            if tname in ("packet_in", "packet_out"):
                args.append(packet)
            else:
                if tname not in objs:
                    objs[tname] = self._new(tname)
                args.append(objs[tname])
        return fn(*args)

    def _parse(self, role: str, objs: dict[str, Any], data: bytes, from_prsr: str) -> bytes:
        pkt = PacketIn(data)
        try:
            self._run(role, objs, pkt)
        except ParserReject as e:
            pkt.off = e.offset
            md = objs.setdefault(from_prsr, self._new(from_prsr))
            md.parser_err |= parser_error_bit(self.errors, e.error_code)
        except ExitBlock:
            pass
        return data[pkt.off:]

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        work: deque = deque([("ingress", port, data, None, 0)])
        while work:
            item = work.popleft()
            if item[0] == "ingress":
                self._ingress(*item[1:], work, out)
            else:
                self._egress(*item[1:], work, out)
        return out

    # ------------------------------------------------------------------ ingress
    def _ingress(self, port: int, data: bytes, resubmit_data: bytes | None, passes: int,
                 work: deque, out: list) -> None:
        sw = self.sw
        ig_md = self._new("ingress_intrinsic_metadata_t")
        ig_md.resubmit_flag = 1 if resubmit_data is not None else 0
        ig_md.ingress_port = port
        ig_md.ingress_mac_tstamp = int(sw.now() * 1e9) & 0xFFFFFFFFFFFF
        ig_md._v = True
        port_md = (resubmit_data or b"").ljust(PORT_METADATA_BYTES, b"\0")[:PORT_METADATA_BYTES]
        wire = ig_md.pack() + port_md + data
        objs: dict[str, Any] = {}
        ctx = PacketContext(len(data))
        self.ns["_ctx"] = ctx
        payload = self._parse("ingress_parser", objs, wire, "ingress_intrinsic_metadata_from_parser_t")
        ctx.payload = payload
        tm = objs.setdefault("ingress_intrinsic_metadata_for_tm_t", self._new("ingress_intrinsic_metadata_for_tm_t"))
        tm.ucast_egress_port = UNSET_PORT
        ctx.register_pass = set()
        self._run("ingress", objs, None)            # architecture blocks catch their own `exit`
        chunks: list[bytes] = []
        self._run("ingress_deparser", objs, chunks)
        deparsed = b"".join(chunks) + payload
        dprsr = objs["ingress_intrinsic_metadata_for_deparser_t"]
        for name, value in ctx.digests:
            sw.emit_digest(name, value)
        if ctx.clone_session is not None:
            mirror_hdr = hashes.pack_fields(ctx.clone_field_list or ())
            for eport, rid in sw.pre.clone_replicas(ctx.clone_session):
                work.append(("egress", eport, rid, mirror_hdr + deparsed, passes))
        if ctx.resubmit_field_list is not None:
            if passes < MAX_PASSES:
                work.append(("ingress", port, data, hashes.pack_fields(ctx.resubmit_field_list), passes + 1))
            return
        if dprsr.drop_ctl & 1:
            return
        targets: list[tuple[int, int]] = []
        if tm.mcast_grp_a:
            targets.extend(sw.pre.multicast_replicas(tm.mcast_grp_a))
        if tm.ucast_egress_port != UNSET_PORT:
            targets.append((tm.ucast_egress_port, tm.rid))
        for eport, rid in targets:
            if tm.bypass_egress:
                leave(eport, deparsed, passes, work, out)
            else:
                work.append(("egress", eport, rid, deparsed, passes))

    # ------------------------------------------------------------------ egress
    def _egress(self, eport: int, rid: int, data: bytes, passes: int, work: deque, out: list) -> None:
        eg_md = self._new("egress_intrinsic_metadata_t")
        eg_md.egress_port = eport
        eg_md.egress_rid = rid
        eg_md.pkt_length = len(data) & 0xFFFF
        eg_md._v = True
        objs: dict[str, Any] = {}
        ctx = PacketContext(len(data))
        self.ns["_ctx"] = ctx
        payload = self._parse("egress_parser", objs, eg_md.pack() + data, "egress_intrinsic_metadata_from_parser_t")
        ctx.payload = payload
        # the egress parser extracted eg_intr_md from the prefix; make sure controls see ours
        objs["egress_intrinsic_metadata_t"] = eg_md
        self._run("egress", objs, None)
        chunks: list[bytes] = []
        self._run("egress_deparser", objs, chunks)
        dprsr = objs["egress_intrinsic_metadata_for_deparser_t"]
        if dprsr.drop_ctl & 1:
            return
        leave(eport, b"".join(chunks) + payload, passes, work, out)


def leave(eport: int, frame: bytes, passes: int, work: deque, out: list) -> None:
    """A packet done with egress (or bypassing it): out of ``eport``, or into ingress again
    if that is a recirculation port (the pipelines' work items: ("ingress", port, data,
    resubmit data or None, passes))."""
    if eport not in RECIRCULATION_PORTS:
        out.append((eport, frame))
    elif passes < MAX_PASSES:
        work.append(("ingress", eport, frame, None, passes + 1))
