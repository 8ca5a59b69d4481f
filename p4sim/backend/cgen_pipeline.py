"""The C generator's per-architecture pipeline functions: block calls, the TNA intrinsic
metadata prefixes and the v1model/TNA pass drivers. Mixed into
:class:`p4sim.backend.cgen._Gen`.
"""
from __future__ import annotations

import ast as pyast

from ..arch.tna import parser_error_bit, PORT_METADATA_BYTES, RECIRCULATION_PORTS, UNSET_PORT
from ..arch.v1model import DROP_PORT as V1_DROP_PORT
from ..frontend.types import StructT
from .cgen_common import _cls_of, CUnsupported, _Func, PKTIN, PKTOUT, _ptr


class PipelinesC:
    """Pipeline functions per architecture (a mixin of cgen._Gen; state set up there)."""

    # ------------------------------------------------------------------ pipeline
    def struct_uses(self, f: _Func, methods: tuple[str, ...]) -> list[str]:
        """The classes of the values whose ``methods`` (e.g. pack: a deparser emit) ``f``
        calls, one entry per call."""
        kinds = dict(zip(f.params, f.param_kinds or []))  # type: ignore[attr-defined]
        kinds.update(f.locals)                           # inferred in type_functions
        out = []
        for n in pyast.walk(f.node):
            if isinstance(n, pyast.Attribute) and n.attr in methods:
                cls = _cls_of(self.kind_of(n.value, kinds, for_local=False))
                if cls is None:
                    raise self.fail(f"{n.attr} of an unknown value", n)
                out.append(cls)
        return out

    def deparser_bytes(self, role: str) -> int:
        """Most bytes the deparser block emits."""
        f = self.funcs[self.comp.blocks[role].py_func]
        return sum(self.classes[cls].width // 8 for cls in self.struct_uses(f, ("pack",)))

    def block_call(self, role: str, args: dict[str, str]) -> str:
        """C calling an architecture block (``args``: the C argument for each parameter
        kind); an error returns P4_ERROR, an `exit` or a parser reject ends just the block."""
        blk = self.comp.blocks[role]
        out = [args[kind] for kind in self.funcs[blk.py_func].param_kinds or []]
        return (f"{blk.py_func}(sw, {', '.join(out)}); "
                f"if (sw->exit_flag == P4_RAISED) return P4_ERROR; sw->exit_flag = 0;")

    # the tna intrinsic metadata the pipeline itself reads or writes: type -> fields used
    _TNA_INTRINSICS = {
        "ingress_intrinsic_metadata_t": ("resubmit_flag", "ingress_port", "ingress_mac_tstamp"),
        "ingress_intrinsic_metadata_from_parser_t": ("parser_err",),
        "ingress_intrinsic_metadata_for_deparser_t": ("drop_ctl",),
        "ingress_intrinsic_metadata_for_tm_t": ("ucast_egress_port", "mcast_grp_a", "rid",
                                                "bypass_egress"),
        "egress_intrinsic_metadata_t": ("egress_port", "egress_rid", "pkt_length"),
        "egress_intrinsic_metadata_from_parser_t": ("parser_err",),
        "egress_intrinsic_metadata_for_deparser_t": ("drop_ctl",),
    }

    def tna_class(self, type_name: str) -> str:
        cls = self.comp.struct_classes.get(type_name)
        t = self.classes.get(cls or "")
        if t is None:
            raise CUnsupported(f"a tna program without {type_name}", self.path)
        have = {n for n, _ in t.fields}
        for f in self._TNA_INTRINSICS.get(type_name, ()):
            if f not in have:
                raise CUnsupported(f"{type_name} without {f}", self.path)
        self.used_classes.add(cls)
        return cls  # type: ignore[return-value]

    def tna_side(self, roles: tuple[str, ...], intrinsics: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
        """One pipeline half of tna.py: one object per P4 type name, shared by every block
        parameter of that type (tna.py's ``objs``). Returns the state struct's member lines
        and the C argument for each parameter kind (``st`` the state pointer)."""
        members: dict[str, str] = {}
        for name in intrinsics:
            members[self.tna_class(name)] = name
        for role in roles:
            for _, _, t in self.comp.blocks[role].params:
                if isinstance(t, StructT):
                    members.setdefault(t.py_class, t.name)
        args = {_ptr(cls): f"&st->m_{cls}" for cls in members}
        args[PKTIN] = "&pkt"
        args[PKTOUT] = "&pout"
        return [f"    {cls} m_{cls};" for cls in members], args

    def tna_parse(self, role: str, args: dict[str, str], from_prsr: str) -> str:
        """C starting a tna pass (``wire``/``wlen``: the packet with its prefix, ``len``: the
        packet's own length) and running its parser (tna.py's _parse): a reject sets the
        error's bit in parser_err; the payload is what the parser left."""
        return f"""    sw->packet_length = len;
    sw->rejected = 0;
    sw->exit_flag = 0;
    memset(sw->claimed, 0, sizeof sw->claimed);
    p4_pktin_t pkt = {{ wire, wlen, 0 }};
    {self.block_call(role, args)}
    if (sw->rejected) st->m_{from_prsr}.parser_err |= p4_parser_err_bit(sw->reject_code);
    sw->payload = wire + pkt.off;
    sw->payload_len = wlen - pkt.off;"""

    def tna_pipeline_functions(self) -> str:
        ig_md, ig_prsr, ig_dprsr, ig_tm, eg_md, eg_prsr, eg_dprsr = (
            self.tna_class(n) for n in self._TNA_INTRINSICS)
        ig_members, ig = self.tna_side(("ingress_parser", "ingress", "ingress_deparser"),
                                       tuple(list(self._TNA_INTRINSICS)[:4]))
        eg_members, eg = self.tna_side(("egress_parser", "egress", "egress_deparser"),
                                       tuple(list(self._TNA_INTRINSICS)[4:]))
        call = self.block_call
        errors = self.comp.errors
        bits = ", ".join(str(parser_error_bit(errors, code)) for code in range(len(errors))) or "0"
        recirc = " || ".join(f"info[I_UCAST] == {p}" for p in sorted(RECIRCULATION_PORTS))
        return f"""
typedef struct p4_ig_state_t {{
{chr(10).join(ig_members)}
}} p4_ig_state_t;
typedef struct p4_eg_state_t {{
{chr(10).join(eg_members)}
}} p4_eg_state_t;
typedef struct p4_state_t {{ p4_ig_state_t ig; p4_eg_state_t eg; }} p4_state_t;

/* tna.py's parser_error_bit for each error code */
static const uint64_t p4_parser_err_bits[{max(1, len(errors))}] = {{ {bits} }};
static inline uint64_t p4_parser_err_bit(int64_t code) {{
    if (!code) return 0;
    return code < {len(errors)} ? p4_parser_err_bits[code] : 1;
}}

/* info[] of p4_tna_ingress, read by native.py (TNA_INFO_*) */
enum {{ I_UCAST, I_MCAST, I_RID, I_BYPASS, I_DROP, I_RESUBMIT, I_RESUBMIT_LEN, I_CLONE,
        I_SESSION, I_MIRROR_LEN, I_LEN, I_COUNT }};

/* One ingress pass (tna.py TnaPipeline._ingress up to the deparser): the parser reads the
   intrinsic metadata, the {PORT_METADATA_BYTES} bytes of port_md (port metadata or the resubmit data), then
   the frame. Writes the deparsed packet (headers, then the unparsed rest) to out; returns its
   length or P4_ERROR, the traffic manager's inputs in info. */
int64_t p4_tna_ingress(p4_switch_t *sw, uint64_t port, const uint8_t *data, int64_t len,
                       const uint8_t *port_md, uint64_t resubmit_flag, uint64_t tstamp,
                       uint8_t *out, uint64_t *info) {{
    p4_ig_state_t *st = &((p4_state_t *)sw->state)->ig;
    memset(st, 0, sizeof *st);
    {ig_md} md = {{0}};
    md.resubmit_flag = resubmit_flag;
    md.ingress_port = port;
    md.ingress_mac_tstamp = tstamp & 0xFFFFFFFFFFFFULL;
    md._v = 1;
    int64_t prefix = NBYTES_{ig_md} + {PORT_METADATA_BYTES}, wlen = prefix + len;
    uint8_t *wire = p4_scratch(sw, 0, wlen);
    if (!wire) {{ sw->error = "out of memory"; return P4_ERROR; }}
    pack_{ig_md}(&md, wire);
    memcpy(wire + NBYTES_{ig_md}, port_md, {PORT_METADATA_BYTES});
    memcpy(wire + prefix, data, (size_t)len);
    sw->resubmit_set = sw->clone_set = 0;
    sw->resubmit_len = sw->mirror_len = 0;
{self.tna_parse("ingress_parser", ig, ig_prsr)}
    st->m_{ig_tm}.ucast_egress_port = {UNSET_PORT};
    memset(sw->claimed, 0, sizeof sw->claimed);
    {call("ingress", ig)}
    p4_pktout_t pout = {{ out, 0 }};
    {call("ingress_deparser", ig)}
    memcpy(out + pout.len, sw->payload, (size_t)sw->payload_len);
    info[I_UCAST] = st->m_{ig_tm}.ucast_egress_port;
    info[I_MCAST] = st->m_{ig_tm}.mcast_grp_a;
    info[I_RID] = st->m_{ig_tm}.rid;
    info[I_BYPASS] = st->m_{ig_tm}.bypass_egress;
    info[I_DROP] = st->m_{ig_dprsr}.drop_ctl;
    info[I_RESUBMIT] = (uint64_t)sw->resubmit_set;
    info[I_RESUBMIT_LEN] = (uint64_t)sw->resubmit_len;
    info[I_CLONE] = (uint64_t)sw->clone_set;
    info[I_SESSION] = sw->clone_session;
    info[I_MIRROR_LEN] = (uint64_t)sw->mirror_len;
    info[I_LEN] = (uint64_t)(pout.len + sw->payload_len);
    return pout.len + sw->payload_len;
}}

/* One egress pass (tna.py TnaPipeline._egress) of data, the packet as ingress deparsed it.
   Returns the frame's length (written to out), -1 when drop_ctl dropped it, P4_ERROR. */
int64_t p4_tna_egress(p4_switch_t *sw, uint64_t eport, uint64_t rid, const uint8_t *data,
                      int64_t len, uint8_t *out) {{
    p4_eg_state_t *st = &((p4_state_t *)sw->state)->eg;
    memset(st, 0, sizeof *st);
    {eg_md} md = {{0}};
    md.egress_port = eport;
    md.egress_rid = rid;
    md.pkt_length = (uint64_t)len & 0xFFFF;
    md._v = 1;
    int64_t wlen = NBYTES_{eg_md} + len;
    uint8_t *wire = p4_scratch(sw, 1, wlen);
    if (!wire) {{ sw->error = "out of memory"; return P4_ERROR; }}
    pack_{eg_md}(&md, wire);
    memcpy(wire + NBYTES_{eg_md}, data, (size_t)len);
{self.tna_parse("egress_parser", eg, eg_prsr)}
    st->m_{eg_md} = md;          /* the controls see the pipeline's metadata, not the parser's */
    {call("egress", eg)}
    p4_pktout_t pout = {{ out, 0 }};
    {call("egress_deparser", eg)}
    if (st->m_{eg_dprsr}.drop_ctl & 1) return -1;
    memcpy(out + pout.len, sw->payload, (size_t)sw->payload_len);
    return pout.len + sw->payload_len;
}}

/* The whole pipeline when ingress sends the packet to one port and nothing else (no
   resubmit, mirror, multicast or recirculation): returns the frame's length (port in
   info[I_UCAST]), -1 (no output), -2 (ingress done, its deparsed packet in out and info
   filled: the runtime goes on as tna.py does) or P4_ERROR. */
int64_t p4_tna_process(p4_switch_t *sw, uint64_t port, const uint8_t *data, int64_t len,
                       uint64_t tstamp, uint8_t *out, uint64_t *info) {{
    static const uint8_t no_port_md[{PORT_METADATA_BYTES}];
    int64_t n = p4_tna_ingress(sw, port, data, len, no_port_md, 0, tstamp, out, info);
    if (n == P4_ERROR) return P4_ERROR;
    if (info[I_RESUBMIT] || info[I_CLONE] || info[I_MCAST]) return -2;
    if (info[I_DROP] & 1) return -1;
    if (info[I_UCAST] == {UNSET_PORT}) return -1;
    if ({recirc}) return -2;          /* a recirculation port: egress, then ingress again */
    if (info[I_BYPASS]) return n;
    uint8_t *deparsed = p4_scratch(sw, 2, n);
    if (!deparsed) {{ sw->error = "out of memory"; return P4_ERROR; }}
    memcpy(deparsed, out, (size_t)n);
    return p4_tna_egress(sw, info[I_UCAST], info[I_RID], deparsed, n, out);
}}

size_t p4_state_size(void) {{ return sizeof(p4_state_t); }}
"""

    def pipeline_functions(self) -> str:
        b = self.comp.blocks
        hdr_t, meta_t, sm_t = (b["parser"].params[i][2].py_class for i in (1, 2, 3))
        sm = self.classes[sm_t]
        names = {n for n, _ in sm.fields}
        for needed in ("ingress_port", "egress_spec", "egress_port", "instance_type",
                       "packet_length", "mcast_grp", "egress_rid", "parser_error",
                       "ingress_global_timestamp", "egress_global_timestamp"):
            if needed not in names:
                raise CUnsupported(f"standard_metadata_t without {needed}", self.path)

        call = self.block_call
        ing = {_ptr(hdr_t): "&st->hdr", _ptr(meta_t): "&st->meta", _ptr(sm_t): "&st->sm", PKTIN: "&pkt"}
        eg = {_ptr(hdr_t): "&st.hdr", _ptr(meta_t): "&st.meta", _ptr(sm_t): "&st.sm", PKTOUT: "&pout"}
        return f"""
typedef struct p4_state_t {{ {hdr_t} hdr; {meta_t} meta; {sm_t} sm; }} p4_state_t;

/* Ingress of one packet (parser, verifyChecksum, ingress). The state stays in the switch for
   the egress calls. Returns P4_DROP, P4_UNICAST (port in *arg) or P4_MULTICAST (group). */
int64_t p4_ingress(p4_switch_t *sw, uint64_t port, const uint8_t *data, int64_t len,
                   uint64_t timestamp, uint64_t *arg) {{
    p4_state_t *st = (p4_state_t *)sw->state;
    memset(st, 0, sizeof *st);
    st->sm.ingress_port = port;
    st->sm.packet_length = (uint64_t)len;
    st->sm.instance_type = 0;
    st->sm.ingress_global_timestamp = timestamp & 0xFFFFFFFFFFFFULL;
    sw->cur_sm = (void *)&st->sm;
    sw->packet_length = len;
    sw->rejected = 0;
    sw->exit_flag = 0;
    p4_pktin_t pkt = {{ data, len, 0 }};
    {call("parser", ing)}
    if (sw->rejected) st->sm.parser_error = (uint64_t)sw->reject_code;
    sw->payload = data + pkt.off;
    sw->payload_len = len - pkt.off;
    {call("verify_checksum", ing)}
    {call("ingress", ing)}
    if (st->sm.mcast_grp) {{ *arg = st->sm.mcast_grp; return P4_MULTICAST; }}
    if (st->sm.egress_spec == {V1_DROP_PORT}) return P4_DROP;
    st->sm.instance_type = 0;
    *arg = st->sm.egress_spec;
    return P4_UNICAST;
}}

/* Egress of one copy of the packet that ingress left (egress, computeChecksum, deparser).
   Returns the frame length written to out, -1 when egress dropped it, P4_ERROR. */
int64_t p4_egress(p4_switch_t *sw, uint64_t eport, uint64_t rid, uint64_t instance_type,
                  uint64_t timestamp, uint8_t *out) {{
    p4_state_t st = *(p4_state_t *)sw->state;
    st.sm.instance_type = instance_type;
    st.sm.egress_port = eport;
    st.sm.egress_rid = rid;
    st.sm.egress_spec = 0;
    st.sm.egress_global_timestamp = timestamp & 0xFFFFFFFFFFFFULL;
    sw->cur_sm = (void *)&st.sm;
    sw->packet_length = (int64_t)st.sm.packet_length;
    sw->exit_flag = 0;
    sw->truncate_length = 0;
    {call("egress", eg)}
    if (st.sm.egress_spec == {V1_DROP_PORT}) return -1;
    {call("compute_checksum", eg)}
    p4_pktout_t pout = {{ out, 0 }};
    {call("deparser", eg)}
    memcpy(out + pout.len, sw->payload, (size_t)sw->payload_len);
    int64_t n = pout.len + sw->payload_len;
    /* truncate(): V1ModelPipeline cuts the deparsed frame to the egress pass's length */
    if (sw->truncate_length && n > sw->truncate_length) n = sw->truncate_length;
    return n;
}}

/* Both halves in one call for the common case (unicast or drop, no timestamps read):
   returns the frame length (port in *arg), -1 (dropped), or -2 (multicast, group in *arg;
   the caller replicates with p4_egress). */
int64_t p4_process(p4_switch_t *sw, uint64_t port, const uint8_t *data, int64_t len,
                   uint8_t *out, uint64_t *arg) {{
    int64_t r = p4_ingress(sw, port, data, len, 0, arg);
    if (r == P4_ERROR) return P4_ERROR;
    if (r == P4_DROP) return -1;
    if (r == P4_MULTICAST) return -2;
    return p4_egress(sw, *arg, 0, 0, 0, out);
}}

size_t p4_state_size(void) {{ return sizeof(p4_state_t); }}
"""
