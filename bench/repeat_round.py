#!/usr/bin/env python3
"""Runs kbuf-bench's round section several times, alternating between builds, and prints each
run's figures and the ratios the targets name, per run and as the median over runs.

    python3 bench/repeat_round.py [--runs N] LABEL=PATH/TO/kbuf-bench [LABEL=PATH ...]

A shared, noisy machine moves whole runs between states (another process on the sibling
hardware thread, for example); the spread over runs shows how far a single run can be trusted.
Standard library only.
"""

import argparse
import csv
import os
import statistics
import subprocess
import sys
import tempfile

STRATEGIES = ["floor", "floor-extents", "bump", "pmr-monotonic", "kbuf", "kokkos_malloc",
              "managed-noinit", "managed"]


def run(binary, csv_path):
    subprocess.run([binary, "--sections", "round", "--csv", csv_path], check=True,
                   stdout=subprocess.DEVNULL)
    with open(csv_path, newline="") as f:
        rows = csv.DictReader(line for line in f if not line.startswith("#"))
        return {r["strategy"]: (float(r["median_ns"]), float(r["min_ns"])) for r in rows}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("builds", nargs="+", metavar="LABEL=PATH")
    a = p.parse_args()
    builds = [b.split("=", 1) for b in a.builds]
    results = {label: [] for label, _ in builds}
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(a.runs):
            for label, path in builds:
                results[label].append(run(path, os.path.join(tmp, f"{label}-{i}.csv")))
    for label, runs in results.items():
        print(f"== {label}: round of 8, ns per temporary in {len(runs)} runs "
              "(each: median | min over its samples)")
        for s in STRATEGIES:
            if s in runs[0]:
                med = " ".join(f"{r[s][0]:8.2f}" for r in runs)
                mn = " ".join(f"{r[s][1]:8.2f}" for r in runs)
                print(f"  {s:15s} {med} | {mn}")

        def ratios(num, den):
            by_median = [r[num][0] / r[den][0] for r in runs]
            by_min = [r[num][1] / r[den][1] for r in runs]
            return by_median, by_min

        for title, num, den in (("kbuf / floor", "kbuf", "floor"),
                                ("kbuf / floor-extents", "kbuf", "floor-extents"),
                                ("bump / floor", "bump", "floor"),
                                ("managed-noinit / kbuf", "managed-noinit", "kbuf"),
                                ("managed / kbuf", "managed", "kbuf")):
            md, mn = ratios(num, den)
            print(f"  {title:22s} by medians {' '.join(f'{x:6.2f}' for x in md)}"
                  f"  (median {statistics.median(md):.2f}); by minima "
                  f"{' '.join(f'{x:6.2f}' for x in mn)}  (median {statistics.median(mn):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
