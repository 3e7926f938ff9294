#!/usr/bin/env python3
"""Builds and runs the README as the one program it says it is, the way a newcomer would.

The README's manifest (the ```swift block with `import PackageDescription`) becomes the
Package.swift of a package beside a link named `sovaria` to this checkout (so its
`.package(path: "../sovaria")` names this checkout under the identity the manifest uses); every
other ```swift block goes, in order and unchanged, into Sources/<target>/main.swift. The package
is built in debug and the program run to completion, offline, with its temporary directory a
fresh folder, under a timeout. Every `// prints: TEXT` comment of a block must match a line the
program printed, in the order of the comments.

A ```swift block that is not part of the program is marked by the line
`<!-- readme-program: skip -->` right before its fence; there is none today. Other fences
(```sh) are not Swift and are skipped.

The package lives in BUILD_DIR/readme-program (default .build/readme-program), so a second run
rebuilds only what changed.

usage: check-readme-program.py [BUILD_DIR]   (SWIFT names the swift command; default: swift)
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
README = os.path.join(ROOT, "README.md")
SKIP = "<!-- readme-program: skip -->"
MANIFEST = re.compile(r"^import PackageDescription\s*$", re.M)
PRINTS = re.compile(r"//\s*prints:\s*(.*?)\s*$")
BUILD_TIMEOUT = 1800
RUN_TIMEOUT = 120
SWIFT = os.environ.get("SWIFT", "swift")


def swift_blocks(path):
    """(first line number, code, skipped) of each ```swift block of `path`."""
    found, inside, start, lines, skipped, previous = [], False, 0, [], False, ""
    with open(path, encoding="utf-8") as text:
        for number, line in enumerate(text, 1):
            stripped = line.strip()
            if not inside and stripped == "```swift":
                inside, start, lines, skipped = True, number + 1, [], previous == SKIP
            elif inside and stripped.startswith("```"):
                found.append((start, "".join(lines), skipped))
                inside = False
            elif inside:
                lines.append(line)
            if stripped:
                previous = stripped
    return found


def write_if_changed(path, text):
    """Writes `text` unless the file holds it already (an unchanged file is not rebuilt)."""
    try:
        with open(path, encoding="utf-8") as file:
            if file.read() == text:
                return
    except FileNotFoundError:
        pass
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build"))
    blocks = swift_blocks(README)
    manifests = [code for _, code, skipped in blocks if MANIFEST.search(code) and not skipped]
    program = [(line, code) for line, code, skipped in blocks if not MANIFEST.search(code) and not skipped]
    if len(manifests) != 1 or not program:
        print(f"readme program: expected one manifest and some Swift blocks, found {len(manifests)} and {len(program)}")
        return 1
    manifest = manifests[0]
    if '.package(path: "../sovaria")' not in manifest:
        print('readme program: the manifest must depend on .package(path: "../sovaria")')
        return 1
    names = re.findall(r'\.executableTarget\(\s*name:\s*"([^"]+)"', manifest)
    if len(names) != 1:
        print(f"readme program: the manifest must have one executable target, found {names}")
        return 1
    target = names[0]

    home = os.path.join(build, "readme-program")
    package = os.path.join(home, target)
    os.makedirs(os.path.join(package, "Sources", target), exist_ok=True)
    link = os.path.join(home, "sovaria")
    if os.path.islink(link) and os.readlink(link) != ROOT:
        os.remove(link)
    if not os.path.islink(link):
        os.symlink(ROOT, link)
    write_if_changed(os.path.join(package, "Package.swift"), manifest)
    # Each block starts at its README line, so an error points at the README.
    main_swift = "".join(
        f'#sourceLocation(file: "README.md", line: {line})\n{code}#sourceLocation()\n' for line, code in program)
    write_if_changed(os.path.join(package, "Sources", target, "main.swift"), main_swift)

    started = time.monotonic()
    built = subprocess.run(
        [SWIFT, "build", "--package-path", package, "--product", target],
        capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    build_seconds = time.monotonic() - started
    if built.returncode != 0:
        errors = list(dict.fromkeys(
            line for line in (built.stdout + built.stderr).splitlines() if re.match(r"^\S+:\d+:\d+: error:", line)))
        print(f"readme program: the package made from the README does not build ({build_seconds:.0f} s):")
        print("\n".join(errors[:40]) or (built.stdout + built.stderr)[-4000:])
        return 1
    binary = os.path.join(
        subprocess.run(
            [SWIFT, "build", "--package-path", package, "--show-bin-path"], capture_output=True, text=True,
            check=True).stdout.strip(), target)

    with tempfile.TemporaryDirectory(prefix="sovaria-readme-") as scratch:
        environment = {name: value for name, value in os.environ.items() if not name.startswith("SOVARIA_")}
        environment["TMPDIR"] = scratch
        started = time.monotonic()
        try:
            ran = subprocess.run(
                [binary], capture_output=True, text=True, timeout=RUN_TIMEOUT, cwd=scratch, env=environment)
        except subprocess.TimeoutExpired as timeout:
            # What it printed is lost in its buffer when it is killed.
            print(f"readme program: still running after {RUN_TIMEOUT} s, stopped: it must end on its own"
                  " (a `for await` over a stream that ends only when cancelled?)")
            return 1
        run_seconds = time.monotonic() - started
    output = ran.stdout.splitlines()
    if ran.returncode != 0:
        print(f"readme program: exited with status {ran.returncode}; it printed:")
        print(ran.stdout + ran.stderr)
        return 1

    # Each `// prints:` comment, in order, against the printed lines after the last one matched.
    failed, position, expected = 0, 0, 0
    for line, code in program:
        for offset, source in enumerate(code.splitlines()):
            match = PRINTS.search(source)
            if not match:
                continue
            expected += 1
            want = match.group(1)
            found = next((index for index in range(position, len(output)) if output[index] == want), None)
            if found is None:
                failed += 1
                print(f"README.md:{line + offset}: prints {want!r}, but the program printed no such line after "
                      f"{output[position - 1]!r}" if position else f"README.md:{line + offset}: prints {want!r}, "
                      "but the program printed no such line")
            else:
                position = found + 1
    if failed:
        print("readme program: it printed:")
        print(ran.stdout)
        return 1
    print(f"readme program: {len(program)} swift blocks built as one program in {build_seconds:.0f} s, "
          f"ran to the end in {run_seconds:.1f} s, {expected} prints: comments matched")
    return 0


if __name__ == "__main__":
    sys.exit(main())
