"""Loss recovery on a simulated clock: what random frame loss costs a round, per scheme.

The emulation's setting (``python -m emulation.run fattree --mb M --schemes goat,atp --loss L``:
k=4 fat-tree, one job of 6 workers, 4 sub-models) on an in-process p4sim fabric
(emulation/inprocess.py) whose links serialize frames at ``--link-mbps`` and drop ``--loss`` of
what every switch port sends. The hosts are the same sans-IO cores the emulation runs, with its
timeout settings; no CPU time is modelled, so the numbers isolate the protocol: rounds lost to
timeouts and window stalls, and the extra frames recovery puts on the links and through the PS.

Prints per scheme and loss: mean round (simulated seconds) and its ratio to the lossless one,
frames dropped, worker resends and resends per dropped frame, the PS's frames in and out per
fragment it completed itself, and its queries. Deterministic for a seed; several seeds average
the randomness of where drops fall.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.machine import describe  # noqa: E402
from controller.deploy import deploy_plan  # noqa: E402
from controller.schemes import run_scheme  # noqa: E402
from emulation.inprocess import run_rounds  # noqa: E402
from emulation.schemes import fattree_setup  # noqa: E402
from hostlib.rto import RtoEstimator  # noqa: E402
from hostlib.worker import DEFAULT_WINDOW  # noqa: E402


def measure(scheme: str, mb: float, loss: float, *, rounds: int, seed: int, link_mbps: float, workers: int,
            rto: RtoEstimator, window: int) -> dict[str, float]:
    topo, job = fattree_setup(4, workers, mb)
    dep = deploy_plan(topo, job, run_scheme(scheme, topo, [job]), total_elements=int(mb * 1e6 / 4))
    res = run_rounds(topo, dep, rounds=rounds, loss=loss, seed=seed, link_mbps=link_mbps, rto=rto,
                     window=window, hop_latency=50e-6, until=600.0)
    if not res.exact or len(res.rounds) != rounds:
        raise RuntimeError(f"{scheme} at loss {loss}: {len(res.rounds)} of {rounds} rounds, exact={res.exact}")
    ps = res.ps_stats
    rx = sum(ps.received.values())
    tx = ps.results_sent + ps.results_resent + ps.reminders + ps.queries
    return {"round_s": sum(r["seconds"] for r in res.rounds) / rounds, "dropped": res.report.lost,
            "resent": sum(r["worker_resent"] for r in res.rounds), "ps_completed": ps.completed,
            "ps_rx": rx, "ps_tx": tx, "queries": ps.queries}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--schemes", default="goat,atp", help="comma list (default goat,atp)")
    ap.add_argument("--loss", default="0,0.01,0.05", help="comma list of drop rates per switch port")
    ap.add_argument("--mb", type=float, default=0.1, help="gradient per worker in MB (default 0.1)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seeds", type=int, default=2, help="runs per setting, seeds 1..N (default 2)")
    ap.add_argument("--workers", type=int, default=6)
    ap.add_argument("--link-mbps", type=float, default=20.0, help="every link's rate (default 20, the emulation's)")
    ap.add_argument("--window", type=int, default=DEFAULT_WINDOW,
                    help=f"first copies awaiting a result (default {DEFAULT_WINDOW}, the emulation's)")
    ap.add_argument("--rto-max", type=float, default=2.0,
                    help="RTO cap, s (default 2.0; the emulation's is 0.5 on 20 Mb/s links)")
    ap.add_argument("--rto-min", type=float, default=0.2, help="RTO floor, s (default 0.2, the emulation's)")
    args = ap.parse_args()
    print(describe())
    print(f"k=4 fat-tree, {args.workers} workers, {args.mb} MB, {args.rounds} rounds, links {args.link_mbps:g} Mb/s, "
          f"window {args.window}, RTO floor {args.rto_min} s; simulated time, mean of {args.seeds} seeds")
    print("| scheme | loss | round_s | x lossless | dropped | resent | resends/drop | PS-completed | "
          "PS rx/completed | PS tx/completed | queries | wall_s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for scheme in args.schemes.split(","):
        lossless = None
        for loss in [float(x) for x in args.loss.split(",")]:
            t0 = time.perf_counter()
            runs = [measure(scheme, args.mb, loss, rounds=args.rounds, seed=s, link_mbps=args.link_mbps,
                            workers=args.workers, window=args.window,
                            rto=RtoEstimator(initial=max(args.rto_min, 0.3), minimum=args.rto_min, maximum=args.rto_max))
                    for s in range(1, args.seeds + 1)]
            m = {k: sum(r[k] for r in runs) / len(runs) for k in runs[0]}
            lossless = m["round_s"] if loss == 0 else lossless
            ratio = f"{m['round_s'] / lossless:.2f}" if lossless else ""
            per = (lambda v: f"{v / m['ps_completed']:.1f}" if m["ps_completed"] else "")   # noqa: E731
            rpd = f"{m['resent'] / m['dropped']:.2f}" if m["dropped"] else ""
            print(f"| {scheme} | {loss:g} | {m['round_s']:.3f} | {ratio} | {m['dropped']:.0f} | {m['resent']:.0f} | "
                  f"{rpd} | {m['ps_completed']:.0f} | {per(m['ps_rx'])} | {per(m['ps_tx'])} | {m['queries']:.0f} | "
                  f"{time.perf_counter() - t0:.0f} |", flush=True)


if __name__ == "__main__":
    main()
