"""A plan without in-network aggregation (LBMM) deploys without aggregating switches."""
from controller.deploy import deploy_jobs
from controller.schemes import run_scheme
from emulation.experiment import JobSpec, build_topology, place_jobs


def _deployed(scheme: str, ps_per_job: int):
    topo = build_topology("inart")            # k=6 fat-tree, every switch programmable
    jobs = place_jobs(topo, [JobSpec(0.25, 1)], 12, ps_per_job=ps_per_job)
    plan = run_scheme(scheme, topo, jobs)
    fd = deploy_jobs(topo, jobs, plan, total_elements={jobs[0].name: 1000}, pool_size=256)
    return plan, fd


def test_lbmm_deploys_no_aggregation():
    for ps in (1, 2):
        plan, fd = _deployed("lbmm", ps)
        assert plan.extra["ina"] == "none"
        assert len(fd.jobs) == ps
        for dep in fd.jobs:
            # every worker's first copies go to the PS (node 0): no switch aggregates
            assert all(lab.node_id == 0 for w in dep.workers for lab in dep.labels[w])
            assert not any(lv[0] in ("to_ps", "to_node") for lv in dep.levels.values())


def test_aggtree_still_aggregates_where_paths_merge():
    _, fd = _deployed("aggtree", 1)
    assert any(lab.node_id != 0 for w in fd.jobs[0].workers for lab in fd.jobs[0].labels[w])
