"""Solve times of GOAT's control plane on the §VII-D topologies.

    .venv/bin/python benchmarks/bench_goat.py [--repeat 3] [--ilp SECONDS] [--per-worker-max 60]

Topologies as GOAT §VII-D: fat-tree k=8 (80 switches, 192 servers) and leaf-spine 10 spine /
10 leaf / 50 servers, 20 % of switches programmable with 64 MB each; one job training AlexNet
(221 MB) split into 56 sub-models, a random PS and 40 (fat-tree) / 35 (leaf-spine) random
workers, or every other host. Prints, as medians over ``--repeat`` runs: the LP relaxation
(Alg. 1 step 1) with worker classes and without (one y per worker, the paper's formulation;
only up to ``--per-worker-max`` workers, as it takes minutes with 191),
the PS-traffic tie-break's extra time, KRGS's rounding (steps 2-3), the repair, and the whole
``krgs`` call; ``--ilp S`` also runs the exact ILP with a time limit of S seconds.
"""
from __future__ import annotations

import argparse
import statistics
import time
from typing import Any, Callable

from controller import goat
from controller.profiles import make_job
from controller.topologies import fat_tree, leaf_spine


def _median_time(fn: Callable[[], Any], repeat: int) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ilp", type=float, default=0.0, help="also time the ILP with this limit (s)")
    ap.add_argument("--per-worker-max", type=int, default=60,
                    help="time the per-worker LP only up to this many workers (it takes minutes at 191)")
    args = ap.parse_args()
    topos = [("fat-tree k=8", fat_tree(8, hosts_per_edge=6, programmable_fraction=0.2, seed=1), 40),
             ("leaf-spine 10/10/50", leaf_spine(10, 10, hosts=50, programmable_fraction=0.2, seed=1), 35)]
    print(f"{'topology':<20} {'workers':>7} {'LP cols':>8} {'LP s':>7} {'LP/worker s':>11} {'tie s':>6} "
          f"{'round s':>8} {'repair s':>8} {'KRGS s':>7} {'KRGS/LP':>8}"
          + ("  ILP s (status, ILP/LP)" if args.ilp else ""))
    for name, topo, n in topos:
        for spec in (str(n), "all-but-ps"):
            job = make_job(topo, "alexnet", workers=spec, ps="random:1", submodels=56, seed=3)
            t_lp, lp = _median_time(lambda: goat.relax(topo, job, tie_break=False), args.repeat)
            per_worker = "-"
            if len(job.workers) <= args.per_worker_max:
                t_lpw, lpw = _median_time(lambda: goat.relax(topo, job, tie_break=False, compress=False), 1)
                assert abs(lpw.solution.objective - lp.solution.objective) <= 1e-6 * lp.solution.objective
                per_worker = f"{t_lpw:.3f}"
            t_tb, lp_tb = _median_time(lambda: goat.relax(topo, job), args.repeat)
            t_round, _ = _median_time(lambda: goat.krgs(topo, job, 0, lp=lp_tb), args.repeat)
            rep = statistics.median(goat.krgs(topo, job, 0, lp=lp_tb, repair=True).extra["repair"]["seconds"]
                                    for _ in range(args.repeat))
            t_all, full = _median_time(lambda: goat.krgs(topo, job, 0, repair=True), args.repeat)
            line = (f"{name:<20} {len(job.workers):>7} {len(lp.model.cost):>8} {t_lp:>7.3f} {per_worker:>11} "
                    f"{t_tb - t_lp:>6.3f} {t_round:>8.3f} {rep:>8.3f} {t_all:>7.3f} "
                    f"{full.extra['approx_ratio']:>8.4f}")
            if args.ilp:
                ilp = goat.solve_gina_ilp(topo, job, time_limit=args.ilp)
                ratio = ilp.objective / lp.solution.objective if ilp.objective else float("nan")
                line += f"  {ilp.solve_seconds:.2f} ({ilp.status}, {ratio:.4f})"
            print(line, flush=True)


if __name__ == "__main__":
    main()
