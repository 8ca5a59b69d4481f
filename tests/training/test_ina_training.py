"""training/: INA all-reduce and the DDP hook over loopback UDP (no switch: the PS aggregates),
checked against exact sums and against gloo's all-reduce of the same gradients."""
from __future__ import annotations

import math
import threading
from pathlib import Path

import numpy as np
import pytest

from hostlib.protocol import INT32_MAX, encode_lanes
from training.allreduce import (EXP_MAX, EXP_MIN, GradientRangeError, InaAllReduce, InaJob, scale_bits_for,
                                serve_ps, sum_error_bound)
from training.local import loopback_job, run_mode

from loopback import require_loopback_udp

U32 = 2.0 ** -24


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5, 8, 17, 32])
def test_the_chosen_scale_cannot_overflow_int32(n: int) -> None:
    """Worst case for every exponent: all N workers send the largest magnitude below 2^e (which
    rounds up to 2^(e+s)); the encodings and their sum stay within int32."""
    for e in range(EXP_MIN, EXP_MAX + 1, 7):
        s = scale_bits_for(e, n)
        top = math.nextafter(2.0 ** e, 0.0)
        lanes = encode_lanes(np.array([top, -top]) * 2.0 ** min(s, 0), max(s, 0), lanes=2)
        assert abs(int(lanes[0])) == abs(int(lanes[1])) <= 2 ** (e + s)
        assert n * abs(int(lanes[0])) <= 2 ** 30 < INT32_MAX
        # and no finer scale has that guarantee: one more bit and N values of 2^(e+s+1) pass 2^30
        assert n * 2 ** (e + s + 1) > 2 ** 30


@pytest.fixture
def loopback3():
    job = loopback_job(3)
    stop, ready = threading.Event(), threading.Event()
    ps = threading.Thread(target=serve_ps, args=(job, stop.is_set), kwargs={"on_ready": ready.set, "timeout": 60})
    require_loopback_udp(job.ps_ip, *(ip for ip, _ in job.workers))
    ars = [InaAllReduce(job, w, timeout=10) for w in range(3)]
    ps.start()
    assert ready.wait(10)
    try:
        yield job, ars
    finally:
        stop.set()
        ps.join(10)
        for a in ars:
            a.close()


def _collective(ars: list[InaAllReduce], vectors: list[list[np.ndarray]]) -> list[list[object]]:
    """Each worker's calls in its own thread (a collective needs them all at once); per worker
    per call: (result, scale bits) or the exception it raised."""
    out: list[list[object]] = [[] for _ in ars]

    def run(w: int) -> None:
        for v in vectors[w]:
            try:
                out[w].append((ars[w].allreduce(v), ars[w].last_scale_bits))
            except Exception as e:            # recorded: the test checks every worker raised
                out[w].append(e)
    threads = [threading.Thread(target=run, args=(w,)) for w in range(len(ars))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return out


def test_allreduce_is_the_exact_sum_within_the_fixed_point_bound(loopback3) -> None:
    job, ars = loopback3
    rng = np.random.default_rng(1)
    # tiny, gradient-like, large and enormous magnitudes (the last needs a negative scale),
    # an all-zero vector, and lengths that leave some sub-models empty
    mags = [1e-30, 1e-3, 1.0, 1e5, 1e12]
    vectors = [[rng.normal(0, m, 3000).astype(np.float32) for m in mags] + [np.zeros(5, np.float32)]
               for _ in range(3)]
    out = _collective(ars, vectors)
    for k in range(len(vectors[0])):
        exact = sum(v[k].astype(np.float64) for v in vectors)
        for w in range(3):
            res, s = out[w][k]
            assert res.dtype == np.float32 and res.shape == exact.shape
            # fixed-point rounding of the sum, then one float32 cast
            bound = sum_error_bound(3, s) + U32 * np.abs(exact) * (1 + U32)
            assert np.all(np.abs(res - exact) <= bound), (k, w, s)
            assert np.array_equal(res, out[0][k][0])          # every worker holds the same sum
    assert [o[1] for o in out[0][:5]] == sorted([o[1] for o in out[0][:5]], reverse=True)
    assert out[0][4][1] < 0                                     # 1e12 * 3 needs a negative scale
    assert ars[0].stats.rounds == 2 * len(mags) + 2 and ars[0].stats.redone == 0
    assert ars[0].stats.last_round == ars[0].stats.rounds - 1           # rounds from 0
    assert [c[2] for c in ars[0].stats.per_call] == [3000] * len(mags) + [5]


def test_a_job_run_again_continues_its_round_numbers() -> None:
    job = loopback_job(2)
    job.first_round = 41                      # past what an earlier run left on the switches
    stop, ready = threading.Event(), threading.Event()
    ps = threading.Thread(target=serve_ps, args=(job, stop.is_set), kwargs={"on_ready": ready.set, "timeout": 60})
    ars = [InaAllReduce(job, w, timeout=10) for w in range(2)]
    ps.start()
    assert ready.wait(10)
    try:
        out = _collective(ars, [[np.full(50, w + 1.0, np.float32)] * 2 for w in range(2)])
        assert all(np.array_equal(r[0], np.full(50, 3.0, np.float32)) for row in out for r in row)
        assert [a.worker.round for a in ars] == [44, 44] and ars[0].stats.last_round == 44
    finally:
        stop.set()
        ps.join(10)
        for a in ars:
            a.close()


def test_a_non_finite_gradient_fails_the_call_on_every_worker_and_the_next_call_works(loopback3) -> None:
    job, ars = loopback3
    good = [np.full(100, w + 1.0, np.float32) for w in range(3)]
    bad = [g.copy() for g in good]
    bad[1][7] = np.inf
    out = _collective(ars, [[bad[w], good[w]] for w in range(3)])
    for w in range(3):
        assert isinstance(out[w][0], GradientRangeError)         # all of them, not just worker 1
        res, _ = out[w][1]
        assert np.array_equal(res, np.full(100, 6.0, np.float32))


@pytest.mark.parametrize("threads", [1, 2])
def test_ddp_hook_gradients_match_gloo_for_two_workers(tmp_path: Path, threads: int) -> None:
    """torch DDP on a gloo process group, 2 worker processes, the INA hook averaging every
    bucket: at every step each rank also averages its own local gradient with gloo, and the INA
    mean must be within the rounding bound of it (``grad_ratio`` <= 1, see
    training.train_digits.grad_error_bound). Then the same training with gloo's all-reduce:
    same initial loss, the same weights' trajectory up to that rounding. With 2 threads every
    worker and the PS shard the job's two sub-models over two sockets (hostlib.shards)."""
    job = loopback_job(2, threads)
    steps = 4
    ina = run_mode("ina", job, tmp_path, steps=steps, verify=True, timeout=120, threads=threads)
    gloo = run_mode("gloo", job, tmp_path, steps=steps, timeout=120)
    for ranks in (ina, gloo):
        assert [len(r) for r in ranks] == [steps, steps]
    for r in range(2):
        for row in ina[r]:
            assert 0 <= row["grad_ratio"] <= 1.0, row
            assert row["scale_bits"] >= 20                    # digits' gradients are far below 2^10
    _same_training_as_gloo(ina, gloo)


LOSS_RTOL = 1e-4     # a few steps of ~2^-20 relative gradient differences stay far below this


def _same_training_as_gloo(ina: list[list[dict]], gloo: list[list[dict]]) -> None:
    # both ranks applied the same averaged gradient: identical weights, identical full loss
    assert [x["loss"] for x in ina[0]] == [x["loss"] for x in ina[1]]
    assert ina[0][0]["loss"] == gloo[0][0]["loss"]             # same seed, same initial weights
    for a, b in zip(ina[0], gloo[0], strict=True):             # the same trajectory, up to rounding
        assert a["loss"] == pytest.approx(b["loss"], rel=LOSS_RTOL), (a, b)
    # training happened, in both modes
    assert ina[0][-1]["loss"] < ina[0][0]["loss"] and gloo[0][-1]["loss"] < gloo[0][0]["loss"]


def _cuda_absent() -> bool:
    import torch
    return not torch.cuda.is_available()


@pytest.mark.skipif(_cuda_absent(), reason="CUDA not available")
def test_ddp_hook_on_cuda_matches_gloo_for_two_workers(tmp_path: Path) -> None:
    """--device cuda: the same check as on the CPU, with the buckets on the GPU (staged through
    pinned host memory by the hook; both ranks share GPU 0 when there is one)."""
    job = loopback_job(2)
    steps = 4
    extra = ["--device", "cuda"]
    ina = run_mode("ina", job, tmp_path, steps=steps, verify=True, timeout=180, extra=extra)
    gloo = run_mode("gloo", job, tmp_path, steps=steps, timeout=180, extra=extra)
    for ranks in (ina, gloo):
        assert [len(r) for r in ranks] == [steps, steps]
    assert all(0 <= row["grad_ratio"] <= 1.0 and row["scale_bits"] >= 20 for r in ina for row in r)
    _same_training_as_gloo(ina, gloo)


def test_device_cuda_is_refused_in_one_line_without_cuda(capsys, monkeypatch) -> None:
    """Without a usable GPU, --device cuda stops before any process group or socket exists."""
    import torch

    from training.local import main as local_main
    from training.train_digits import device_for, main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit) as e:
        main(["--rank", "0", "--world-size", "1", "--master", "127.0.0.1:1", "--allreduce", "gloo",
              "--device", "cuda"])
    assert e.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--device cuda: CUDA is not available here" in err and "use --device cpu" in err
    with pytest.raises(SystemExit) as e:
        local_main(["--device", "cuda", "--quiet"])
    assert e.value.code == 2 and "CUDA is not available" in capsys.readouterr().err
    assert device_for("cpu", 3) == torch.device("cpu")


def test_pinned_pool_reuses_one_buffer_per_size_and_never_lends_one_twice() -> None:
    """The hook's staging buffers for CUDA buckets (bookkeeping only: pin=False needs no GPU):
    steady state allocates nothing; two buckets of one size in flight get two buffers."""
    import torch

    from training.ddp_hook import PinnedPool

    pool = PinnedPool(pin=False)
    for _ in range(3):                                   # three steps of buckets 0 and 1
        a, b = pool.acquire(100, torch.float32), pool.acquire(7, torch.float32)
        assert a.shape == (100,) and b.shape == (7,)
        pool.release(a)
        pool.release(b)
    assert pool.allocated == 2
    a, b = pool.acquire(100, torch.float32), pool.acquire(100, torch.float32)
    assert a.data_ptr() != b.data_ptr() and pool.allocated == 3
    pool.release(a)
    pool.release(b)
    assert pool.acquire(100, torch.float64).dtype == torch.float64 and pool.allocated == 4


def test_allreduce_into_out_is_the_same_as_a_new_array(loopback3) -> None:
    """``out=values``: the hook's in-place mean of a staging buffer, bit for bit the returned one."""
    job, ars = loopback3
    rng = np.random.default_rng(3)
    base = [rng.normal(0, 1e-2, 1000).astype(np.float32) for _ in range(3)]
    inplace = [b.copy() for b in base]
    out: list[list[object]] = [[] for _ in ars]

    def run(w: int) -> None:
        out[w].append(ars[w].allreduce(base[w], average=True))
        out[w].append(ars[w].allreduce(inplace[w], average=True, out=inplace[w]))
    threads = [threading.Thread(target=run, args=(w,)) for w in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for w in range(3):
        assert out[w][1] is inplace[w] and np.array_equal(out[w][0], inplace[w])
    with pytest.raises(ValueError, match="contiguous float32 of the same size"):
        ars[0].allreduce(base[0], out=np.zeros(999, np.float32))


def test_train_digits_rejects_bad_arguments_in_one_line(capsys) -> None:
    from training.train_digits import main
    with pytest.raises(SystemExit) as e:
        main(["--rank", "2", "--world-size", "2", "--master", "127.0.0.1:1", "--allreduce", "gloo"])
    assert e.value.code == 2
    assert "--rank 2: must be in 0..1" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--rank", "0", "--world-size", "2", "--master", "127.0.0.1:1", "--allreduce", "ina"])
    assert "--allreduce ina needs --ina-job FILE" in capsys.readouterr().err


def test_job_description_round_trips_through_json(tmp_path: Path) -> None:
    job = InaJob.loopback(3, "127.0.99")
    job.reminder_via = {5: "10.0.0.3"}
    job.submodel_nodes = {0: [5]}
    job.result_via, job.node_workers, job.first_round = 5, {5: [0, 2]}, 40
    job.save(tmp_path / "job.json")
    again = InaJob.load(tmp_path / "job.json")
    assert again == job and again.job_config().node_workers == {5: [0, 2]}
    assert job.split(10) == [10] and InaJob(1, "x", job.workers, [[l[0]] * 3 for l in job.labels],
                                           [1, 2, 1]).split(8) == [2, 4, 2]


def test_cnn_trains_through_the_ina_hook_like_gloo(tmp_path: Path) -> None:
    """--model cnn: convolution gradients go through the same hook; 2 workers, a few steps,
    the INA mean within its rounding bound of gloo's at every step, and the loss falls."""
    from training.train_digits import ModelSpec

    spec = ModelSpec("cnn")
    assert spec.n_parameters == sum(p.numel() for p in spec.build(0).parameters()) == 6058
    assert ModelSpec("mlp").n_parameters == sum(p.numel() for p in ModelSpec("mlp").build(0).parameters()) == 4810
    job = loopback_job(2)
    rows = run_mode("ina", job, tmp_path, steps=5, verify=True, timeout=120, extra=spec.cli_args())
    assert [len(r) for r in rows] == [5, 5]
    assert all(0 <= row["grad_ratio"] <= 1.0 for r in rows for row in r)
    assert [x["loss"] for x in rows[0]] == [x["loss"] for x in rows[1]]
    assert rows[0][-1]["loss"] < rows[0][0]["loss"]


def test_emulation_train_command_line_checks_jobs_and_models(capsys: pytest.CaptureFixture[str]) -> None:
    """emulation.train: --model gives each job its model (one kind for all, or one per job),
    jobs are sized for their models' gradients, and arguments that cannot work stop with a
    one-line error before any network is built."""
    from emulation.train import main, parse_models, setup
    from training.train_digits import ModelSpec

    assert parse_models("mlp,cnn", 32, None) == [ModelSpec("mlp", 32), ModelSpec("cnn", 32)]
    assert parse_models("cnn", 64, 3) == [ModelSpec("cnn")] * 3
    models = parse_models("mlp,cnn", 64, None)
    topo, jobs = setup(2, models=models, k=2, hosts_per_edge=3, switch_mb=1)
    assert [j.job_id for j in jobs] == [1, 2] and not set(jobs[0].workers) & set(jobs[1].workers)
    assert [round(sum(s.size_mb for s in j.submodels) * 1e6 / 4) for j in jobs] == [4810, 6058]
    assert all(topo.nodes[s].memory_bytes == 10 ** 6 for s in topo.programmable_switches())
    for argv, message in ((["--model", "mlp,rnn"], "each one of mlp, cnn"),
                          (["--jobs", "3", "--model", "mlp,cnn"], "2 models for 3 jobs"),
                          (["--jobs", "0"], "--jobs 0: must be at least 1"),
                          (["--pool", "100"], "--pool 100: a power of two"),
                          (["--switch-mb", "0"], "--switch-mb 0: must be positive"),
                          (["--jobs", "5", "--workers", "4"], "do not fit on the 16 hosts")):
        with pytest.raises(SystemExit) as exit_info:
            main(argv)
        assert exit_info.value.code == 2
        assert message in capsys.readouterr().err, argv


def test_several_jobs_plot_in_one_png(tmp_path: Path) -> None:
    """emulation.train's overview for several jobs: each job's merged rows (both modes) drawn
    into one PNG."""
    from training.launch import merge, plot_jobs

    def ranks(loss0: float) -> list[list[dict[str, float]]]:
        return [[{"step": i, "loss": loss0 / (i + 1), "seconds": 0.01 * (r + 1)} for i in range(4)] for r in range(2)]

    rows = {f"job{k}": merge({"ina": ranks(2.0 + k), "gloo": ranks(2.0 + k)}) for k in (1, 2)}
    assert [r["loss_diff"] for r in rows["job1"]] == [0.0] * 4
    plot_jobs(tmp_path / "jobs.png", rows, "two jobs")
    assert (tmp_path / "jobs.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
