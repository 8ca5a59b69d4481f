"""The training example on this machine alone: PS and workers on loopback addresses, no switch.

    python -m training.local --workers 2 --steps 100 --out results/training-local [--verify]

The INA protocol is unchanged, only the network is missing: every fragment is labelled node 0,
so the PS (a thread here) aggregates everything. Workers are processes on random
``127.x.y.z`` addresses (so concurrent runs do not collide), the gloo process group on
``lo``. Runs INA, then gloo, with the same seed, and writes losses.csv, training.png and
summary.md. ``--device cuda`` puts every worker's model on a GPU (they share it when there is
one). For the real thing — p4sim switches in Mininet — see ``python -m emulation.train``.
"""
from __future__ import annotations

import argparse
import os
import random
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Sequence

from hostlib.protocol import MAX_WORKERS
from hostlib.worker_tuning import LOOPBACK_WINDOW

from .allreduce import InaJob, serve_ps
from .launch import MODES, machine, merge, read_rows, wait_workers, worker_command, write_report


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def run_mode(mode: str, job: InaJob, workdir: Path, *, steps: int, verify: bool = False, seed: int = 0,
             timeout: float = 600.0, extra: Sequence[str] = (), threads: int = 1, window: int = LOOPBACK_WINDOW,
             progress: Callable[[int], None] | None = None) -> list[list[dict[str, Any]]]:
    """``job.n_workers`` worker processes of ``mode`` on loopback (INA: with a PS thread);
    every rank's per-step rows."""
    workdir.mkdir(parents=True, exist_ok=True)
    n = job.n_workers
    job_file = workdir / "job.json"
    job.save(job_file)
    stop, ready = threading.Event(), threading.Event()
    ps_thread = None
    if mode == "ina":
        ps_thread = threading.Thread(target=serve_ps, args=(job, stop.is_set),
                                     kwargs={"timeout": timeout, "on_ready": ready.set, "threads": threads},
                                     daemon=True)
        ps_thread.start()
        if not ready.wait(30):
            raise RuntimeError(f"PS on {job.ps_ip} did not start")
    master = f"127.0.0.1:{free_port()}"
    env = dict(os.environ, GLOO_SOCKET_IFNAME="lo")
    procs: dict[str, subprocess.Popen] = {}
    logs = {f"rank{r}": workdir / f"{mode}-rank{r}.log" for r in range(n)}
    csvs = [workdir / f"{mode}-rank{r}.csv" for r in range(n)]
    for c in csvs:
        c.unlink(missing_ok=True)
    try:
        for r in range(n):
            with open(logs[f"rank{r}"], "w") as log:
                procs[f"rank{r}"] = subprocess.Popen(
                    worker_command(r, n, master, mode, csvs[r], steps=steps, job_file=job_file, verify=verify,
                                   seed=seed, extra=[*extra, "--ina-threads", str(threads), "--window", str(window)] if mode == "ina"
                                   else extra),
                    stdout=log, stderr=subprocess.STDOUT, env=env)
        wait_workers(procs, logs, timeout, progress_csv=csvs[0], progress=progress)
    finally:
        for p in procs.values():                 # only ours, by PID
            if p.poll() is None:
                p.kill()
                p.wait(10)
        stop.set()
        if ps_thread is not None:
            ps_thread.join(10)
    return [read_rows(c) for c in csvs]


def loopback_job(workers: int, threads: int = 1) -> InaJob:
    """A job of ``workers`` on random loopback addresses, one sub-model per thread."""
    net = f"127.{random.randint(20, 250)}.{random.randint(1, 250)}"
    return InaJob.loopback(workers, net, submodels=threads)


def main(argv: Sequence[str] | None = None) -> int:
    from .train_digits import DEFAULT_HIDDEN, DEVICES, MODELS, ModelSpec, device_for   # torch: only for the CLI
    ap = argparse.ArgumentParser(
        prog="python -m training.local",
        description="Train the digits MLP or CNN with N worker processes on this machine, gradients averaged through the "
                    "INA protocol (PS thread, loopback UDP, no switch) and then by gloo, same seed; writes "
                    "losses.csv, training.png, summary.md.")
    ap.add_argument("--workers", type=int, default=2, help=f"worker processes (1..{MAX_WORKERS}, default 2)")
    ap.add_argument("--steps", type=int, default=100, help="training steps per mode (default 100)")
    ap.add_argument("--modes", default="ina,gloo", help="comma list of ina, gloo (default both)")
    ap.add_argument("--verify", action="store_true", help="INA: check every step's gradients against gloo's")
    ap.add_argument("--model", choices=MODELS, default="mlp",
                    help="mlp (default), cnn, or wide (1.1M parameters) (training.train_digits)")
    ap.add_argument("--device", choices=DEVICES, default="cpu",
                    help="where every worker trains (default cpu); cuda: worker r on GPU r mod the GPU count, "
                         "refused without CUDA")
    ap.add_argument("--threads", type=int, default=1,
                    help="INA: threads per worker and for the PS, the gradient cut into as many sub-models "
                         "(hostlib.shards; default 1)")
    ap.add_argument("--window", type=int, default=LOOPBACK_WINDOW,
                    help=f"INA fragments in flight per worker thread (default {LOOPBACK_WINDOW})")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="results/training-local", help="output folder")
    ap.add_argument("--quiet", action="store_true", help="no progress bar")
    args = ap.parse_args(argv)
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    if not modes or any(m not in MODES for m in modes):
        ap.error(f"--modes {args.modes!r}: a comma list of {', '.join(MODES)}")
    if not 1 <= args.workers <= MAX_WORKERS:
        ap.error(f"--workers {args.workers}: must be in 1..{MAX_WORKERS}")
    if args.steps < 1:
        ap.error(f"--steps {args.steps}: must be at least 1")
    if not 1 <= args.threads <= 64:
        ap.error(f"--threads {args.threads}: must be in 1..64")
    if args.window < 1:
        ap.error(f"--window {args.window}: must be at least 1")
    try:
        device_for(args.device, 0)
    except ValueError as e:
        ap.error(str(e))
    from tqdm import tqdm
    out = Path(args.out)
    job = loopback_job(args.workers, args.threads)
    per_mode = {}
    with tqdm(total=args.steps * len(modes), unit="step", disable=args.quiet, file=sys.stderr) as bar:
        for mode in modes:
            bar.set_description(mode)
            per_mode[mode] = run_mode(mode, job, out / "runs", steps=args.steps, verify=args.verify, seed=args.seed,
                                      extra=[*ModelSpec(args.model, DEFAULT_HIDDEN[args.model]).cli_args(), "--device",
                                             args.device],
                                      threads=args.threads, window=args.window, progress=bar.update)
    rows = merge(per_mode)
    s = write_report(out, rows, title=f"digits {args.model.upper()}, {args.workers} workers, loopback (no switch)",
                     setup=f"Machine: {machine(args.device)}. INA: PS on {job.ps_ip} aggregates (node 0), UDP over loopback.")
    print((out / "summary.md").read_text())
    print(f"wrote {out / 'losses.csv'}, {out / 'summary.md'}, {out / 'training.png'}")
    return 0 if s.get("max_grad_ratio", 0.0) <= 1.0 else 1


if __name__ == "__main__":
    sys.exit(main())
