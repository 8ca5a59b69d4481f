"""Load-time errors carry file:line:col and say what is wrong."""
from pathlib import Path

import pytest

from p4sim import CompileError, load_program

PRELUDE = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct hs_t { h_t h; }
struct m_t { bit<8> x; }
parser P(packet_in pkt, out hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout hs_t hdr, inout m_t meta) { apply { } }
control Eg(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }
control CC(inout hs_t hdr, inout m_t meta) { apply { } }
control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }
"""
MAIN = "V1Switch(P(), VC(), Ing(), Eg(), CC(), D()) main;\n"


def load_ingress(tmp_path: Path, body: str):
    src = PRELUDE + "control Ing(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {\n" + body + "\n}\n" + MAIN
    p = tmp_path / "prog.p4"
    p.write_text(src)
    return load_program(str(p)), p, PRELUDE.count("\n") + 2


@pytest.mark.parametrize("body,message", [
    ("apply { hdr.h.a = hdr.h.a + hdr.h.b; }", "type mismatch: bit<8> and bit<16>"),
    ("apply { hdr.h.a = undefined_thing; }", "unknown name 'undefined_thing'"),
    ("apply { hdr.h.a = 8w1 + ; }", "syntax error"),
    ("action a(bit<8> v) { hdr.h.a = v; } apply { a(); }", "missing argument for parameter 'v'"),
    ("action a(bit<8> v) { hdr.h.a = v; } apply { a(1, 2); }", "takes 1 arguments, got 2"),
    ("apply { hdr.h.a[9:2] = 1; }", "slice [9:2] out of range for bit<8>"),
    ("apply { hdr.nope.setValid(); }", "struct hs_t has no field 'nope'"),
    ("table t { key = { hdr.h.a : fuzzy; } actions = { NoAction; } } apply { t.apply(); }",
     "unknown match kind 'fuzzy'"),
    ("apply { bit<8> x = 1; x.foo(); }", "unknown method 'foo'"),
])
def test_error_has_position_and_message(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(CompileError) as info:
        load_ingress(tmp_path, body)
    err = info.value
    assert message in err.message
    assert err.file.endswith("prog.p4")
    assert err.line is not None and err.line >= PRELUDE.count("\n") + 1
    assert str(err).startswith(f"{err.file}:{err.line}")


def test_assigning_in_parameter_is_rejected(tmp_path: Path) -> None:
    src = PRELUDE.replace("control D(packet_out pkt, in hs_t hdr) { apply { pkt.emit(hdr.h); } }",
                          "control D(packet_out pkt, in hs_t hdr) { apply { hdr.h.a = 1; pkt.emit(hdr.h); } }")
    src += "control Ing(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }\n" + MAIN
    p = tmp_path / "in_param.p4"
    p.write_text(src)
    with pytest.raises(CompileError, match="read-only"):
        load_program(str(p))


def test_missing_file_and_bad_arch(tmp_path: Path) -> None:
    with pytest.raises(CompileError, match="No such file"):
        load_program(str(tmp_path / "missing.p4"))
    p = tmp_path / "x.p4"
    p.write_text("")
    with pytest.raises(CompileError, match="unknown architecture"):
        load_program(str(p), arch="psa")


def test_varbit_extract_without_size_is_rejected_clearly(tmp_path: Path) -> None:
    src = PRELUDE.replace("header h_t { bit<8> a; bit<16> b; }", "header h_t { bit<8> a; bit<16> b; varbit<32> opts; }")
    p = tmp_path / "vb.p4"
    p.write_text(src + "control Ing(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }\n" + MAIN)
    with pytest.raises(CompileError, match=r"varbit field: extract it with extract\(hdr, size_in_bits\)") as ei:
        load_program(str(p))
    assert ei.value.line is not None and ei.value.col is not None


def test_preprocessor_error_is_reported(tmp_path: Path) -> None:
    p = tmp_path / "inc.p4"
    p.write_text('#include "does_not_exist.p4"\n')
    with pytest.raises(CompileError, match="preprocessor"):
        load_program(str(p))


ING_EMPTY = "control Ing(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) { apply { } }\n"


def _ingress(body: str) -> str:
    return PRELUDE + "control Ing(inout hs_t hdr, inout m_t meta, inout standard_metadata_t sm) {" + body + "}\n" + MAIN


UNSUPPORTED = {
    "value sets": (PRELUDE.replace("state start { pkt.extract(hdr.h); transition accept; }",
                                   "value_set<bit<8>>(4) vs; state start { pkt.extract(hdr.h); transition accept; }")
                   + ING_EMPTY + MAIN, "parser value sets are not supported"),
    "direct application with constructor parameters": (
        PRELUDE + "control C(inout hs_t hdr)(bit<8> k) { apply { } }\n"
        + _ingress(" apply { C.apply(hdr); } ")[len(PRELUDE):], "C has constructor parameters"),
    "generic controls": (PRELUDE + "control G<T>(inout T x) { apply { } }\n" + ING_EMPTY + MAIN,
                         "generic control declarations are not supported"),
    "action profiles": (_ingress(" action_profile(4) ap; apply { } "), "extern action_profile is not supported"),
    "Checksum16": (_ingress(" Checksum16() c; apply { } "), "extern Checksum16 is not supported"),
    "clone3": (_ingress(" apply { clone3(CloneType.I2E, 1, {hdr.h.a}); } "), "clone3: unknown extern function"),
    "for loops": (_ingress(" apply { for (bit<8> i = 0; i < 4; i = i + 1) { } } "), "for loops"),
}


@pytest.mark.parametrize("name", sorted(UNSUPPORTED))
def test_unsupported_construct_is_a_clear_load_error(tmp_path: Path, name: str) -> None:
    src, message = UNSUPPORTED[name]
    p = tmp_path / "unsupported.p4"
    p.write_text(src)
    with pytest.raises(CompileError) as info:
        load_program(str(p))
    assert message in info.value.message
    assert info.value.line is not None


@pytest.mark.parametrize("text", ["", "header h_t { bit<8> a; }\n", PRELUDE])
def test_missing_main_names_the_program_file(tmp_path: Path, text: str) -> None:
    # not cpp's "<command-line>" pseudo-file, and not v1model.p4 even though it was read last
    p = tmp_path / "no_main.p4"
    p.write_text(text)
    with pytest.raises(CompileError) as info:
        load_program(str(p))
    assert str(info.value) == f"{p}: program has no `main` package instance"


def test_missing_main_from_the_command_line(tmp_path: Path) -> None:
    import subprocess
    import sys
    p = tmp_path / "no_main.p4"
    p.write_text(PRELUDE)
    proc = subprocess.run([sys.executable, "-m", "p4sim", "compile", str(p)],
                          capture_output=True, text=True)
    assert proc.returncode != 0
    assert proc.stderr.strip() == f"{p}: program has no `main` package instance"
