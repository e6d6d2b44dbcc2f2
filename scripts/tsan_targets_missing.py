#!/usr/bin/env python3
"""Prints the test executables that tests/ labels "threads" (kbuf_add_test(... LABELS threads))
and that are not among the targets given: scripts/ci-reliability.sh builds only those targets
for ThreadSanitizer, and a doctest executable that is not built registers no test at all, so a
missing one would be skipped without a word.

    tsan_targets_missing.py TARGET...
"""
import glob
import re
import sys


def main(argv):
    built = set(argv[1:])
    missing = []
    for path in sorted(glob.glob("tests/**/CMakeLists.txt", recursive=True)):
        with open(path) as f:
            text = f.read()
        for m in re.finditer(r"kbuf_add_test\(\s*([a-z0-9_]+)([^)]*)\)", text):
            exe = "kbuf-test-" + m.group(1).replace("_", "-")
            if re.search(r"LABELS\s+threads", m.group(2)) and exe not in built:
                missing.append(exe)
    print(" ".join(missing))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
