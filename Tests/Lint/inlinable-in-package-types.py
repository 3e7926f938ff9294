#!/usr/bin/env python3
"""Lists `@inlinable` members of `package` types, and fails when there is one.

Swift 6.3 neither inlines nor specializes an `@inlinable` member of a `package` type (or of an
extension of one) in another module: the attribute is silently worth nothing there, and a generic
member runs through witness tables (`MinHeap.insert` did, with a malloc per swap). A type whose
inlinable members other modules must inline is `public` with `package` members (SovariaPlumbing is
not a product, so it is still not API): see docs/ARCHITECTURE.md, "Measurements behind the code".

Usage: inlinable-in-package-types.py [FOLDER…]   (default: Sources). Exit status 1 with one line
per finding, `path:line: what`, else 0.
"""

import pathlib
import re
import sys

# Attributes, then modifiers in any order (`final package class`, `indirect package enum`), then
# the kind and the name.
TYPE_DECLARATION = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*"
    r"(?P<modifiers>(?:(?:public|package|internal|fileprivate|private|final|indirect|open)\s+)*)"
    r"(?P<kind>struct|class|enum|actor|protocol)\s+(?P<name>\w+)"
)
EXTENSION = re.compile(r"^\s*(?:(?:public|package|internal|fileprivate|private)\s+)?extension\s+(?P<name>[\w.]+)")
INLINABLE = re.compile(r"@(inlinable|_alwaysEmitIntoClient)\b")


def code_of(line: str) -> str:
    """`line` without its string literals and its `//` comment (braces in them are not code)."""
    line = re.sub(r'"(?:\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def code_lines(path: pathlib.Path) -> list[str]:
    """Each line of `path` as code: a multi-line string's lines (between two `\"\"\"`) are empty."""
    lines: list[str] = []
    inside = False
    for line in path.read_text(encoding="utf-8").splitlines():
        quotes = line.count('"""')
        if inside:
            lines.append("")
            inside = quotes % 2 == 0
        elif quotes % 2 == 1:
            lines.append(code_of(line.split('"""', 1)[0]))
            inside = True
        else:
            lines.append(code_of(line.replace('"""', '""')))
    return lines


def package_types(paths: list[pathlib.Path]) -> set[str]:
    """The names of the types declared `package` in any of `paths`."""
    names: set[str] = set()
    for path in paths:
        for line in code_lines(path):
            match = TYPE_DECLARATION.match(line)
            if match and "package" in match.group("modifiers").split():
                names.add(match.group("name"))
    return names


def findings(path: pathlib.Path, package_names: set[str]) -> list[tuple[int, str]]:
    """Each `@inlinable` line of `path` inside a `package` type or an extension of one (at any
    depth: a type nested in a package type is package too)."""
    found: list[tuple[int, str]] = []
    depth = 0
    # (the depth inside the type's braces, whether it is package, its name)
    scopes: list[tuple[int, bool, str]] = []
    pending: tuple[bool, str] | None = None
    for number, code in enumerate(code_lines(path), start=1):
        if code.lstrip().startswith("///") or code.lstrip().startswith("*"):
            continue
        declaration = TYPE_DECLARATION.match(code)
        extension = EXTENSION.match(code)
        if declaration:
            pending = ("package" in declaration.group("modifiers").split(), declaration.group("name"))
        elif extension:
            name = extension.group("name").split(".")[-1]
            pending = (name in package_names, name)
        package_scope = next((name for _, is_package, name in reversed(scopes) if is_package), None)
        if INLINABLE.search(code) and package_scope:
            found.append((number, f"@inlinable in package type {package_scope}: no other module inlines it"))
        for character in code:
            if character == "{":
                depth += 1
                if pending is not None:
                    scopes.append((depth, pending[0], pending[1]))
                    pending = None
            elif character == "}":
                if scopes and scopes[-1][0] == depth:
                    scopes.pop()
                depth -= 1
    return found


def main(folders: list[str]) -> int:
    paths = sorted(path for folder in folders for path in pathlib.Path(folder).rglob("*.swift"))
    names = package_types(paths)
    failed = False
    for path in paths:
        for number, what in findings(path, names):
            print(f"{path}:{number}: {what}")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["Sources"]))
