#!/usr/bin/env bash
# Cross-check this project's P4 programs and p4sim against the real toolchain:
#   1. every program compiles with p4c (bmv2 v1model backend) and p4sim's P4Info ids agree
#      with p4c's for every table, action, register and counter;
#   2. every STF test of tests/p4 passes on bmv2 simple_switch with p4c's own driver;
#   3. with an Intel SDE in $SDE, the TNA program compiles with bf-p4c.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
out=build/p4c
mkdir -p "$out"

programs=(p4src/v1model/ina.p4 benchmarks/p4/l3_router.p4 benchmarks/p4/registers64.p4 tests/p4/*.p4)
for p in "${programs[@]}"; do
    name=$(basename "$p" .p4)
    p4c-bm2-ss --arch v1model -o "$out/$name.json" --p4runtime-files "$out/$name.p4info.txt" "$p"
    $PY -m p4sim p4info "$p" --format text -o "$out/$name.p4sim.p4info.txt"
    $PY - "$out/$name.p4info.txt" "$out/$name.p4sim.p4info.txt" <<'PYEOF'
import re, sys
def ids(path):
    text = open(path).read()
    return dict(re.findall(r'preamble \{\s*id: (\d+)\s*name: "([^"]+)"', text)[::1])
a, b = ids(sys.argv[1]), ids(sys.argv[2])
a = {v: k for k, v in a.items()}; b = {v: k for k, v in b.items()}
diff = {n: (a.get(n), b.get(n)) for n in set(a) | set(b) if a.get(n) != b.get(n)}
print(sys.argv[1], "ids agree" if not diff else f"id differences: {diff}")
sys.exit(1 if diff else 0)
PYEOF
done

if [ -d /p4c/backends/bmv2 ]; then
    for stf in tests/p4/*.stf; do
        python3 /p4c/backends/bmv2/run-bmv2-test.py /p4c "${stf%.stf}.p4" || echo "FAILED on bmv2: $stf"
    done
fi

if [ -n "${SDE:-}" ] && command -v bf-p4c >/dev/null; then
    bf-p4c --target tofino --arch tna -o "$out/tna" p4src/tna/ina.p4
    echo "bf-p4c: p4src/tna/ina.p4 compiled; resources in $out/tna"
fi
