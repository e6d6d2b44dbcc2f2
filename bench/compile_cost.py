#!/usr/bin/env python3
"""What a translation unit pays to compile kbuf.

Builds the consumer project in bench/compile_cost/ against an installed kbuf (find_package, as an
adopter does), then compiles each of its translation units several times with the exact command
CMake gives it and takes the compiler's own CPU time (user + system of the compiler and its
children, from getrusage). Prints each TU's seconds and its ratio to the baseline, the same
temporary as a managed Kokkos::View:

  view       a managed View, filled and summed (Kokkos only)
  allocator  the same temporary from a kbuf::BufferAllocator  (#include <kbuf/buffer_allocator.hpp>)
  scope      kbuf::temporary under a kbuf::scope of an owner  (#include <kbuf/current.hpp>)
  umbrella   the allocator's TU through <kbuf/kbuf.hpp>        (every feature's declarations)

  bench/compile_cost.py --prefix INSTALLED_KBUF [--kokkos DIR] [--runs 5] [--cxx g++]
                        [--flags "-O2"] [--max-ratio R]

The ratio is the median over rounds of each round's ratio to view (a round compiles every TU
once, one after the other, so that a slow phase of a shared machine hits the TUs it compares
alike); the ratio of the least times is printed beside it. --max-ratio R exits 1 when the
allocator's or the scope's ratio is above R (a report, not a timed test).
"""
import argparse
import json
import os
import resource
import shlex
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
UNITS = ["view", "allocator", "scope", "umbrella"]


def cpu_seconds(argv, cwd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--prefix", required=True, help="where kbuf is installed")
    ap.add_argument("--kokkos", default="", help="Kokkos_ROOT (default: what CMake finds)")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--flags", default="-O2", help="CMAKE_CXX_FLAGS of the consumer")
    ap.add_argument("--max-ratio", type=float, default=0.0)
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="kbuf-compile-cost.")
    try:
        build = os.path.join(work, "build")
        configure = ["cmake", "-S", os.path.join(HERE, "compile_cost"), "-B", build,
                     "-DCMAKE_BUILD_TYPE=", "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
                     "-DCMAKE_CXX_COMPILER=" + args.cxx, "-DCMAKE_CXX_FLAGS=" + args.flags,
                     "-DCMAKE_PREFIX_PATH=" + os.path.abspath(args.prefix)]
        if args.kokkos:
            configure.append("-DKokkos_ROOT=" + os.path.abspath(args.kokkos))
        subprocess.run(configure, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(build, "compile_commands.json")) as f:
            commands = json.load(f)
        by_unit = {}
        for c in commands:
            name = os.path.splitext(os.path.basename(c["file"]))[0]
            argv = c["arguments"] if "arguments" in c else shlex.split(c["command"])
            # The object goes nowhere: only the compile is timed.
            if "-o" in argv:
                i = argv.index("-o")
                argv = argv[:i + 1] + [os.devnull] + argv[i + 2:]
            by_unit[name] = (argv, c["directory"])
        missing = [u for u in UNITS if u not in by_unit]
        if missing:
            sys.exit("compile_cost: no compile command for " + ", ".join(missing))
        version = subprocess.run([args.cxx, "--version"], capture_output=True,
                                 text=True).stdout.splitlines()[0]
        print(f"compiler: {version}; flags: {args.flags}; kbuf at {args.prefix}; "
              f"Kokkos: {args.kokkos or '(found by CMake)'}")
        print(f"CPU seconds of the compiler, least of {args.runs} runs (interleaved)")
        samples = {u: [] for u in UNITS}
        for _ in range(args.runs):  # interleaved: a slow phase of the machine hits every TU
            for u in UNITS:
                samples[u].append(cpu_seconds(*by_unit[u]))
        best = {u: min(samples[u]) for u in UNITS}

        def median(values):
            v = sorted(values)
            n = len(v)
            return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2

        # Each round compiles every TU once, one after the other: the ratio of a round compares
        # compiles made seconds apart, so a slow phase of a shared machine cancels out, and the
        # median of the rounds' ratios is the figure (the least times' ratio beside it).
        paired = {u: median([samples[u][r] / samples["view"][r] for r in range(args.runs)])
                  for u in UNITS}
        print(f"{'translation unit':<16} {'least s':>8} {'median s':>9} {'ratio':>6} "
              f"{'ratio of least':>15}")
        for u in UNITS:
            print(f"{u:<16} {best[u]:8.2f} {median(samples[u]):9.2f} {paired[u]:6.2f} "
                  f"{best[u] / best['view']:15.2f}")
        print("ratio: the median over rounds of each round's ratio to view")
        worst = max(paired["allocator"], paired["scope"])
        if args.max_ratio and worst > args.max_ratio:
            print(f"compile_cost: a ratio of {worst:.2f} is above {args.max_ratio}")
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
