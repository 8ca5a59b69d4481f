"""p4sim's TNA mode refuses what Tofino 1's compiler refuses where the rule is local
(p4sim/backend/tofino_rules.py): stateful-ALU operations and limits in RegisterAction bodies and
over a register's actions, one register output per action, gateway comparisons,
register indices, Hash.get() inside expressions, nested casts. v1model is unaffected."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from p4sim import load_program
from p4sim.errors import CompileError

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
BASE = (HERE / "agg_basic.p4").read_text()

ADD_VALUE = "            value = value + hdr.agg.value;\n            rv = value;\n"
EXEC_SUM = "hdr.agg.sum = add_value.execute(hdr.agg.slot);"
HASH_LINE = "hdr.agg.hash = slot_hash.get({hdr.agg.slot, hdr.agg.value});"


def _load(tmp_path: Path, src: str, arch: str = "tna"):
    p = tmp_path / "prog.p4"
    p.write_text(src)
    return load_program(str(p), arch=arch)


def _refused(tmp_path: Path, src: str, pattern: str, line_text: str) -> CompileError:
    with pytest.raises(CompileError) as ei:
        _load(tmp_path, src)
    err = ei.value
    msg = str(err)
    assert re.search(pattern, msg), msg
    # file:line:col: message, pointing at the offending line
    assert re.match(rf"{re.escape(str(tmp_path / 'prog.p4'))}:\d+:\d+: ", msg), msg
    assert line_text in src.splitlines()[err.line - 1], (msg, src.splitlines()[err.line - 1])
    return err


def _body(new: str) -> str:
    assert ADD_VALUE in BASE
    return BASE.replace(ADD_VALUE, new)


@pytest.mark.parametrize("op,what", [(">>", "shift"), ("<<", "shift"), ("*", "multiplication"),
                                     ("/", "division"), ("%", "modulo")])
def test_register_action_without_shift_multiply_divide_modulo(tmp_path: Path, op: str, what: str) -> None:
    src = _body(f"            value = value {op} 2;\n            rv = value;\n")
    _refused(tmp_path, src, rf"RegisterAction add_value: '{re.escape(op)}' \({what}\).*stateful ALU has no {what}",
             f"value = value {op} 2;")


def test_compound_shift_is_refused_too(tmp_path: Path) -> None:
    src = _body("            value >>= 1;\n            rv = value;\n")
    _refused(tmp_path, src, r"'>>' \(shift\)", "value >>= 1;")


def test_constant_expressions_are_folded(tmp_path: Path) -> None:
    src = _body("            value = value + (1 << 4);\n            rv = value;\n")
    _load(tmp_path, src)


def test_at_most_two_comparisons(tmp_path: Path) -> None:
    ok = _body("            if (value != 0x7fffffff && value != 0) { value = value + hdr.agg.value; }\n"
               "            if (value == 0) { rv = 1; } else { rv = 0; }\n")
    _load(tmp_path, ok)                       # == and != of the same operands: one comparison
    bad = _body("            if (value != 0x7fffffff && value != 0) {\n"
                "                if (value < hdr.agg.value) { value = value + hdr.agg.value; }\n"
                "            }\n            rv = value;\n")
    _refused(tmp_path, bad, r"3 comparisons, Tofino 1's stateful ALU has 2 comparison units",
             "value < hdr.agg.value")


def test_at_most_two_updates_per_register_word(tmp_path: Path) -> None:
    bad = _body("            if (value == 0) { value = 1; } else if (value == 1) { value = 5; }\n"
                "            else { value = value + hdr.agg.value; }\n            rv = value;\n")
    _refused(tmp_path, bad, r"3 different updates of 'value', .* 2 ALUs per register word",
             "value = value + hdr.agg.value;")


def test_at_most_two_nonzero_constants_output(tmp_path: Path) -> None:
    ok = _body("            if (value == hdr.agg.value) { rv = 2; }\n"
               "            else if (value < hdr.agg.value) { value = hdr.agg.value; rv = 0; }\n"
               "            else { rv = 4; }\n")
    _load(tmp_path, ok)                       # 0 is the undriven output: two constants driven
    bad = ok.replace("rv = 0;", "rv = 3;")
    _refused(tmp_path, bad, r"outputs 3 different non-zero constants, Tofino 1's stateful ALU "
                            r"drives at most 2", "rv = 4;")


def test_no_comparison_with_minus_two_to_the_31(tmp_path: Path) -> None:
    bad = _body("            if (value != -0x7fffffff - 1) { value = value + hdr.agg.value; }\n"
                "            rv = value;\n")
    _refused(tmp_path, bad, r"a comparison with -2\^31: the Tofino back end negates the constant",
             "value != -0x7fffffff - 1")
    ok = _body("            if (value != 0x7fffffff) { value = value + hdr.agg.value; }\n"
               "            rv = value;\n")
    _load(tmp_path, ok)


def test_update_is_one_operation_on_two_operands(tmp_path: Path) -> None:
    bad = _body("            value = value + hdr.agg.value + hdr.agg.sum;\n            rv = value;\n")
    _refused(tmp_path, bad, r"expression too complex for Tofino 1's stateful ALU",
             "value = value + hdr.agg.value + hdr.agg.sum;")


def test_only_assignments_and_ifs_in_a_register_action(tmp_path: Path) -> None:
    bad = _body("            value = value + hdr.agg.value;\n            rv = value;\n"
                "            hdr.agg.setInvalid();\n")
    _refused(tmp_path, bad, r"a method call cannot run in Tofino 1's stateful ALU", "setInvalid")


def test_register_index_must_be_a_field_constant_or_hash(tmp_path: Path) -> None:
    assert EXEC_SUM in BASE
    bad = BASE.replace(EXEC_SUM, "hdr.agg.sum = add_value.execute(hdr.agg.slot + 1);")
    _refused(tmp_path, bad, r"RegisterAction.execute: the register index 'hdr.agg.slot \+ 1'|"
                            r"RegisterAction.execute: the register index '\(hdr.agg.slot \+ 1\)' "
                            r"is too complex for Tofino 1", "add_value.execute(hdr.agg.slot + 1)")
    _load(tmp_path, BASE.replace(EXEC_SUM, "hdr.agg.sum = add_value.execute(7);"))
    _load(tmp_path, BASE.replace(EXEC_SUM, "hdr.agg.sum = add_value.execute("
                                           "slot_hash.get({hdr.agg.slot, hdr.agg.value}));"))
    bad = BASE.replace(EXEC_SUM, "hdr.agg.sum = add_value.execute(slot_hash.get({hdr.agg.slot}) & 0xff);")
    with pytest.raises(CompileError, match=r"too complex for Tofino 1|inside an expression"):
        _load(tmp_path, bad)


def test_hash_get_must_be_assigned_to_a_field_of_its_own(tmp_path: Path) -> None:
    assert HASH_LINE in BASE
    bad = BASE.replace(HASH_LINE, "hdr.agg.hash = slot_hash.get({hdr.agg.slot, hdr.agg.value}) & 0xff;")
    _refused(tmp_path, bad, r"slot_hash.get\(\) inside an expression .* assign the hash to a "
                            r"metadata field of its own", "slot_hash.get(")


def test_nested_casts(tmp_path: Path) -> None:
    line = "hdr.ethernet.src = (bit<48>) eg_intr_md.egress_rid;"
    assert line in BASE
    # narrowing and widening again (bit<16> -> bit<8> -> bit<48>) is refused
    bad = BASE.replace(line, "hdr.ethernet.src = (bit<48>) (bit<8>) eg_intr_md.egress_rid;")
    _refused(tmp_path, bad, r"the inner cast narrows bit<16> to bit<8> and the outer one widens it "
                            r"to bit<48>; consider simplifying the nested casts", "(bit<48>) (bit<8>)")
    # three levels are refused
    bad = BASE.replace(line, "hdr.ethernet.src = (bit<48>) (bit<32>) (bit<24>) eg_intr_md.egress_rid;")
    _refused(tmp_path, bad, r"three nested casts", "(bit<48>) (bit<32>) (bit<24>)")
    # widening twice, or a cast of a constant, is simplified by the compiler
    _load(tmp_path, BASE.replace(line, "hdr.ethernet.src = (bit<48>) (bit<32>) eg_intr_md.egress_rid;"))
    _load(tmp_path, BASE.replace(line, "hdr.ethernet.src = (bit<48>) (bit<8>) (bit<4>) 3;"))


def test_v1model_programs_are_not_checked(tmp_path: Path) -> None:
    src = """#include <core.p4>
#include <v1model.p4>
header h_t { bit<8> a; bit<16> b; }
struct headers_t { h_t h; }
struct meta_t { }
parser P(packet_in pkt, out headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    state start { pkt.extract(hdr.h); transition accept; }
}
control VC(inout headers_t hdr, inout meta_t m) { apply { } }
control I(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) {
    register<bit<8>>(16) r;
    apply {
        hdr.h.b = (bit<16>) (bit<4>) (bit<8>) hdr.h.b;
        r.write((bit<32>) hdr.h.a + 1, hdr.h.a >> 1);
        sm.egress_spec = 1;
    }
}
control E(inout headers_t hdr, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t hdr, inout meta_t m) { apply { } }
control D(packet_out pkt, in headers_t hdr) { apply { pkt.emit(hdr.h); } }
V1Switch(P(), VC(), I(), E(), CC(), D()) main;
"""
    _load(tmp_path, src, arch="v1model")


@pytest.mark.parametrize("prog", sorted(
    [str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("*.p4") if "tna.p4" in p.read_text()]
    + ["p4src/tna/ina.p4"]))
def test_the_projects_tna_programs_pass_the_rules(prog: str) -> None:
    load_program(str(ROOT / prog), arch="tna")


SUMS_DECL = "    Register<bit<8>, bit<16>>(1024, 0) counts;\n"
FORWARD = "    action forward(PortId_t port) { ig_tm_md.ucast_egress_port = port; }\n"
COUNT_TEST = "            if (hdr.agg.count == 0) {"


def test_a_register_reads_at_most_two_phv_fields(tmp_path: Path) -> None:
    """Found by the open Tofino back end on p4src/tna/aggregator.p4: 'requires more than 2 PHV
    inputs' for the priority register (packet priority, hold mark, downgrade's seen/next)."""
    two_more = ("    RegisterAction<bit<32>, bit<16>, bit<32>>(sums) store = {\n"
                "        void apply(inout bit<32> value, out bit<32> rv) {\n"
                "            rv = value;\n"
                "            if (value == hdr.agg.sum) { value = (bit<32>) hdr.agg.slot; }\n"
                "        }\n"
                "    };\n") + SUMS_DECL
    assert SUMS_DECL in BASE
    bad = BASE.replace(SUMS_DECL, two_more)
    _refused(tmp_path, bad, r"RegisterAction store: register sums's stateful ALU would read 3 PHV "
                            r"fields \(hdr.agg.slot, hdr.agg.sum, hdr.agg.value\); Tofino 1's reads "
                            r"at most 2", "value == hdr.agg.sum")
    # two fields over all the register's actions are fine
    _load(tmp_path, BASE.replace(SUMS_DECL, two_more.replace("(bit<32>) hdr.agg.slot", "hdr.agg.value")))


def test_an_action_drives_at_most_one_register_output(tmp_path: Path) -> None:
    """bf-p4c: 'At most one stateful ALU operation with a given address is allowed per action'."""
    both = ("    action sum_and_count() { hdr.agg.sum = add_value.execute(hdr.agg.slot);\n"
            "                             hdr.agg.count = bump.execute(hdr.agg.slot); }\n")
    assert FORWARD in BASE
    bad = BASE.replace(FORWARD, FORWARD + both)
    _refused(tmp_path, bad, r"action sum_and_count: 2 RegisterAction outputs; a Tofino 1 action "
                            r"drives at most one", "hdr.agg.count = bump.execute")
    one = both.replace("hdr.agg.count = bump.execute(hdr.agg.slot);", "")
    _load(tmp_path, BASE.replace(FORWARD, FORWARD + one))


def test_a_gateway_does_not_order_two_fields(tmp_path: Path) -> None:
    """bf-p4c: 'condition too complex, one operand of ... > ... must be constant'."""
    assert COUNT_TEST in BASE
    bad = BASE.replace(COUNT_TEST, "            if (hdr.agg.count > hdr.agg.hash[7:0]) {")
    _refused(tmp_path, bad, r"condition 'hdr.agg.count > hdr.agg.hash\[7:0\]' orders two fields; "
                            r"a Tofino 1 gateway compares a field with a constant",
             "hdr.agg.count > hdr.agg.hash")
    _load(tmp_path, BASE.replace(COUNT_TEST, "            if (hdr.agg.count > 3) {"))
    _load(tmp_path, BASE.replace(COUNT_TEST, "            if (hdr.agg.count != hdr.agg.hash[7:0]) {"))
