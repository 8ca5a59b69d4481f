"""Does a Tofino compile fit the device? Reads the back end's pipe/logs/resources.json.

The open Tofino back end (p4c-barefoot) can finish table placement in more MAU stages than the
device has without an error, so a compile that "succeeds" is checked here: every stage a
table was placed in must exist on the target (12 on Tofino 1). Prints one line per stage
(logical tables, stateful ALUs, TCAM blocks) and exits 1 when the program does not fit.

    python3 docker/tofino_fit.py OUT/pipe/logs/resources.json
"""
from __future__ import annotations

import json
import sys


def main(path: str) -> int:
    with open(path) as f:
        mau = json.load(f)["resources"]["mau"]
    device_stages = mau["nStages"]
    used = 0
    for stage in mau["mau_stages"]:
        tables = [t["table_name"] for t in stage["logical_tables"]["ids"]]
        if not tables:
            continue
        used = max(used, stage["stage_number"] + 1)
        print(f"stage {stage['stage_number']:2}: {len(tables):2} logical tables, "
              f"{len(stage['meter_alus']['meters'])} stateful ALUs, "
              f"{len(stage['tcams']['tcams']):2} TCAM blocks")
    verdict = "fits" if used <= device_stages else "does NOT fit"
    print(f"{used} of {device_stages} stages used: {verdict}")
    return 0 if used <= device_stages else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 docker/tofino_fit.py OUT/pipe/logs/resources.json")
    sys.exit(main(sys.argv[1]))
