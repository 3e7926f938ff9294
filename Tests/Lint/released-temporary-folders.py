#!/usr/bin/env python3
"""Lists each `TemporaryFolder()` whose value is used at once and never kept, and fails when there
is one.

`try TemporaryFolder().url` releases the folder as soon as its URL is read: its `deinit` removes the
folder, and a store opened at that URL then makes it again, which nothing removes, so the folder
and its store's files stay in the temporary directory for good. `_ = try TemporaryFolder()` keeps
nothing either. Keep the folder in a constant (`let folder = try TemporaryFolder()`) for as long as
the test uses it.

Usage: released-temporary-folders.py [FOLDER…]   (default: Sources Tests Benchmarks/Tests). Exit
status 1 with one line per finding, `path:line: what`, else 0.
"""

import pathlib
import re
import sys

# `TemporaryFolder()` followed by a member access or a subscript (`.url`, `.child(…)`, also in
# parentheses), or assigned to nothing.
RELEASED_AT_ONCE = re.compile(r"\bTemporaryFolder\(\)\)?\s*[.\[]|^\s*_\s*=\s*(?:try\s+)?TemporaryFolder\(\)")


def code_of(line: str) -> str:
    """`line` without its string literals and its `//` comment."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def findings(path: pathlib.Path) -> list[tuple[int, str]]:
    """Each line of `path` that uses a `TemporaryFolder()` it does not keep."""
    found: list[tuple[int, str]] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if RELEASED_AT_ONCE.search(code_of(line)):
            found.append((number, "a TemporaryFolder released at once: its folder is removed now and never again"))
    return found


def main(folders: list[str]) -> int:
    paths = sorted(path for folder in folders for path in pathlib.Path(folder).rglob("*.swift"))
    failed = False
    for path in paths:
        for number, what in findings(path):
            print(f"{path}:{number}: {what}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["Sources", "Tests", "Benchmarks/Tests"]))
