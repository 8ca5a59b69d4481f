"""Data-parallel training of a small network (an MLP or a CNN, ``--model``) on scikit-learn's
digits, gradients averaged by INA or gloo.

    python -m training.train_digits --rank R --world-size N --master IP:PORT \\
        --allreduce ina --ina-job job.json --model cnn --steps 200 --out rank0.csv

One process per worker. Every rank builds the same model from ``--seed``, trains on its own
shard of the 1797 8x8 digit images (shipped inside scikit-learn: no download) with
``DistributedDataParallel`` on a gloo process group, and averages gradients either with DDP's
own gloo all-reduce (``--allreduce gloo``) or through the INA network
(``--allreduce ina``: :func:`training.ddp_hook.register_ina_hook`, the job described by
``--ina-job``, see :class:`training.allreduce.InaJob`). The same seed gives both modes the same
initial weights and the same batches, so their loss curves differ only by the fixed-point
rounding of the INA sums.

Per step the CSV gets: ``loss`` (cross-entropy over the whole data set at the step's weights,
before its update: the same on every rank), ``batch_loss`` (this rank's mini-batch),
``seconds`` (forward + backward with gradient averaging + optimizer step); with INA, the
all-reduce's counters (rounds, fragments sent and resent) go to ``<out>.json``.
``--device cuda`` trains on a GPU (rank r on ``cuda:(r mod the GPU count)``): the model and
the data live there, the process group stays gloo (which all-reduces CUDA tensors, and lets
several ranks share one GPU) and the INA hook stages each bucket through pinned host memory. ``--verify`` (INA
only) also all-reduces each step's local gradients with gloo and records the largest deviation
of the INA mean from gloo's, and that deviation over its error bound (:func:`grad_error_bound`;
``grad_ratio`` <= 1 means within the bound).
"""
from __future__ import annotations

import argparse
import csv
import datetime
import json
import math
import os
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from hostlib.worker import DEFAULT_WINDOW

from .allreduce import InaAllReduce, InaJob, sum_error_bound
from .ddp_hook import InaHookState, register_ina_hook

U32 = 2.0 ** -24                     # unit roundoff of float32 (round to nearest)
CSV_FIELDS = ["step", "loss", "batch_loss", "seconds", "scale_bits", "grad_max_diff", "grad_ratio"]


def load_data() -> tuple[torch.Tensor, torch.Tensor]:
    """The digits (1797 × 64 pixels in 0..16, 10 classes), pixels scaled to [0, 1]."""
    from sklearn.datasets import load_digits      # the data file ships with scikit-learn
    x, y = load_digits(return_X_y=True)
    return torch.from_numpy((x / 16.0).astype(np.float32)), torch.from_numpy(y.astype(np.int64))


MODELS = ("mlp", "cnn", "wide")
# hidden units when --hidden is not given: wide's 1024 make ~1.1M parameters (4.4 MB of fp32
# gradient per step), enough that moving gradients, not computing them, dominates a step
DEFAULT_HIDDEN = {"mlp": 64, "cnn": 64, "wide": 1024}


@dataclass(frozen=True)
class ModelSpec:
    """The network every rank builds: ``mlp`` (64 pixels → hidden → 10), ``cnn`` (the 8×8
    image through two 3×3 convolutions of 8 and 16 channels, each with ReLU and 2×2 max-pooling,
    then 64 → hidden → 10) or ``wide`` (64 → hidden → hidden → 10, ReLU between)."""
    kind: str = "mlp"
    hidden: int = 64

    def build(self, seed: int) -> nn.Module:
        torch.manual_seed(seed)
        h = self.hidden
        if self.kind == "mlp":
            return nn.Sequential(nn.Linear(64, h), nn.ReLU(), nn.Linear(h, 10))
        if self.kind == "wide":
            return nn.Sequential(nn.Linear(64, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 10))
        if self.kind == "cnn":
            return nn.Sequential(nn.Unflatten(1, (1, 8, 8)),
                                 nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                                 nn.Flatten(), nn.Linear(16 * 2 * 2, h), nn.ReLU(), nn.Linear(h, 10))
        raise ValueError(f"--model {self.kind!r}: one of {', '.join(MODELS)}")

    @property
    def n_parameters(self) -> int:
        """Gradient length (what an INA deployment is sized for)."""
        h = self.hidden
        convs = (9 * 8 + 8) + (8 * 9 * 16 + 16) if self.kind == "cnn" else 0
        middle = h * h + h if self.kind == "wide" else 0
        return convs + 64 * h + h + middle + h * 10 + 10

    def cli_args(self) -> list[str]:
        """The worker command line's options for this model."""
        return ["--model", self.kind, "--hidden", str(self.hidden)]


class Batches:
    """Rank ``rank``'s mini-batches: a fixed shard (every ``world``-th sample of a seeded
    permutation), reshuffled each epoch from a per-rank seed; the last partial batch is dropped
    so every rank makes the same number of steps."""

    def __init__(self, n_samples: int, rank: int, world: int, batch: int, seed: int) -> None:
        self.shard = np.random.default_rng(seed).permutation(n_samples)[rank::world]
        if batch > len(self.shard):
            raise ValueError(f"batch {batch} is larger than a shard ({len(self.shard)} samples)")
        self.batch, self.rng = batch, np.random.default_rng([seed, rank])
        self._order: list[np.ndarray] = []

    def next(self) -> np.ndarray:
        if not self._order:
            perm = self.rng.permutation(self.shard)
            self._order = [perm[i:i + self.batch] for i in range(0, len(perm) - self.batch + 1, self.batch)][::-1]
        return self._order.pop()


def grad_error_bound(ina_mean: np.ndarray, gloo_mean: np.ndarray, abs_sum: np.ndarray, n: int,
                     scale_bits: int) -> np.ndarray:
    """Per element, the largest |INA mean - gloo mean| rounding allows (float64):

    * INA: the fixed-point sum is within ``N 2^-(s+1)`` of the exact sum, so the mean within
      ``2^-(s+1)``; then one float32 cast (``u |ina|``);
    * gloo: float32 sum of N values, at most ``γ_{N-1} Σ|g_i|`` from the exact sum (Higham's
      bound for recursive summation, ``γ_k = k u / (1 - k u)``), then divided by N and rounded
      (``u |gloo|``).
    """
    gamma = (n - 1) * U32 / (1 - (n - 1) * U32)
    return (sum_error_bound(n, scale_bits) / n + U32 * np.abs(ina_mean)
            + gamma * abs_sum / n + U32 * np.abs(gloo_mean))


def _flat(tensors: Sequence[torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.reshape(-1) for t in tensors])


DEVICES = ("cpu", "cuda")


def device_for(kind: str, rank: int) -> torch.device:
    """Where rank ``rank`` trains: the CPU, or one GPU per rank in turn (ranks share GPUs when
    there are more ranks than GPUs). ValueError (one line) for ``cuda`` without a usable GPU."""
    if kind == "cpu":
        return torch.device("cpu")
    if kind != "cuda":
        raise ValueError(f"--device {kind!r}: one of {', '.join(DEVICES)}")
    if not torch.cuda.is_available():
        raise ValueError(f"--device cuda: CUDA is not available here (torch {torch.__version__}"
                         f"{'' if torch.version.cuda else ', a CPU-only build'}); use --device cpu")
    return torch.device("cuda", rank % torch.cuda.device_count())


def train(args: argparse.Namespace) -> list[dict[str, Any]]:
    torch.set_num_threads(args.threads)
    device = device_for(args.device, args.rank)
    if device.type == "cuda":
        torch.cuda.set_device(device)            # gloo's CUDA work and new streams go here
    x, y = (t.to(device) for t in load_data())   # 1797 x 64: the whole set fits on any GPU
    dist.init_process_group("gloo", init_method=f"tcp://{args.master}", rank=args.rank,
                            world_size=args.world_size, timeout=datetime.timedelta(seconds=args.timeout))
    ina: InaAllReduce | None = None
    hook: InaHookState | None = None
    ddp: DistributedDataParallel | None = None
    rows: list[dict[str, Any]] = []
    try:
        model = ModelSpec(args.model, args.hidden).build(args.seed).to(device)  # check_args filled hidden in
        ddp = DistributedDataParallel(model, device_ids=None if device.type == "cpu" else [device])
        if args.allreduce == "ina":
            ina = InaAllReduce(InaJob.load(args.ina_job), args.rank, window=args.window, timeout=args.timeout,
                               threads=args.ina_threads)
            hook = register_ina_hook(ddp, ina)
        opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=args.momentum)
        loss_fn = nn.CrossEntropyLoss()
        params = [p for p in model.parameters() if p.requires_grad]
        batches = Batches(len(y), args.rank, args.world_size, args.batch_size, args.seed)
        bar = None
        if args.progress and args.rank == 0:
            from tqdm import tqdm
            bar = tqdm(total=args.steps, unit="step", desc=args.allreduce, file=sys.stderr)
        for step in range(args.steps):
            with torch.no_grad():
                full = float(loss_fn(model(x), y))          # the curve: whole data set, same on all ranks
            idx = torch.from_numpy(batches.next()).to(device)
            xb, yb = x[idx], y[idx]
            check = 0.0
            t = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            if args.verify:
                c = time.perf_counter()
                # this rank's own gradient, computed on the module without DDP's hooks
                local = _flat(torch.autograd.grad(loss_fn(model(xb), yb), params)).detach()
                check += time.perf_counter() - c
            loss = loss_fn(ddp(xb), yb)
            loss.backward()
            row: dict[str, Any] = {"step": step, "loss": full, "batch_loss": float(loss.detach())}
            if args.verify:
                c = time.perf_counter()
                row.update(_verify(local, _flat([p.grad for p in params]), hook, args.world_size))
                check += time.perf_counter() - c
            opt.step()
            row["seconds"] = time.perf_counter() - t - check
            rows.append(row)
            if args.out:
                _write(args.out, rows)
            if bar is not None:
                bar.update(1)
                bar.set_postfix(loss=f"{full:.4f}")
        if bar is not None:
            bar.close()
        if ina is not None and args.out:
            Path(args.out + ".json").write_text(json.dumps({"ina": asdict(ina.stats)}) + "\n")
        if ina is not None:
            # a worker that lost its last result may still need ours: answer until all are here
            done = threading.Event()
            linger = threading.Thread(target=ina.serve, args=(done.is_set, args.timeout), daemon=True)
            linger.start()
            dist.barrier()
            done.set()
            linger.join()
        else:
            dist.barrier()
    finally:
        if hook is not None:
            hook.close()
        if ina is not None:
            ina.close()
        ddp = None                  # DDP's reducer holds the process group: release it first
        dist.destroy_process_group()
    return rows


def _verify(local: torch.Tensor, ina_mean_t: torch.Tensor, hook: InaHookState | None, n: int) -> dict[str, Any]:
    """Compare the INA-averaged gradient with gloo's average of the same local gradients."""
    assert hook is not None and hook.scale_bits, "--verify needs --allreduce ina"
    # a check, not the training path: on the host, where numpy can read it
    local, ina_mean_t = local.cpu(), ina_mean_t.cpu()
    s = min(hook.scale_bits.values())              # the coarsest bucket bounds them all
    gsum = local.clone()
    dist.all_reduce(gsum)                         # float32 SUM over gloo, as DDP's default does
    gloo_mean = (gsum / n).numpy().astype(np.float64)
    abs_sum = local.abs()
    dist.all_reduce(abs_sum)
    ina_mean = ina_mean_t.numpy().astype(np.float64)
    diff = np.abs(ina_mean - gloo_mean)
    bound = grad_error_bound(ina_mean, gloo_mean, abs_sum.numpy().astype(np.float64), n, s)
    return {"scale_bits": s, "grad_max_diff": float(diff.max()), "grad_ratio": float(np.max(diff / bound))}


def _write(path: str, rows: list[dict[str, Any]]) -> None:
    tmp = Path(path + ".tmp")
    with open(tmp, "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=CSV_FIELDS)
        wr.writeheader()
        wr.writerows(rows)
    os.replace(tmp, path)                         # a reader never sees half a file


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m training.train_digits",
        description="One worker of data-parallel training (an MLP or CNN on scikit-learn's digits) with torch DDP on a gloo "
                    "process group; gradients averaged by gloo or through the INA network. Start one process per "
                    "rank (emulation.train and training.local do that for you).")
    ap.add_argument("--rank", type=int, required=True, help="this worker's rank, 0..N-1 (= its INA worker id)")
    ap.add_argument("--world-size", type=int, required=True, help="number of workers N")
    ap.add_argument("--master", required=True, help="IP:PORT of rank 0's rendezvous (torch TCPStore)")
    ap.add_argument("--allreduce", choices=["ina", "gloo"], default="ina",
                    help="who averages the gradients: the INA network (DDP comm hook) or gloo (DDP's default)")
    ap.add_argument("--ina-job", help="INA job description (JSON, training.allreduce.InaJob); needed for ina")
    ap.add_argument("--steps", type=int, default=200, help="training steps (default 200)")
    ap.add_argument("--batch-size", type=int, default=32, help="mini-batch per worker (default 32)")
    ap.add_argument("--lr", type=float, default=0.05, help="SGD learning rate (default 0.05)")
    ap.add_argument("--momentum", type=float, default=0.9, help="SGD momentum (default 0.9)")
    ap.add_argument("--model", choices=MODELS, default="mlp",
                    help="mlp: 64-hidden-10 (4810 parameters at --hidden 64); cnn: two 3x3 convolutions "
                         "with max-pooling, then hidden-10 (6058 parameters); wide: 64-hidden-hidden-10 "
                         "(1,126,410 parameters at its default --hidden 1024)")
    ap.add_argument("--hidden", type=int, default=None,
                    help="hidden units of the last layers (default 64; wide: 1024)")
    ap.add_argument("--seed", type=int, default=0, help="weights, shards and batches (default 0)")
    ap.add_argument("--window", type=int, default=DEFAULT_WINDOW,
                    help="INA fragments awaiting a result per worker (per thread)")
    ap.add_argument("--ina-threads", type=int, default=1,
                    help="INA: threads, each sending and receiving the sub-models s with s mod threads its own "
                         "(hostlib.shards; the job needs as many sub-models to use them all; default 1)")
    ap.add_argument("--timeout", type=float, default=120.0, help="s to wait for a rendezvous or an INA round")
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    ap.add_argument("--device", choices=DEVICES, default="cpu",
                    help="where the model and batches live (default cpu); cuda: rank r on GPU r mod the GPU "
                         "count, INA buckets staged through pinned host memory; refused without CUDA")
    ap.add_argument("--verify", action="store_true",
                    help="INA: also average every step's gradients with gloo and record the deviation")
    ap.add_argument("--out", help="CSV file for the per-step log")
    ap.add_argument("--progress", action="store_true", help="progress bar (rank 0)")
    return ap


def check_args(args: argparse.Namespace) -> None:
    """ValueError (one line) for arguments that cannot work."""
    if args.hidden is None:
        args.hidden = DEFAULT_HIDDEN[args.model]
    if args.world_size < 1:
        raise ValueError(f"--world-size {args.world_size}: must be at least 1")
    if not 0 <= args.rank < args.world_size:
        raise ValueError(f"--rank {args.rank}: must be in 0..{args.world_size - 1}")
    host, _, port = args.master.rpartition(":")
    if not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--master {args.master!r}: expected IP:PORT")
    for name in ("steps", "batch_size", "hidden", "window", "threads", "ina_threads"):
        if getattr(args, name) < 1:
            raise ValueError(f"--{name.replace('_', '-')} {getattr(args, name)}: must be at least 1")
    if not args.lr > 0 or not math.isfinite(args.lr):
        raise ValueError(f"--lr {args.lr}: must be positive")
    if not 0 <= args.momentum < 1:
        raise ValueError(f"--momentum {args.momentum}: must be in [0, 1)")
    if args.timeout <= 0:
        raise ValueError(f"--timeout {args.timeout}: must be positive")
    device_for(args.device, args.rank)
    if args.allreduce == "ina":
        if not args.ina_job:
            raise ValueError("--allreduce ina needs --ina-job FILE")
        if not Path(args.ina_job).is_file():
            raise ValueError(f"--ina-job {args.ina_job}: no such file")
        n = InaJob.load(args.ina_job).n_workers
        if n != args.world_size:
            raise ValueError(f"--ina-job {args.ina_job} has {n} workers, --world-size is {args.world_size}")
    elif args.verify:
        raise ValueError("--verify compares INA with gloo: it needs --allreduce ina")


def main(argv: Sequence[str] | None = None) -> int:
    ap = parser()
    args = ap.parse_args(argv)
    try:
        check_args(args)
    except ValueError as e:
        ap.error(str(e))
    rows = train(args)
    if rows and args.rank == 0:
        print(f"rank 0: {len(rows)} steps, loss {rows[0]['loss']:.4f} -> {rows[-1]['loss']:.4f}, "
              f"{np.mean([r['seconds'] for r in rows]):.4f} s/step")
    return 0


if __name__ == "__main__":
    code = main()
    # Everything is written; skip the interpreter's teardown, where torch/gloo background
    # threads were seen to abort the process under load ("terminate called without an active
    # exception") after a complete, exact run.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
