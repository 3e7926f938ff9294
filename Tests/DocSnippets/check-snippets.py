#!/usr/bin/env python3
"""Type-checks every ```swift block of each module's DocC catalog against the package's built
modules, so that a snippet that drifts from the API fails `make test`. The README is one program,
built and run whole by check-readme-program.py instead.

Each block becomes the body of an `async throws` function whose parameters are the names the
docs use without declaring them (`store`, `cache`, `offline`, … in CONTEXT below); a block that
declares its own shadows them. A block that must live at file scope (an `extension`, a
`protocol`, an `@main` or `@Suite` type) is emitted there instead. Errors point at the doc's own
file and line (`#sourceLocation`).

usage: check-snippets.py BUILD_DIR   (the debug build folder, e.g. .build/debug)
"""
import glob
import os
import re
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODULES = [
    "Foundation", "Observation", "Sovaria", "SovariaCache", "SovariaQueue", "SovariaSync", "SovariaPostgREST", "SovariaHTTP",
    "SovariaFiles", "SovariaObjects", "SovariaSodium", "SovariaSQLite", "SovariaLMDB", "SovariaLevelDB", "SovariaPostgres",
]
C_MODULES = ["CSQLite", "CLMDB", "CLevelDB", "CSodium", "CLibPQ"]

# Names the docs use as "the one you already have"; each snippet may use any of them.
CONTEXT = [
    ("store", "any OfflineStore"),
    ("cache", "QueryCache"),
    ("offline", "SovariaOffline"),
    ("queue", "WriteQueue"),
    ("files", "FileCache"),
    ("transport", "any SyncTransport"),
    ("passphrase", "String"),
    ("key", "String"),
    ("value", "String"),
    ("query", "String"),
    ("folder", "URL"),
    ("request", "DataRequest"),
    ("fetchFromServer", "@Sendable (String?) async throws -> FetchResult"),
    ("url", "URL"),
    ("api", "any SyncTransport"),
    ("old", "any OfflineStore"),
    ("new", "any OfflineStore"),
    ("rejectedID", "String"),
    ("anonKey", "String"),
    ("render", "(LocalRead) -> Void"),
    ("badge", "(Int, Bool) -> Void"),
    ("pickedFile", "URL"),
    ("show", "(URL) -> Void"),
    ("caches", "URL"),
    ("support", "URL"),
]

FILE_SCOPE = re.compile(r"^(extension |protocol |public protocol |@main|@Suite|@Observable|@MainActor\s+final class|import Testing)", re.M)


def blocks(path):
    """(first line number, code) of each ```swift block in `path`."""
    found, inside, start, lines = [], False, 0, []
    with open(path, encoding="utf-8") as text:
        for number, line in enumerate(text, 1):
            stripped = line.strip()
            if not inside and stripped == "```swift":
                inside, start, lines = True, number + 1, []
            elif inside and stripped.startswith("```"):
                found.append((start, "".join(lines)))
                inside = False
            elif inside:
                lines.append(line)
    return found


# A block made of declarations only (every line at column 0 starts one, or closes one).
DECLARATION_LINE = re.compile(
    r"^(//|@|\}|\)|\]|import |(public |private |internal |package |final |open |nonisolated )*"
    r"(class |struct |enum |actor |protocol |extension |func |typealias ))")


def declarations_only(code):
    top = [line for line in code.splitlines() if line and not line[0].isspace()]
    return bool(top) and all(DECLARATION_LINE.match(line) for line in top)


MANIFEST = re.compile(r"^import PackageDescription\s*$", re.M)


def generate(path, snippets):
    """The Swift files that check `snippets` of `path`: one for the blocks that run inside a
    function, beside the doc's file-scope declarations (which they may use), and one per package
    manifest (checked against PackageDescription)."""
    relative = os.path.relpath(path, ROOT)
    imports = set(MODULES + (["FoundationNetworking"] if sys.platform.startswith("linux") else []))
    body = []
    alone = []
    declarations = []
    parameters = ", ".join(f"{name}: {kind}" for name, kind in CONTEXT)
    for index, (line, code) in enumerate(snippets):
        if MANIFEST.search(code):
            location = f'#sourceLocation(file: "{relative}", line: {line})'
            alone.append(("manifest", f"{location}\n{code}\n#sourceLocation()\n"))
            continue
        kept = []
        for source in code.splitlines():
            match = re.match(r"^\s*import\s+(\w+)\s*$", source)
            if match:
                imports.add(match.group(1))
                kept.append("")  # keeps the line numbers
            else:
                kept.append(source)
        location = f'#sourceLocation(file: "{relative}", line: {line})'
        code = "\n".join(kept)
        if FILE_SCOPE.search(code) or declarations_only(code):
            declarations.append(f"{location}\n{code}\n#sourceLocation()\n")
        else:
            body.append(
                f"@MainActor func snippet{index}({parameters}) async throws {{\n"
                f"{location}\n{code}\n#sourceLocation()\n}}\n")
    header = "".join(f"import {module}\n" for module in sorted(imports))
    files = [("code", header + "\n" + "\n".join(body + declarations))] if body or declarations else []
    for kind, code in alone:
        files.append((kind, code if kind == "manifest" else header + "\n" + code))
    return files


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(sys.argv[1])
    docs = sorted(
        glob.glob(os.path.join(ROOT, "Sources", "*", "*.docc", "**", "*.md"), recursive=True))
    out = os.path.join(build, "doc-snippets")
    os.makedirs(out, exist_ok=True)
    sources, count = [], 0
    for index, doc in enumerate(docs):
        snippets = blocks(doc)
        if not snippets:
            continue
        count += len(snippets)
        for part, (kind, code) in enumerate(generate(doc, snippets)):
            source = os.path.join(out, f"Snippets{index}-{part}.swift")
            with open(source, "w", encoding="utf-8") as file:
                file.write(code)
            sources.append((doc, kind, source))
    flags = ["-I", os.path.join(build, "Modules"), "-swift-version", "6"]
    for module in C_MODULES:
        flags += ["-Xcc", f"-fmodule-map-file={os.path.join(ROOT, 'Sources', module, 'module.modulemap')}"]
    flags += ["-Xcc", "-I/usr/include/postgresql"]
    manifest_api = os.path.join(
        os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("swiftc")))), "lib", "swift", "pm", "ManifestAPI")
    failed = 0
    for doc, kind, source in sources:
        arguments = ["-I", manifest_api, "-package-description-version", "6.0"] if kind == "manifest" else flags
        result = subprocess.run(
            ["swiftc", "-typecheck", *arguments, source], capture_output=True, text=True, cwd=ROOT)
        errors = [line for line in (result.stdout + result.stderr).splitlines() if ": error:" in line]
        if result.returncode != 0:
            failed += 1
            print(f"doc snippets: a {kind} snippet of {os.path.relpath(doc, ROOT)} does not compile:")
            print("\n".join(errors[:40]) or (result.stdout + result.stderr)[-4000:])
    print(f"doc snippets: {count} swift blocks type-checked in {len(sources)} files, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
