"""controller.sync: the wanted state of a plan's table operations and its difference with what
a switch holds (pure; the servers are exercised in test_testbed.py)."""
from __future__ import annotations

import pytest

from controller.deploy import TableOp
from controller.sync import SwitchState, diff_states, entry_key, managed_tables, wanted_state
from dataplane.ina_harness import program

OPS = [TableOp.of("add_node", 1, 0, 64), TableOp.of("add_job", 1), TableOp.of("add_lpm", "10.0.0.1", 32, 3),
       TableOp.of("add_result_group", 7, [(1, "10.0.0.1", 1), (2, "10.0.0.2", 2)], rid_base=100)]


@pytest.mark.parametrize("arch", ["v1model", "tna"])
def test_wanted_state_records_entries_and_groups_under_the_programs_names(arch: str) -> None:
    info = program(arch).info
    want = wanted_state(info, OPS)
    assert want.groups == {7: [(1, 100), (2, 101)]}
    tables = {t.rsplit(".", 1)[-1]: n for t, n in ((t, len(e)) for t, e in want.entries.items())}
    assert tables == {"ina_node": 1, "ina_job": 1, "ipv4_lpm": 1, "result_rewrite": 2}
    assert set(want.entries) <= set(managed_tables(info))


def test_diff_inserts_modifies_deletes_and_replaces_groups() -> None:
    info = program("v1model").info
    want = wanted_state(info, OPS)
    assert diff_states(want, want).empty
    have = SwitchState({t: dict(e) for t, e in want.entries.items()}, {7: [(1, 100)], 9: [(4, 1)]})
    job_table = next(t for t in want.entries if t.endswith("ina_job"))
    (key, entry), = have.entries[job_table].items()
    stale = type(entry)(entry.match, type(entry.action)(entry.action.name, {**entry.action.args, "preemption": 1}))
    have.entries[job_table][key] = stale                                 # other action data: modify
    lpm = next(t for t in want.entries if t.endswith("ipv4_lpm"))
    del have.entries[lpm]                                                # missing: insert
    extra = type(entry)({k: type(v)(v.value + 1) for k, v in entry.match.items()}, entry.action)
    have.entries[job_table][entry_key(extra)] = extra                    # not in the plan: delete
    d = diff_states(want, have)
    assert [t for t, _ in d.inserts] == [lpm]
    assert [e.action.args["preemption"] for _, e in d.modifies] == [0]
    assert [e.match for _, e in d.deletes] == [extra.match]
    assert d.group_writes == {7: [(1, 100), (2, 101)]} and d.group_changes == {7}
    assert d.group_deletes == [9]
    assert "1 to insert, 1 to modify, 1 to delete" in d.summary()


def test_a_plan_writing_two_actions_for_one_key_is_refused() -> None:
    with pytest.raises(ValueError, match="two actions for one key"):
        wanted_state(program("v1model").info, [TableOp.of("add_job", 1), TableOp.of("add_job", 1, preemption=True)])
