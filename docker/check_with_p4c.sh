#!/usr/bin/env bash
# Cross-check this project's P4 programs and p4sim against the real toolchain:
#   1. every v1model program (p4src, benchmarks, tests) compiles with p4c (bmv2 backend), and
#      p4sim's P4Info agrees with p4c's entity by entity (ids, names, aliases, parameters, match
#      fields...); p4c's P4Info of the INA program is kept as p4src/v1model/ina.p4info.txtpb,
#      which tests/test_p4info.py then compares on every run;
#   2. every STF test of tests/p4 that uses no p4sim extension passes on bmv2 simple_switch
#      with p4c's own driver (files starting "# p4sim-stf-extensions:" are listed and skipped:
#      p4sim/stf/README.md);
#   3. with an Intel SDE in $SDE (bf-p4c), or the open Tofino back end of p4lang/p4c
#      (p4c-barefoot) on PATH, the TNA programs compile, and the bf-rt.json p4sim serves
#      (python -m p4sim bfrt-json) agrees with the one the compiler writes; the INA program's
#      is kept as p4src/tna/ina.bf-rt.json, which tests/bfrt/test_bfrt.py compares on every run
#      (the schema is written even when table placement fails); with the open assembler (bfas)
#      on PATH too, each compiled TNA program is assembled into its device binary.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
out=build/p4c
mkdir -p "$out"
failed=0

programs=(p4src/v1model/ina.p4 benchmarks/p4/l3_router.p4 benchmarks/p4/registers64.p4
          tests/p4/*.p4 tests/p4misc/*.p4 tests/p4rt/*.p4 tests/p4serve/*.p4)
for p in "${programs[@]}"; do
    name=$(basename "$p" .p4)
    if ! p4c-bm2-ss --arch v1model -o "$out/$name.json" --p4runtime-files "$out/$name.p4info.txtpb" "$p"; then
        echo "FAILED with p4c: $p"; failed=1; continue
    fi
    if [ "$p" = p4src/v1model/ina.p4 ]; then
        cp "$out/$name.p4info.txtpb" p4src/v1model/ina.p4info.txtpb
    fi
    # one line per differing entity; exit status 1 when there is any
    $PY -m p4sim p4info "$p" --compare "$out/$name.p4info.txtpb" || failed=1
done

if [ -d /p4c/backends/bmv2 ]; then
    for stf in tests/p4/*.stf; do
        if head -n 1 "$stf" | grep -q '^#[[:space:]]*p4sim-stf-extensions'; then
            echo "skipped (p4sim STF extensions: $(head -n 1 "$stf" | cut -d: -f2-)): $stf"
            continue
        fi
        python3 /p4c/backends/bmv2/run-bmv2-test.py /p4c "${stf%.stf}.p4" \
            || { echo "FAILED on bmv2: $stf"; failed=1; }
    done
fi

tofino_cc=""
if [ -n "${SDE:-}" ] && command -v bf-p4c >/dev/null; then
    tofino_cc=bf-p4c
elif command -v p4c-barefoot >/dev/null; then
    tofino_cc=p4c-barefoot
fi
if [ -n "$tofino_cc" ]; then
    for p in p4src/tna/ina.p4 tests/p4tna/*.p4; do
        name=$(basename "$p" .p4)
        mkdir -p "$out/tna-$name"
        $tofino_cc --target tofino --arch tna -g -o "$out/tna-$name" \
                --bf-rt-schema "$out/tna-$name/bf-rt.json" "$p" \
            && echo "$tofino_cc: $p compiled; resources in $out/tna-$name" \
            || { echo "FAILED with $tofino_cc: $p"; failed=1; }
        # the open back end may place into more stages than Tofino 1 has without an error
        resources="$out/tna-$name/pipe/logs/resources.json"
        if [ -s "$resources" ]; then
            python3 docker/tofino_fit.py "$resources" || { echo "DOES NOT FIT: $p"; failed=1; }
        fi
        # the open assembler (built with the back end) turns the .bfa into the device binary;
        # it refuses what the back end lets through (e.g. a stateful ALU driving more constants
        # than it has ALUs, a constant it cannot hold)
        bfa="$out/tna-$name/pipe/$name.bfa"
        if [ -s "$bfa" ] && command -v bfas >/dev/null; then
            bfas --target tofino -o "$out/tna-$name/pipe" "$bfa" \
                && echo "bfas: $p assembled ($out/tna-$name/pipe/tofino.bin)" \
                || { echo "FAILED with bfas: $p"; failed=1; }
        fi
        # p4sim's BfRuntime schema against the compiler's (names, keys, actions, data; not ids)
        bfrt="$out/tna-$name/bf-rt.json"
        if [ -s "$bfrt" ]; then
            if [ "$p" = p4src/tna/ina.p4 ]; then
                cp "$bfrt" p4src/tna/ina.bf-rt.json
            fi
            $PY -m p4sim bfrt-json "$p" --compare "$bfrt" || failed=1
        fi
    done
fi
exit $failed
