#!/usr/bin/env python3
"""Turns kbuf-bench's CSV (--csv FILE) into PNG plots.

    python3 bench/plot.py RESULTS.csv [--out DIR] [--tag NAME]

Writes DIR/NAME-live.png (cost per temporary vs live count), DIR/NAME-size.png (vs size),
DIR/NAME-round.png (the realistic round, one bar per strategy), DIR/NAME-warmup.png (fallbacks
per round, kbuf vs the TensorOperations-style model), DIR/NAME-tensor.png (end to end) and
DIR/NAME-threads.png (the round on 1 and 2 threads against other allocators), each when the CSV
has that section. One line per strategy; shaded bands span p10..p90. Needs
matplotlib (Debian: python3-matplotlib).
"""

import argparse
import csv
import os
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {  # strategy -> (label, colour, marker, linestyle)
    "floor": ("floor (unmanaged Views, fixed array)", "#222222", "o", "-"),
    "floor-extents": ("floor, View(ptr, extents...)", "#555555", "o", ":"),
    "bump": ("bare pointer bump (reference)", "#999999", ".", ":"),
    "kbuf": ("kbuf", "#d62728", "s", "-"),
    "kbuf-scope": ("kbuf (Scope)", "#ff9896", "s", "--"),
    "kbuf-first-round": ("kbuf, 1st round on an un-warmed allocator", "#d62728", "x", "--"),
    "pmr-monotonic": ("std::pmr::monotonic_buffer_resource", "#2ca02c", "^", "-"),
    "kokkos_malloc": ("kokkos_malloc / kokkos_free", "#9467bd", "v", "-"),
    "managed-noinit": ("managed View, WithoutInitializing", "#1f77b4", "D", "-"),
    "managed": ("managed View (zero-initialised)", "#17becf", "D", "--"),
    "fresh-noinit": ("fresh managed Views, WithoutInitializing", "#1f77b4", "D", "-"),
    "fresh-init": ("fresh managed Views, initialised", "#17becf", "D", "--"),
    "to-model": ("TensorOperations-style mark (model)", "#7f7f7f", "o", "--"),
}
ORDER = list(STYLE)


def read(path):
    meta, rows = {}, []
    with open(path, newline="") as f:
        lines = []
        for line in f:
            if line.startswith("#"):
                for kv in line[1:].split():
                    if "=" in kv:
                        k, v = kv.split("=", 1)
                        meta[k] = v
            else:
                lines.append(line)
    for r in csv.DictReader(lines):
        for k in ("x", "median_ns", "p10_ns", "p90_ns", "min_ns", "max_ns"):
            r[k] = float(r[k])
        r["fallbacks"] = int(r["fallbacks"]) if r["fallbacks"] else None
        r["capacity_bytes"] = int(r["capacity_bytes"]) if r["capacity_bytes"] else None
        rows.append(r)
    return meta, rows


def by_strategy(rows, section):
    out = defaultdict(list)
    for r in rows:
        if r["section"] == section:
            out[r["strategy"]].append(r)
    for v in out.values():
        v.sort(key=lambda r: r["x"])
    return {k: out[k] for k in sorted(out, key=lambda s: ORDER.index(s) if s in ORDER else 99)}


def style(name):
    return STYLE.get(name, (name, None, "o", "-"))


def bytes_label(n):
    n = int(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or n % 1024:
            return f"{n} {unit}"
        n //= 1024
    return f"{n} TiB"


def save(fig, fname):
    """Lays out, writes (110 dpi) and closes a figure; returns its file name."""
    fig.tight_layout()
    fig.savefig(fname, dpi=110)
    plt.close(fig)
    return fname


def title(meta, what):
    q = " (--quick: not meaningful)" if "quick" in meta else ""
    return (f"{what}\nKokkos {meta.get('kokkos', '?')}, {meta.get('backend', '?')}, "
            f"median of up to {meta.get('reps', '?')} interleaved samples{q}")


def scaling_plot(meta, rows, section, xlabel, xfmt, fname, what):
    data = by_strategy(rows, section)
    if not data:
        return None
    fig, ax = plt.subplots(figsize=(9, 6))
    for name, rs in data.items():
        if name == "kbuf-second-round":
            continue
        label, colour, marker, ls = style(name)
        xs = [r["x"] for r in rs]
        ax.plot(xs, [r["median_ns"] for r in rs], label=label, color=colour, marker=marker,
                linestyle=ls, linewidth=1.6, markersize=5)
        ax.fill_between(xs, [r["p10_ns"] for r in rs], [r["p90_ns"] for r in rs], color=colour,
                        alpha=0.12, linewidth=0)
        if name == "kbuf-first-round":
            for r in rs:
                if r["fallbacks"]:
                    ax.annotate(f"{r['fallbacks']} fb", (r["x"], r["median_ns"]),
                                textcoords="offset points", xytext=(4, 6), fontsize=8,
                                color=colour)
    second = data.get("kbuf-second-round", [])
    if second:
        late = sum(r["fallbacks"] or 0 for r in second)
        ax.text(0.01, 0.01, f"kbuf fallbacks in round 2 (after one warm-up), all points: {late}",
                transform=ax.transAxes, fontsize=9, color=STYLE["kbuf"][1])
    ax.set_xscale("log", base=2 if section == "live" else 4)
    ax.set_yscale("log")
    xs = sorted({r["x"] for rs in data.values() for r in rs})
    ax.set_xticks(xs)
    ax.set_xticklabels([xfmt(x) for x in xs], rotation=30 if section == "size" else 0)
    ax.minorticks_off()
    ax.set_xlabel(xlabel)
    ax.set_ylabel("ns per temporary (allocate + touch + release)")
    ax.grid(True, which="major", alpha=0.3)
    ax.set_title(title(meta, what), fontsize=11)
    ax.legend(fontsize=8, loc="upper left", framealpha=0.9)
    return save(fig, fname)


def round_plot(meta, rows, fname):
    rs = [r for r in rows if r["section"] == "round"]
    if not rs:
        return None
    rs.sort(key=lambda r: r["median_ns"])
    fig, ax = plt.subplots(figsize=(9, 5))
    names = [style(r["strategy"])[0] for r in rs]
    med = [r["median_ns"] for r in rs]
    err = [[r["median_ns"] - r["p10_ns"] for r in rs], [r["p90_ns"] - r["median_ns"] for r in rs]]
    colours = [style(r["strategy"])[1] or "#888888" for r in rs]
    ax.barh(range(len(rs)), med, xerr=err, color=colours, alpha=0.85, capsize=3)
    ax.set_yticks(range(len(rs)))
    ax.set_yticklabels(names, fontsize=9)
    ax.set_xscale("log")
    for i, r in enumerate(rs):
        ratio = r["ratio_to_kbuf"]
        ax.text(max(r["p90_ns"], r["median_ns"]) * 1.2, i, f"{r['median_ns']:.3g} ns  ({float(ratio):.3g}x kbuf)"
                if ratio else f"{r['median_ns']:.3g} ns", va="center", fontsize=8)
    ax.set_xlim(min(med) / 2, max(med) * 30)
    ax.set_xlabel("ns per temporary (median, bars p10..p90)")
    ax.set_title(title(meta, "A round: scope, 8 temporaries of ranks 1-4, 64 B - 1 MiB, each "
                       "touched once"), fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    return save(fig, fname)


def warmup_plot(meta, rows, fname):
    rs = [r for r in rows if r["section"] == "warmup"]
    if not rs:
        return None
    workloads = sorted({r["workload"] for r in rs}, key=lambda w: [r["workload"] for r in rs].index(w))
    fig, axes = plt.subplots(1, len(workloads), figsize=(3.2 * len(workloads), 3.6), sharey=False)
    if len(workloads) == 1:
        axes = [axes]
    for ax, w in zip(axes, workloads):
        for name in ("kbuf", "to-model"):
            pts = sorted((r["x"], r["fallbacks"]) for r in rs if r["workload"] == w and
                         r["strategy"] == name)
            label, colour, marker, ls = style(name)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], label=label, color=colour,
                    marker=marker, linestyle=ls)
        ax.set_title(w, fontsize=10)
        ax.set_xlabel("round")
        ax.set_xticks(range(1, 11))
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("fallbacks in the round")
    axes[0].legend(fontsize=8)
    fig.suptitle(f"Warm-up from an empty allocator: fallbacks per round "
                 f"(Kokkos {meta.get('kokkos', '?')})", fontsize=11)
    return save(fig, fname)


def tensor_plot(meta, rows, fname):
    data = by_strategy(rows, "tensor")
    if not data:
        return None
    fig, (ax, ax2) = plt.subplots(2, 1, figsize=(8, 7), sharex=True,
                                  gridspec_kw={"height_ratios": [2, 1]})
    kb = {r["x"]: r["median_ns"] for r in data.get("kbuf", [])}
    for name, rs in data.items():
        label, colour, marker, ls = style(name)
        xs = [r["x"] for r in rs]
        ax.plot(xs, [r["median_ns"] * 1e-3 for r in rs], label=label, color=colour,
                marker=marker, linestyle=ls)
        ax.fill_between(xs, [r["p10_ns"] * 1e-3 for r in rs], [r["p90_ns"] * 1e-3 for r in rs],
                        color=colour, alpha=0.12, linewidth=0)
        if name != "kbuf":
            ax2.plot(xs, [r["median_ns"] / kb[r["x"]] for r in rs], label=label, color=colour,
                     marker=marker, linestyle=ls)
    ax2.axhline(1.0, color=STYLE["kbuf"][1], linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_ylabel("us per network contraction")
    ax2.set_ylabel("time / kbuf's")
    ax2.set_xlabel("bond dimension D (d = 2)")
    xs = sorted(kb)
    ax2.set_xticks(xs)
    ax2.set_xticklabels([str(int(x)) for x in xs])
    ax2.minorticks_off()
    for a in (ax, ax2):
        a.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    ax.set_title(title(meta, "End to end: two-site environment network (6 contractions, "
                       "7 temporaries)"), fontsize=11)
    return save(fig, fname)


def threads_plot(meta, rows, fname):
    rs = [r for r in rows if r["section"] == "threads"]
    if not rs:
        return None
    ns = sorted({int(r["x"]) for r in rs})
    one = {r["strategy"]: r for r in rs if int(r["x"]) == ns[0]}
    names = sorted(one, key=lambda s: one[s]["median_ns"])
    fig, ax = plt.subplots(figsize=(9, 5.5))
    h = 0.8 / len(ns)
    for j, n in enumerate(ns):
        at = {r["strategy"]: r for r in rs if int(r["x"]) == n}
        ys = [i + (j - (len(ns) - 1) / 2) * h for i in range(len(names))]
        med = [at[s]["median_ns"] if s in at else 0 for s in names]
        ax.barh(ys, med, height=h, alpha=0.85, label=f"{n} thread{'s' if n > 1 else ''}")
        for y, s in zip(ys, names):
            if s in at:
                ax.text(at[s]["median_ns"] * 1.15, y, f"{at[s]['median_ns']:.3g}", va="center",
                        fontsize=7)
    ax.set_yticks(range(len(names)))
    ax.set_yticklabels(names, fontsize=9)
    ax.set_xscale("log")
    ax.set_xlabel("ns per temporary per thread (median of interleaved samples)")
    ax.set_title(title(meta, "The round on N threads at once, each with its own allocator"),
                 fontsize=11)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8)
    return save(fig, fname)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv")
    p.add_argument("--out", default=".", help="output folder (default: .)")
    p.add_argument("--tag", default=None, help="file name prefix (default: the CSV's name)")
    a = p.parse_args()
    meta, rows = read(a.csv)
    tag = a.tag or os.path.splitext(os.path.basename(a.csv))[0]
    os.makedirs(a.out, exist_ok=True)
    out = lambda s: os.path.join(a.out, f"{tag}-{s}.png")  # noqa: E731
    made = [
        scaling_plot(meta, rows, "live", "live temporaries (512 B each)", lambda x: str(int(x)),
                     out("live"), "Cost per temporary vs number of live temporaries"),
        scaling_plot(meta, rows, "size", "size of each of 4 live temporaries", bytes_label,
                     out("size"), "Cost per temporary vs temporary size"),
        round_plot(meta, rows, out("round")),
        warmup_plot(meta, rows, out("warmup")),
        tensor_plot(meta, rows, out("tensor")),
        threads_plot(meta, rows, out("threads")),
    ]
    for f in made:
        if f:
            print(f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
