#!/usr/bin/env bash
# Parses every committed Markdown file as CommonMark and fails when a fenced code block swallows
# the text after it, a fence is left open, or text is indented into a code block by mistake
# (scripts/check_markdown.py). Installs Debian's python3-markdown-it when missing; runs it with
# Debian's python3, which that package serves.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --only python3-markdown-it
# The committed pages: git's list where there is one; else (a tarball, a root without git) every
# page outside build folders.
if command -v git >/dev/null 2>&1 && git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.md')
else
  mapfile -t files < <(find . \( -path './build*' -o -path './_build*' -o -path './out' -o -path './.git' \) \
    -prune -o -name '*.md' -print | sort)
fi
exec /usr/bin/python3 scripts/check_markdown.py "${files[@]}"
