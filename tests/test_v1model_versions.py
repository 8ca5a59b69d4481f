"""Both v1model extern flavours selected by V1MODEL_VERSION, as p4c's v1model.p4 does."""
from pathlib import Path

import pytest

from p4sim import CompileError, Switch, load_program

PROG = Path(__file__).parent / "p4misc" / "legacy_externs.p4"


def test_legacy_register_and_counter_with_bit32_index() -> None:
    sw = Switch(load_program(str(PROG)))
    assert sw.process(0, bytes([0, 0, 0, 5])) == [(1, bytes(4))]
    assert sw.process(0, bytes([0, 0, 0, 5])) == [(1, bytes([0, 0, 0, 5]))]
    assert sw.register_read("Ing.r", 1) == 10
    assert sw.counter_read("Ing.c", 2) == (2, 8)


def test_typed_externs_when_version_is_2020(tmp_path: Path) -> None:
    src = PROG.read_text().replace("#include <v1model.p4>", "#define V1MODEL_VERSION 20200408\n#include <v1model.p4>")
    src = src.replace("register<bit<32>>(8) r;", "register<bit<32>, bit<3>>(8) r;")
    src = src.replace("counter(8, CounterType.packets) c;", "counter<bit<3>>(8, CounterType.packets) c;")
    p = tmp_path / "typed.p4"
    p.write_text(src)
    sw = Switch(load_program(str(p)))
    sw.process(0, bytes([0, 0, 0, 7]))
    assert sw.register_read("Ing.r", 1) == 7


# p4c's p4include/v1model.p4 says `#define V1MODEL_VERSION 20180101` when the program does not
# define it, and p4c-bm2-ss passes no -D for it (only the P4_14 front end defines 20200408).
P4C_DEFAULT_V1MODEL_VERSION = 20180101

SHOW_VERSION = """#include <core.p4>
{define}#include <v1model.p4>
header h_t {{ bit<32> v; bit<8> green; bit<8> red; }}
struct hs_t {{ h_t h; }}
struct m_t {{ }}
{typedef}
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
    state start {{ pkt.extract(hdr.h); transition accept; }}
}}
control VC(inout hs_t hdr, inout m_t meta) {{ apply {{ }} }}
control Ing(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{
    apply {{
        hdr.h.v = __v1model_version;
        hdr.h.green = V1MODEL_METER_COLOR_GREEN;
        hdr.h.red = V1MODEL_METER_COLOR_RED;
        PortId_t p = 1;
        sm.egress_spec = p;
    }}
}}
control Eg(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {{ apply {{ }} }}
control CC(inout hs_t hdr, inout m_t meta) {{ apply {{ }} }}
control D(packet_out pkt, in hs_t hdr) {{ apply {{ pkt.emit(hdr.h); }} }}
V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;
"""


def _run(tmp_path: Path, define: str = "", typedef: str = "") -> bytes:
    p = tmp_path / "version.p4"
    p.write_text(SHOW_VERSION.format(define=define, typedef=typedef))
    ((port, out),) = Switch(load_program(str(p))).process(0, bytes(6))
    assert port == 1
    return out


def test_default_version_is_p4cs(tmp_path: Path) -> None:
    # PortId_t is not declared by the default flavour (as in p4c): the program declares it
    out = _run(tmp_path, typedef="typedef bit<9> PortId_t;")
    assert int.from_bytes(out[:4], "big") == P4C_DEFAULT_V1MODEL_VERSION
    assert out[4:] == bytes([0, 2])   # V1MODEL_METER_COLOR_GREEN, _RED


def test_program_defined_version_wins(tmp_path: Path) -> None:
    out = _run(tmp_path, define="#define V1MODEL_VERSION 20200408\n")
    assert int.from_bytes(out[:4], "big") == 20200408


def test_port_id_typedef_only_from_2020(tmp_path: Path) -> None:
    # default flavour: PortId_t is no type name, so `PortId_t p = 1;` does not parse (p4c: the
    # same syntax error)
    with pytest.raises(CompileError, match=r"version\.p4:16:\d+: syntax error: unexpected 'p'"):
        _run(tmp_path)
    with pytest.raises(CompileError, match="'PortId_t' is already declared"):
        _run(tmp_path, define="#define V1MODEL_VERSION 20200408\n",
             typedef="typedef bit<16> PortId_t;")


@pytest.mark.parametrize("call, replacement", [
    ("resubmit({});", "resubmit_preserving_field_list"),
    ("clone3(CloneType.I2E, 32w5, {});", "clone_preserving_field_list"),
])
def test_deprecated_field_list_externs_are_rejected_as_by_p4c_bmv2(tmp_path: Path, call: str,
                                                                     replacement: str) -> None:
    # p4c-bm2-ss: "resubmit: unknown extern function" (also with an empty list)
    src = PROG.read_text().replace("c.count(2);", "c.count(2); " + call)
    p = tmp_path / "deprecated.p4"
    p.write_text(src)
    with pytest.raises(CompileError) as ei:
        load_program(str(p))
    name = call.split("(")[0]
    assert ei.value.message.startswith(f"{name}: unknown extern function")
    assert replacement in ei.value.message and ei.value.file == str(p)
