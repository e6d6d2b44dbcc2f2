#!/usr/bin/env bash
# Parses every committed Markdown file as CommonMark and fails when a fenced code block swallows
# the text after it, a fence is left open, or text is indented into a code block by mistake
# (scripts/check_markdown.py). Installs Debian's python3-markdown-it when missing; runs it with
# Debian's python3, which that package serves.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --only python3-markdown-it
mapfile -t files < <(git ls-files '*.md')
exec /usr/bin/python3 scripts/check_markdown.py "${files[@]}"
