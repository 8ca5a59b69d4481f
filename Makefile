# Entry points. Each target sets up what it needs (system packages, .venv) first.
PY := .venv/bin/python

.PHONY: setup lock test bench reproduce run-fattree run-training clean

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
	$(PY) -m pytest -q tests; rc=$$?; [ $$rc -eq 5 ] && exit 0 || exit $$rc

# Print the performance numbers quoted in README.md.
bench: setup
	$(PY) benchmarks/bench_p4sim.py
	$(PY) benchmarks/bench_tables.py
	$(PY) benchmarks/bench_ina.py
	$(PY) benchmarks/bench_hostlib.py

# Paper reproductions (docs/results.md): CSV, Markdown and PNG under results/.
reproduce: setup
	$(PY) -m experiments.goat_fragments
	$(PY) -m experiments.inart_rates
	$(PY) -m experiments.esa_jct
	$(PY) -m experiments.aro_study

# End-to-end emulation (root, Mininet): two jobs sharing a k=4 fat-tree of 20 p4sim switches,
# plain PS vs ATP vs ESA (preemption) vs SwitchML vs GOAT vs ARO vs InArt, plans over P4Runtime;
# results/fattree/{results.csv,rounds.csv,summary.md,fattree.png}. Other experiments:
# `python -m emulation.run --help`.
run-fattree: setup
	$(PY) -m emulation.run fattree --jobs 2 --hosts-per-edge 4 --switch-mb 0.5 --pool 32 --mb 0.25 \
	    --window 8 --rounds 4 --schemes ps,atp,esa,switchml,goat,goat-async,aro,inart --out results/fattree

# Data-parallel training through the switches (root, Mininet): an MLP on scikit-learn's digits,
# 4 workers on the k=4 fat-tree, torch DDP with the INA hook (every step checked against gloo), then
# with gloo, same seed (~1 min);
# results/training/{losses.csv,summary.md,training.png}.
run-training: setup
	$(PY) -m emulation.train --verify --out results/training

clean:
	rm -rf .venv .venv-lock build *.egg-info .pytest_cache
