"""The parameter server of an INA training job, as a process (e.g. in a Mininet host).

    python -m training.ps --job job.json [--ready FILE] [--out stats.json]

Binds the INA port on the job's PS address, writes ``--ready`` once bound, completes every
fragment the switches did not (hostlib.ps.ParameterServer) until SIGTERM/SIGINT, then writes
what it received (by kind) to ``--out``.
"""
from __future__ import annotations

import argparse
import json
import signal
import sys
from pathlib import Path
from typing import Sequence

from .allreduce import InaJob, serve_ps


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m training.ps",
                                 description="Run the PS of an INA training job until SIGTERM.")
    ap.add_argument("--job", required=True, help="INA job description (JSON, training.allreduce.InaJob)")
    ap.add_argument("--ready", help="file to create once the socket is bound")
    ap.add_argument("--out", help="JSON file for the PS's counters when it stops")
    ap.add_argument("--timeout", type=float, default=3600.0, help="stop after this many seconds anyway")
    args = ap.parse_args(argv)
    if not Path(args.job).is_file():
        ap.error(f"--job {args.job}: no such file")
    job = InaJob.load(args.job)
    stop = {"now": False}
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.__setitem__("now", True))
    ready = (lambda: Path(args.ready).write_text("ready\n")) if args.ready else None
    ps = serve_ps(job, lambda: stop["now"], timeout=args.timeout, on_ready=ready)
    st = ps.stats
    report = {"received": dict(st.received), "results_sent": st.results_sent, "results_resent": st.results_resent,
              "results_relayed": st.results_relayed, "reminders": st.reminders, "queries": st.queries, "completed": st.completed,
              "incomplete": len(ps.incomplete()),
              # rounds of the entries still open: a contribution that reached the PS after its
              # fragment completed in a switch (a collided retransmission) opens one that nothing
              # completes; the PS keeps only its newest two rounds, so none may be older
              "incomplete_rounds": sorted({k[1] for k in ps.incomplete()})}
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
