#!/usr/bin/env python3
"""Parses Markdown files as CommonMark (markdown-it-py) and fails when what renders is not what
was written: a fenced code block that runs past its intended end and swallows the text after it
(a closing fence indented four spaces or more is not a closing fence), a fence left open until
the end of the file, or an indented code block (four spaces) outside a list, which is almost
always a fence or a paragraph indented by mistake.

    check_markdown.py FILE.md...      (scripts/check-markdown.sh passes every committed one)

Prints one line per problem, FILE:LINE: what, and exits 1 if there is any.
"""
import re
import sys

from markdown_it import MarkdownIt

FENCE = re.compile(r"^[ \t]*(`{3,}|~{3,})")


def problems(path, text):
    lines = text.splitlines()
    md = MarkdownIt("commonmark")
    tokens = md.parse(text)
    found = []
    list_depth = 0
    for tok in tokens:
        if tok.type in ("bullet_list_open", "ordered_list_open"):
            list_depth += 1
        elif tok.type in ("bullet_list_close", "ordered_list_close"):
            list_depth -= 1
        if tok.map is None:
            continue
        first, end = tok.map  # 0-based, end exclusive
        if tok.type == "fence":
            marker = tok.markup
            body = tok.content.splitlines()
            for i, line in enumerate(body):
                m = FENCE.match(line)
                if m and m.group(1)[0] == marker[0] and len(m.group(1)) >= len(marker):
                    found.append(
                        f"{path}:{first + 2 + i}: a fence inside the code block opened at line "
                        f"{first + 1}: the block swallows the {len(body) - i - 1} lines after it "
                        f"(a closing fence may be indented at most three spaces)")
                    break
            closed = end - 1 < len(lines) and end - 1 > first and \
                FENCE.match(lines[end - 1]) is not None and \
                lines[end - 1].strip().startswith(marker[0] * len(marker)) and \
                lines[end - 1].strip().strip(marker[0]) == ""
            if not closed:
                found.append(f"{path}:{first + 1}: the code block opened here is never closed "
                             f"(it runs to the end of the file)")
        elif tok.type == "code_block" and list_depth == 0:
            found.append(f"{path}:{first + 1}: an indented code block ({end - first} lines): "
                         f"a fence or a paragraph indented four spaces or more by mistake? "
                         f"Use a fenced block for code")
    return found


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    allp = []
    for path in argv[1:]:
        with open(path, encoding="utf-8") as f:
            allp += problems(path, f.read())
    for p in allp:
        print(p)
    print(f"check_markdown: {len(argv) - 1} files, {len(allp)} problems")
    return 1 if allp else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
