"""Both v1model extern flavours selected by V1MODEL_VERSION, as p4c's v1model.p4 does."""
from pathlib import Path

from p4sim import Switch, load_program

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
