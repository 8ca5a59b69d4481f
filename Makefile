# Entry points. Each target sets up what it needs (system packages, .venv) first.
PY := .venv/bin/python

.PHONY: setup test bench reproduce run-fattree clean

setup:
	@bash scripts/setup.sh

# Run the whole test suite.
test: setup
	$(PY) -m pytest -q tests; rc=$$?; [ $$rc -eq 5 ] && exit 0 || exit $$rc

# Print the performance numbers quoted in README.md.
bench: setup
	$(PY) benchmarks/bench_p4sim.py
	$(PY) benchmarks/bench_tables.py
	$(PY) benchmarks/bench_ina.py

# Paper reproductions (docs/results.md): CSV, Markdown and PNG under results/.
reproduce: setup
	$(PY) -m experiments.goat_fragments
	$(PY) -m experiments.inart_rates
	$(PY) -m experiments.esa_jct
	$(PY) -m experiments.aro_study

# End-to-end emulation (root, Mininet): GOAT vs ATP on a k=4 fat-tree of p4sim switches,
# plans installed over P4Runtime; results/fattree/{results.csv,summary.md,fattree.png}.
run-fattree: setup
	$(PY) -m emulation.run fattree --out results/fattree

clean:
	rm -rf .venv build *.egg-info .pytest_cache
