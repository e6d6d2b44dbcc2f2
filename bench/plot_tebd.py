#!/usr/bin/env python3
"""Plots of kbuf-tebd runs (bench/results/tebd/):

  tebd-error.png   the error of the ground-state energy per site against chi, for each model
                   (relative error |e - e0| / |e0|), from the --csv files of the runs;
  tebd-buffer.png  the kbuf allocator's capacity, high-water mark and peak use over the steps
                   of one run, with the bond dimension reached, from its --trace file.

    python3 bench/plot_tebd.py [--results bench/results/tebd] [--out bench/plots]

The runs (Release build, `cmake --preset release`), for chi in 8 16 32 64:
    kbuf-tebd --model ising --field H --chi C --strategy all --csv ising_H_chiC.csv
    kbuf-tebd --model heisenberg --chi C --strategy all --csv heis_chiC.csv
and one with --trace (heisenberg and critical Ising, chi 32) for the buffer plot.
"""
import argparse
import csv
import glob
import os

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def read_runs(results):
    series = {}
    for path in sorted(glob.glob(os.path.join(results, "*_chi*.csv"))):
        if os.path.basename(path).startswith("trace_"):
            continue
        with open(path) as f:
            for row in csv.DictReader(f):
                if row["strategy"] != "kbuf":
                    continue
                label = ("Ising, h = %g" % float(row["field"])) if row["model"] == "ising" \
                    else "Heisenberg"
                rel = abs(float(row["energy"]) - float(row["exact"])) / abs(float(row["exact"]))
                series.setdefault(label, []).append((int(row["chi"]), rel))
    return {k: sorted(v) for k, v in series.items()}


def plot_error(results, out):
    series = read_runs(results)
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for label, pts in sorted(series.items()):
        ax.loglog([p[0] for p in pts], [p[1] for p in pts], "o-", label=label, base=2)
    ax.set_yscale("log", base=10)
    ax.set_xlabel("bond dimension chi (most kept)")
    ax.set_ylabel("|e - e0| / |e0|")
    ax.set_xticks([8, 16, 32, 64])
    ax.set_xticklabels(["8", "16", "32", "64"])
    ax.axhline(1e-4, color="grey", ls=":", lw=1)
    ax.text(34, 1.3e-4, "target for critical chains, chi = 32", color="grey", fontsize=8)
    ax.set_title("kbuf-tebd: energy per site against the exact value")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "tebd-error.png"), dpi=110)


def plot_buffer(results, out):
    traces = sorted(glob.glob(os.path.join(results, "trace_*_kbuf.csv")))
    fig, axes = plt.subplots(len(traces), 1, figsize=(6.4, 3.2 * len(traces)), squeeze=False)
    for ax, path in zip(axes[:, 0], traces):
        rows = list(csv.DictReader(open(path)))
        step = [int(r["step"]) for r in rows]
        for key, name in (("capacity", "capacity"), ("hwm_bytes", "high-water mark"),
                          ("peak_used", "peak in use between checks")):
            ax.plot(step, [int(r[key]) / 1024 for r in rows], label=name)
        ax.set_xscale("symlog", linthresh=100)
        ax.set_xlabel("Trotter step")
        ax.set_ylabel("KiB")
        r0 = rows[0]
        title = ("Ising, h = %g" % float(r0["field"])) if r0["model"] == "ising" else "Heisenberg"
        ax.set_title("%s, chi = %s: the allocator over a run" % (title, r0["chi"]), fontsize=10)
        ax2 = ax.twinx()
        ax2.plot(step, [int(r["chi_now"]) for r in rows], color="grey", ls="--", lw=1,
                 label="chi reached")
        ax2.set_ylabel("chi reached")
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=8, loc="lower right")
        ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(os.path.join(out, "tebd-buffer.png"), dpi=110)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--results", default=os.path.join(here, "results", "tebd"))
    ap.add_argument("--out", default=os.path.join(here, "plots"))
    a = ap.parse_args()
    plot_error(a.results, a.out)
    plot_buffer(a.results, a.out)


if __name__ == "__main__":
    main()
