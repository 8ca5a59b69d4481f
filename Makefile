# Entry points. Each target sets up what it needs (system packages, .venv) first.
PY := .venv/bin/python

.PHONY: setup lock test bench bench-hosts reproduce reproduce-emulation reproduce-twin claims run-fattree run-training clean

setup:
	@bash scripts/setup.sh

# Re-resolve requirements.lock (every Python dependency, exact versions) from pyproject.toml's
# ranges with pip-tools, upgrading to the newest versions the registries offer. Commit the result
# together with the pyproject.toml change that needed it.
PIP_TOOLS := pip-tools==7.4.1
lock:
	@test -x .venv-lock/bin/pip-compile || { python3 -m venv .venv-lock && .venv-lock/bin/pip install -q $(PIP_TOOLS); }
	CUSTOM_COMPILE_COMMAND="make lock" .venv-lock/bin/pip-compile -q --upgrade --extra test --all-build-deps \
	    --strip-extras --allow-unsafe --no-emit-index-url --no-emit-find-links --no-emit-trusted-host \
	    -o requirements.lock pyproject.toml

# Run the whole test suite.
test: setup
	$(PY) -m pytest -q -rs tests; rc=$$?; [ $$rc -eq 5 ] && exit 0 || exit $$rc

# Print the p4sim and host-agent throughput numbers of docs/performance.md.
bench: setup
	$(PY) benchmarks/bench_p4sim.py
	$(PY) benchmarks/bench_tables.py
	$(PY) benchmarks/bench_ina.py
	$(PY) benchmarks/bench_hostlib.py

# The hosts on this machine's cores and GPU (docs/performance.md, "Host agents"): the hosts alone
# against the C switch stand-in with 1, 2, 4 ... threads up to the core count (at most 8), next
# to gloo, WINDOW fragments in flight per worker thread (256: a switch pool's share of a job, and
# two GSO sends' worth); then DDP training of the 1.1M-parameter model on loopback, INA against
# gloo, on the GPU where torch sees one. `make bench-hosts THREADS=1,4 TRAIN_THREADS=4 DEVICE=cpu`
# to choose; on a machine that cannot install anything but has numpy and torch,
# `make bench-hosts PY=python3 SETUP=` skips the set-up.
THREADS ?= $(shell n=$$(nproc); t=1; s=1; while [ $$((t * 2)) -le $$n ] && [ $$t -lt 8 ]; do t=$$((t * 2)); s="$$s,$$t"; done; echo $$s)
DEVICE ?= $(shell $(PY) -c "import torch; print('cuda' if torch.cuda.is_available() else 'cpu')" 2>/dev/null || echo cpu)
TRAIN_THREADS ?= 1
WINDOW ?= 256
SETUP ?= setup
bench-hosts: $(SETUP)
	$(PY) benchmarks/bench_reflector.py --threads $(THREADS) --repeat 3 --rounds 20 --window $(WINDOW)
	$(PY) -m training.local --workers 2 --steps 30 --model wide --device $(DEVICE) --threads $(TRAIN_THREADS) \
	    --out results/training-local

# Paper reproductions (docs/results.md): CSV, Markdown and PNG under results/.
reproduce: setup
	$(PY) -m experiments.goat_fragments
	$(PY) -m experiments.inart_rates
	$(PY) -m experiments.esa_jct
	$(PY) -m experiments.aro_study

# Link rate of run-fattree and run-training: auto (a probe times this machine and picks the rate at
# which the links, not the CPU, set the pace; printed with the reason) or Mb/s, e.g.
# `make run-fattree LINK_MBPS=20`.
LINK_MBPS ?= auto

# End-to-end emulation (root, Mininet): two jobs sharing a k=4 fat-tree of 20 p4sim switches,
# plain PS vs ATP vs ESA (preemption) vs SwitchML vs GOAT vs GOAT-Async vs ARO vs InArt, plans over
# P4Runtime; results/fattree/{results.csv,rounds.csv,summary.md,fattree.png}. Other experiments:
# `python -m emulation.run --help`. Window 8, not the default 10: lossless, on a 2-core machine,
# ARO's and InArt's rounds here were 1.16-1.21x the link-rate ideal with 8 and 1.27-1.29x with 10
# (more spurious resends under CPU jitter); 10 is for lossy links (docs/emulation.md).
run-fattree: setup
	$(PY) -m emulation.run fattree --seed 4 --jobs 2 --hosts-per-edge 4 --switch-mb 0.5 --mb 0.25 \
	    --window 8 --rounds 4 --schemes ps,atp,esa,switchml,goat,goat-async,aro,inart --link-mbps $(LINK_MBPS) \
	    --out results/fattree

# The papers' headline comparisons in the emulation (root, Mininet): ESA vs ATP vs SwitchML with 2-4
# contending jobs, GOAT vs ATP, ARO and InArt vs their routing baselines; results/emulation/
# {claims.md,claims.csv,runs.csv,rounds.csv,*.png}. 35 min on the 2-core Xeon (measured);
# `make reproduce-emulation QUICK=1` about 12 min. Options: `python -m emulation.reproduce --help`.
reproduce-emulation: setup
	$(PY) -m emulation.reproduce $(if $(QUICK),--quick) --out results/emulation

# The same comparisons on the packet-level twin (simulated clock, no root), plus the settings
# too large to emulate (ESA §7.2's 64 servers). Options: `python -m emulation.reproduce --help`.
reproduce-twin: setup
	$(PY) -m emulation.reproduce $(if $(QUICK),--quick) --instrument twin --out results/twin

# One claims table from what the targets above wrote: twin | emulation | chunk-level simulator.
claims: setup
	$(PY) -m emulation.claims_table --out results/claims.md

# Data-parallel training through the switches (root, Mininet): a 1.1M-parameter MLP ("wide") on
# scikit-learn's digits, 8 workers under one programmable ToR of the k=4 fat-tree (GOAT aggregates
# there), torch DDP with the INA hook, then with gloo's ring all-reduce over the same fabric, same
# seed; prints both times per iteration, the speedup and the bound the links allow;
# results/training/{losses.csv,summary.md,training.png}.
run-training: setup
	$(PY) -m emulation.train --model wide --workers 8 --hosts-per-edge 8 --switch-mb 5 --steps 20 \
	    --link-mbps $(LINK_MBPS) --out results/training

clean:
	rm -rf .venv .venv-lock build *.egg-info .pytest_cache
