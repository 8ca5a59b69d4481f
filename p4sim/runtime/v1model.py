"""The v1model architecture with bmv2 simple_switch semantics.

Ingress: parser → verifyChecksum → ingress, then (in bmv2's order) I2E clone, digests,
resubmit, multicast, drop (egress_spec 511) or unicast. Egress: egress → E2E clone → drop →
computeChecksum → deparser → recirculate or transmit. A parser error does not drop the packet:
ingress runs with ``standard_metadata.parser_error`` set, as in bmv2.
"""
from __future__ import annotations

from collections import deque
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from ..arch.v1model import (DROP_PORT, EGRESS_CLONE, INGRESS_CLONE, MAX_PASSES,  # noqa: F401
                             NORMAL, RECIRC, REPLICATION, RESUBMIT)
from .rt import ExitBlock, PacketContext, PacketIn, ParserReject

if TYPE_CHECKING:
    from .switch import Switch



class V1ModelPipeline:
    def __init__(self, sw: "Switch") -> None:
        self.sw = sw
        ns = sw.ns
        comp = sw.program.compiled
        b = comp.blocks
        self.parser = ns[b["parser"].py_func]
        self.verify = ns[b["verify_checksum"].py_func]
        self.ingress = ns[b["ingress"].py_func]
        self.egress = ns[b["egress"].py_func]
        self.compute = ns[b["compute_checksum"].py_func]
        self.deparser = ns[b["deparser"].py_func]
        p = b["parser"].params
        self.hdr_cls = ns[p[1][2].py_class]
        self.meta_cls = ns[p[2][2].py_class]
        self.sm_cls = ns[p[3][2].py_class]
        self.field_lists = comp.field_lists
        self.ns = ns
        self.errors = comp.errors

    def _preserve(self, meta: Any, index: int | None) -> dict[str, Any] | None:
        if index is None:
            return None
        return {f: _copy(attrgetter(f)(meta)) for f in self.field_lists.get(index, [])}

    @staticmethod
    def _restore(meta: Any, kept: dict[str, Any] | None) -> None:
        for path, v in (kept or {}).items():    # a dotted path into nested structs
            *outer, last = path.split(".")
            setattr(attrgetter(".".join(outer))(meta) if outer else meta, last, _copy(v))

    def _clone_sm(self, ingress_port: int, length: int, instance_type: int) -> Any:
        sm = self._new_sm()
        sm.ingress_port = ingress_port
        sm.packet_length = length
        sm.instance_type = instance_type
        return sm

    def process(self, port: int, data: bytes) -> list[tuple[int, bytes]]:
        out: list[tuple[int, bytes]] = []
        work: deque = deque([("ingress", port, data, NORMAL, None, 0)])
        while work:
            item = work.popleft()
            if item[0] == "ingress":
                self._ingress(item[1], item[2], item[3], item[4], item[5], work, out)
            else:
                self._egress(*item[1:], work, out)
        return out

    # ------------------------------------------------------------------ ingress
    def _new_sm(self) -> Any:
        return self.sm_cls()

    def _parse(self, data: bytes, hdr: Any, meta: Any, sm: Any) -> bytes:
        pkt = PacketIn(data)
        try:
            self.parser(pkt, hdr, meta, sm)
        except ParserReject as e:
            sm.parser_error = e.error_code
            pkt.off = e.offset
        except ExitBlock:
            pass
        return data[pkt.off:]

    def _ingress(self, port: int, data: bytes, itype: int, preserved: dict | None, passes: int,
                 work: deque, out: list) -> None:
        sw = self.sw
        ns = self.ns
        hdr, meta, sm = self.hdr_cls(), self.meta_cls(), self._new_sm()
        if preserved:
            self._restore(meta, preserved)
        sm.ingress_port = port
        sm.packet_length = len(data)
        sm.instance_type = itype
        sm.ingress_global_timestamp = int(sw.now() * 1e6) & 0xFFFFFFFFFFFF
        ctx = PacketContext(len(data), sm)
        ns["_ctx"] = ctx
        payload = self._parse(data, hdr, meta, sm)
        ctx.payload = payload
        self.verify(hdr, meta)            # architecture blocks catch their own `exit`
        self.ingress(hdr, meta, sm)
        # I2E clone: the packet as received, parsed again, to the session's ports
        if ctx.clone_session is not None and ctx.clone_type == INGRESS_CLONE:
            kept = self._preserve(meta, ctx.clone_field_list)
            for eport, rid in sw.pre.clone_replicas(ctx.clone_session):
                chdr, cmeta = self.hdr_cls(), self.meta_cls()
                csm = self._clone_sm(port, len(data), INGRESS_CLONE)
                cpay = self._parse(data, chdr, cmeta, csm)
                self._restore(cmeta, kept)
                work.append(("egress", chdr, cmeta, csm, cpay, eport, rid, passes))
        for name, value in ctx.digests:
            sw.emit_digest(name, value)
        if ctx.resubmit_field_list is not None:
            if passes < MAX_PASSES:
                work.append(("ingress", port, data, RESUBMIT, self._preserve(meta, ctx.resubmit_field_list),
                             passes + 1))
            return
        if sm.mcast_grp:
            replicas = sw.pre.multicast_replicas(sm.mcast_grp)
            for i, (eport, rid) in enumerate(replicas):
                last = i == len(replicas) - 1
                h, m, s = (hdr, meta, sm) if last else (hdr.copy(), meta.copy(), sm.copy())
                s.instance_type = REPLICATION
                work.append(("egress", h, m, s, payload, eport, rid, passes))
            return
        if sm.egress_spec == DROP_PORT:
            return
        sm.instance_type = NORMAL          # bmv2 resets it for unicast (after resubmit/recirculate too)
        work.append(("egress", hdr, meta, sm, payload, sm.egress_spec, 0, passes))

    # ------------------------------------------------------------------ egress
    def _egress(self, hdr: Any, meta: Any, sm: Any, payload: bytes, eport: int, rid: int, passes: int,
                work: deque, out: list) -> None:
        sw = self.sw
        sm.egress_port = eport
        sm.egress_rid = rid
        sm.egress_spec = 0        # bmv2 resets it so that mark_to_drop in egress can be seen
        sm.egress_global_timestamp = int(sw.now() * 1e6) & 0xFFFFFFFFFFFF
        ctx = PacketContext(sm.packet_length, sm)
        ctx.payload = payload
        self.ns["_ctx"] = ctx
        self.egress(hdr, meta, sm)
        if ctx.clone_session is not None and ctx.clone_type == EGRESS_CLONE:
            kept = self._preserve(meta, ctx.clone_field_list)
            for cport, crid in sw.pre.clone_replicas(ctx.clone_session):
                cmeta = self.meta_cls()
                self._restore(cmeta, kept)
                csm = self._clone_sm(sm.ingress_port, sm.packet_length, EGRESS_CLONE)
                work.append(("egress", hdr.copy(), cmeta, csm, payload, cport, crid, passes))
        if sm.egress_spec == DROP_PORT:
            return
        self.compute(hdr, meta)
        chunks: list[bytes] = []
        self.deparser(chunks, hdr)
        chunks.append(payload)
        data = b"".join(chunks)
        if ctx.truncate_length and len(data) > ctx.truncate_length:
            data = data[:ctx.truncate_length]
        if ctx.recirculate_field_list is not None:
            if passes < MAX_PASSES:
                work.append(("ingress", sm.ingress_port, data, RECIRC,
                             self._preserve(meta, ctx.recirculate_field_list), passes + 1))
            return
        out.append((eport, data))


def _copy(v: Any) -> Any:
    return v.copy() if hasattr(v, "copy") and not isinstance(v, (int, bool)) else v
