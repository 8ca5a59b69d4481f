"""ARO-ACC solve time on the 48-switch / 576-server leaf-spine with 5 jobs (ARO §IV-C, Fig. 11, λ = 1).

``python benchmarks/bench_aro.py [--seeds N] [--exact-limit S] [--no-exact]``

Five single-task jobs of 100 workers (exclusive random servers, PS under leaf i), 20 % of the
switches programmable with 4 pipelines. Prints, per seed, ARO-ACC's solve seconds (target
≤ 60 s) and its objective (Eq. 3) against the exact model (ARO-RAW, HiGHS) — the gap to the
exact optimum when the exact model finishes, else to its proven upper bound (target ≤ 5 %), and to the exact model's best plan.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from controller.aro import solve_aro                      # noqa: E402
from experiments.aro_study import Scenario, build         # noqa: E402


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--exact-limit", type=float, default=120.0, help="time limit per exact stage (s)")
    ap.add_argument("--no-exact", action="store_true", help="skip the exact model")
    args = ap.parse_args(argv)
    sc = Scenario(workers=100, jobs=5)
    print(f"{'seed':>4} {'ACC s':>7} {'ACC obj':>9} {'exact s':>8} {'exact obj':>10} {'bound':>9} "
          f"{'status':>8} {'gap':>7} {'vs best':>8}")
    worst_t, worst_gap, worst_best = 0.0, 0.0, 0.0
    for seed in range(args.seeds):
        topo, jobs = build(sc, seed)
        acc = solve_aro(topo, jobs, accelerated=True, seed=seed)
        worst_t = max(worst_t, acc.solve_seconds)
        row = f"{seed:>4} {acc.solve_seconds:7.2f} {acc.objective:9.3f}"
        if not args.no_exact:
            ex = solve_aro(topo, jobs, accelerated=False, seed=seed, time_limit=args.exact_limit)
            ref = ex.objective if ex.status == "optimal" else max(ex.bound or ex.objective, ex.objective)
            gap = max(0.0, (ref - acc.objective) / ref) if ref else 0.0
            vs_best = (ex.objective - acc.objective) / ex.objective if ex.objective else 0.0
            worst_gap = max(worst_gap, gap)
            worst_best = max(worst_best, vs_best)
            row += (f" {ex.solve_seconds:8.1f} {ex.objective:10.3f} {ex.bound or float('nan'):9.3f} "
                    f"{ex.status:>8} {100 * gap:6.2f}% {100 * vs_best:7.2f}%")
        print(row, flush=True)
    print(f"ARO-ACC worst solve time {worst_t:.2f} s (target <= 60 s)"
          + ("" if args.no_exact else f"; worst gap to the exact optimum (or its proven bound when the limit "
                                 f"stops it) {100 * worst_gap:.2f} % (target <= 5 %), to the exact model's best plan "
                                 f"{100 * worst_best:.2f} %"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
