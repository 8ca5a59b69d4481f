"""Starting training workers, waiting for them, and reporting INA against gloo.

Shared by :mod:`training.local` (loopback, no switch) and ``emulation.train`` (Mininet hosts,
p4sim switches): they differ only in how a process is started (``subprocess.Popen`` or a
Mininet host's ``popen``) and which addresses the workers use.
"""
from __future__ import annotations

import csv
import os
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np

MODES = ("ina", "gloo")
PNG = "training.png"


def worker_command(rank: int, world: int, master: str, mode: str, out_csv: Path, *, steps: int,
                   job_file: Path | None = None, verify: bool = False, seed: int = 0,
                   extra: Sequence[str] = ()) -> list[str]:
    """``python -m training.train_digits`` for one rank (the same interpreter as ours)."""
    cmd = [sys.executable, "-m", "training.train_digits", "--rank", str(rank), "--world-size", str(world),
           "--master", master, "--allreduce", mode, "--steps", str(steps), "--seed", str(seed),
           "--out", str(out_csv)]
    if mode == "ina":
        assert job_file is not None
        cmd += ["--ina-job", str(job_file)]
        if verify:
            cmd.append("--verify")
    return cmd + list(extra)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """A worker's CSV log (numbers parsed; empty cells None)."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    except FileNotFoundError:
        return []
    out = []
    for r in rows:
        out.append({k: (None if v == "" else (int(v) if k in ("step", "scale_bits") else float(v)))
                    for k, v in r.items()})
    return out


def wait_workers(procs: Mapping[str, Any], logs: Mapping[str, Path], timeout: float, *,
                 progress_csv: Path | None = None, progress: Callable[[int], None] | None = None) -> None:
    """Wait until every process exits; RuntimeError (with the failing one's log tail) if one
    exits non-zero or ``timeout`` s pass. ``progress(n)`` gets newly logged steps of
    ``progress_csv``."""
    deadline = time.time() + timeout
    shown = 0
    while True:
        codes = {name: p.poll() for name, p in procs.items()}
        bad = [name for name, c in codes.items() if c not in (None, 0)]
        if bad:
            name = bad[0]
            raise RuntimeError(f"worker {name} exited with {codes[name]}: {_tail(logs[name])}")
        if progress is not None and progress_csv is not None:
            n = _lines(progress_csv)
            if n > shown:
                progress(n - shown)
                shown = n
        if all(c == 0 for c in codes.values()):
            return
        if time.time() > deadline:
            running = [n for n, c in codes.items() if c is None]
            raise RuntimeError(f"workers {', '.join(running)} still running after {timeout:g} s: "
                               f"{_tail(logs[running[0]])}")
        time.sleep(0.1)


def _lines(path: Path) -> int:
    try:
        return max(0, len(path.read_text().splitlines()) - 1)
    except OSError:
        return 0


def _tail(path: Path, n: int = 1500) -> str:
    try:
        return path.read_text(errors="replace")[-n:].strip()
    except OSError:
        return "(no log)"


# ---------------------------------------------------------------------- report
def merge(per_rank: Mapping[str, Sequence[Sequence[Mapping[str, Any]]]]) -> list[dict[str, Any]]:
    """losses.csv rows: per step, each mode's loss (rank 0's: every rank computes the same),
    its step time (the slowest rank's: the step ends for all when the last one has its
    average), and INA's gradient check (the worst rank's) if it was run."""
    steps = min(len(ranks[0]) for ranks in per_rank.values())
    rows = []
    for i in range(steps):
        row: dict[str, Any] = {"step": i}
        for mode, ranks in per_rank.items():
            row[f"loss_{mode}"] = ranks[0][i]["loss"]
            row[f"seconds_{mode}"] = max(r[i]["seconds"] for r in ranks)
        if "ina" in per_rank and per_rank["ina"][0][i].get("grad_ratio") is not None:
            row["grad_ratio_ina"] = max(r[i]["grad_ratio"] for r in per_rank["ina"])
            row["grad_max_diff_ina"] = max(r[i]["grad_max_diff"] for r in per_rank["ina"])
            row["scale_bits_ina"] = min(r[i]["scale_bits"] for r in per_rank["ina"])
        if "ina" in per_rank and "gloo" in per_rank:
            row["loss_diff"] = abs(row["loss_ina"] - row["loss_gloo"])
            # in units of the float32 spacing at the loss: 0 = same float, 1 = neighbouring floats
            row["loss_diff_ulps"] = row["loss_diff"] / float(np.spacing(np.float32(row["loss_gloo"])))
        rows.append(row)
    return rows


def summary(rows: Sequence[Mapping[str, Any]], *, skip: int = 1) -> dict[str, Any]:
    """Mean time per iteration per mode (the first ``skip`` steps left out: DDP builds its
    buckets and sockets warm up there), max |loss_ina - loss_gloo|, final losses."""
    out: dict[str, Any] = {"steps": len(rows)}
    timed = rows[skip:] if len(rows) > skip else rows
    for mode in MODES:
        if rows and f"loss_{mode}" in rows[0]:
            secs = sorted(r[f"seconds_{mode}"] for r in timed)
            out[f"{mode}_s_per_iter"] = sum(secs) / len(secs)
            out[f"{mode}_median_s_per_iter"] = secs[len(secs) // 2]
            out[f"{mode}_first_loss"] = rows[0][f"loss_{mode}"]
            out[f"{mode}_final_loss"] = rows[-1][f"loss_{mode}"]
    if rows and "loss_diff" in rows[0]:
        out["max_loss_diff"] = max(r["loss_diff"] for r in rows)
        out["max_loss_diff_ulps"] = max(r["loss_diff_ulps"] for r in rows)
        out["equal_loss_steps"] = sum(r["loss_diff"] == 0 for r in rows)
    if rows and "grad_ratio_ina" in rows[0]:
        out["max_grad_ratio"] = max(r["grad_ratio_ina"] for r in rows)
        out["max_grad_diff"] = max(r["grad_max_diff_ina"] for r in rows)
        out["min_scale_bits"] = min(r["scale_bits_ina"] for r in rows)
    return out


def write_report(out: Path, rows: Sequence[Mapping[str, Any]], *, title: str, setup: str,
                 notes: Sequence[str] = (), bound: float | None = None) -> dict[str, Any]:
    """losses.csv, training.png (both loss curves, their difference, time per step) and
    summary.md under ``out`` (with ``notes`` as a list, and INA's speedup over gloo per
    iteration next to ``bound``, the speedup the links allow); returns :func:`summary`."""
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "losses.csv", "w", newline="") as f:
        wr = csv.DictWriter(f, fieldnames=list(rows[0]))
        wr.writeheader()
        wr.writerows(rows)
    s = summary(rows)
    lines = [f"# {title}", "", setup, "", "| | INA | gloo |", "|---|---|---|"]
    def cell(key: str, fmt: str) -> str:
        return format(s[key], fmt) if key in s else "—"
    lines += [f"| time per iteration, mean (s) | {cell('ina_s_per_iter', '.4f')} | {cell('gloo_s_per_iter', '.4f')} |",
              f"| time per iteration, median (s) | {cell('ina_median_s_per_iter', '.4f')} | "
              f"{cell('gloo_median_s_per_iter', '.4f')} |",
              f"| loss at step 0 | {cell('ina_first_loss', '.5f')} | {cell('gloo_first_loss', '.5f')} |",
              f"| loss at the last step | {cell('ina_final_loss', '.5f')} | {cell('gloo_final_loss', '.5f')} |", ""]
    if "ina_s_per_iter" in s and "gloo_s_per_iter" in s:
        s["speedup"] = s["gloo_s_per_iter"] / s["ina_s_per_iter"]
        s["median_speedup"] = s["gloo_median_s_per_iter"] / s["ina_median_s_per_iter"]
        lines.append(f"INA per iteration: {s['speedup']:.2f}× gloo's speed (mean; median {s['median_speedup']:.2f}×)"
                     + (f", of at most {bound:.2f}× the links allow (below)" if bound else "") + ".")
        lines.append("")
    if notes:
        lines += [f"* {n}" for n in notes] + [""]
    if "max_loss_diff" in s:
        lines.append(f"max |loss_ina - loss_gloo| over {s['steps']} steps: {s['max_loss_diff']:.3g} "
                     f"({s['max_loss_diff_ulps']:.3g} float32 spacings of the loss; identical floats at "
                     f"{s['equal_loss_steps']} of {s['steps']} steps)")
    if "max_grad_ratio" in s:
        lines.append(f"gradient check (every step, every rank: INA mean vs gloo's mean of the same local "
                     f"gradients): max |diff| {s['max_grad_diff']:.3g}, at most {s['max_grad_ratio']:.3g} × "
                     f"the rounding bound (<= 1 passes), fixed point with >= {s['min_scale_bits']} fractional bits")
    lines += ["", "Time per iteration: forward, backward with gradient averaging, optimizer step; the slowest "
              "rank per step, step 0 (DDP bucket set-up) left out. Loss: cross-entropy over all 1797 digits at "
              "the step's weights (before its update).", ""]
    (out / "summary.md").write_text("\n".join(lines))
    _plot(out / PNG, rows, title)
    return s


def _draw_modes(loss_ax: Any, time_ax: Any, rows: Sequence[Mapping[str, Any]], *, job: str = "",
                color: str | None = None) -> None:
    """Each mode's loss and time per iteration (gloo solid, INA dashed) from :func:`merge` rows."""
    steps = [r["step"] for r in rows]
    for mode, style in (("gloo", "-"), ("ina", "--")):
        if rows and f"loss_{mode}" in rows[0]:
            label = f"{job} {'INA' if mode == 'ina' else mode}".strip()
            loss_ax.plot(steps, [r[f"loss_{mode}"] for r in rows], style, color=color, label=label)
            time_ax.plot(steps, [r[f"seconds_{mode}"] for r in rows], style, color=color, label=label)
    loss_ax.set(title="training loss (all digits)", xlabel="step", yscale="log")
    time_ax.set(title="time per iteration (s)", xlabel="step")


def _save(fig: Any, path: Path, title: str) -> None:
    import matplotlib.pyplot as plt
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _pyplot() -> Any:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def _plot(path: Path, rows: Sequence[Mapping[str, Any]], title: str) -> None:
    fig, axes = _pyplot().subplots(1, 3, figsize=(14, 3.8))
    _draw_modes(axes[0], axes[2], rows)
    if "loss_diff" in rows[0]:
        # in float32 spacings of the loss: the curves differ by whole rounding steps, if at all
        axes[1].plot([r["step"] for r in rows], [r["loss_diff_ulps"] for r in rows], ".", color="C2", markersize=3)
        axes[1].set(title="|loss INA − loss gloo| in float32 ulps of the loss", xlabel="step")
    else:
        axes[1].set_visible(False)
    for ax in (axes[0], axes[2]):
        ax.legend()
    _save(fig, path, title)


def plot_jobs(path: Path, rows_by_job: Mapping[str, Sequence[Mapping[str, Any]]], title: str) -> None:
    """Several jobs trained at once: each job's loss curves and time per iteration (one colour
    per job), from their :func:`merge` rows."""
    fig, axes = _pyplot().subplots(1, 2, figsize=(11, 3.8))
    for k, (job, rows) in enumerate(rows_by_job.items()):
        _draw_modes(axes[0], axes[1], rows, job=job, color=f"C{k}")
    for ax in axes:
        ax.legend(fontsize=8)
    _save(fig, path, title)


def machine(device: str = "cpu") -> str:
    """A one-line description of where this ran (CPU model and count, OS, the GPU when
    ``device`` is ``cuda``), for summaries."""
    try:
        pretty = next(l.split("=", 1)[1].strip('"\n') for l in open("/etc/os-release") if l.startswith("PRETTY_NAME="))
    except (OSError, StopIteration):
        pretty = sys.platform
    where = "CPU only" if device == "cpu" else _gpu_model()
    return f"{pretty}, {_cpu_model()}, {os.cpu_count()} CPU cores, {where} (torch {_torch_version()})"


def _gpu_model() -> str:
    import torch
    n = torch.cuda.device_count()
    return f"{n} × {torch.cuda.get_device_name(0)}" if n else "no GPU"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as f:
            return next(" ".join(l.split(":", 1)[1].split()) for l in f if l.startswith("model name"))
    except (OSError, StopIteration):
        return "unknown CPU"


def _torch_version() -> str:
    import torch
    return torch.__version__

