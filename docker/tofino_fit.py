"""Does a Tofino compile fit the device? Reads the back end's pipe/logs/resources.json.

The open Tofino back end (p4c-barefoot) can finish table placement in more MAU stages than the
device has without an error, so a compile that "succeeds" is checked here: every stage a
table was placed in must exist on the target (12 on Tofino 1). Prints one line per stage
(logical tables, stateful ALUs, SRAM, map RAM and TCAM blocks), the totals, and the PHV
containers used (from phv.json beside it, when there is one), and exits 1 when the program does
not fit.

    python3 docker/tofino_fit.py OUT/pipe/logs/resources.json
"""
from __future__ import annotations

import json
import os
import sys
from collections import Counter


def main(path: str) -> int:
    with open(path) as f:
        mau = json.load(f)["resources"]["mau"]
    device_stages = mau["nStages"]
    used = 0
    totals: Counter[str] = Counter()
    for stage in mau["mau_stages"]:
        tables = [t["table_name"] for t in stage["logical_tables"]["ids"]]
        if not tables:
            continue
        used = max(used, stage["stage_number"] + 1)
        counts = {"logical tables": len(tables),
                  "stateful ALUs": len(stage["meter_alus"]["meters"]),
                  "SRAM blocks": len(stage["rams"]["srams"]),
                  "map RAMs": len(stage["map_rams"]["maprams"]),
                  "TCAM blocks": len(stage["tcams"]["tcams"])}
        totals.update(counts)
        print(f"stage {stage['stage_number']:2}: "
              + ", ".join(f"{n:2} {what}" for what, n in counts.items()))
    print("total:    " + ", ".join(f"{n} {what}" for what, n in totals.items()))
    phv_path = os.path.join(os.path.dirname(path), "phv.json")
    if os.path.exists(phv_path):
        with open(phv_path) as f:
            containers = json.load(f)["containers"]
        by_width = Counter((c["bit_width"], c["gress"]) for c in containers)
        print("PHV containers used: " + ", ".join(
            f"{w}-bit {by_width[(w, 'ingress')]} ingress + {by_width[(w, 'egress')]} egress"
            for w in (8, 16, 32)))
    verdict = "fits" if used <= device_stages else "does NOT fit"
    print(f"{used} of {device_stages} stages used: {verdict}")
    return 0 if used <= device_stages else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 docker/tofino_fit.py OUT/pipe/logs/resources.json")
    sys.exit(main(sys.argv[1]))
