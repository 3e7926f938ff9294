#!/usr/bin/env python3
"""Lists Linux-only calls that no `#if` keeps off Apple platforms, and fails when there is one.

Apple platforms must still compile: a Linux-only call sits inside `#if os(Linux)` or
`#if canImport(Glibc)` (the `#else` beside it is the Apple path). Found in Swift files:
- a string literal naming `/proc/` or `/sys/` (the kernel's files: none on Apple platforms);
- `import Glibc` or a `Glibc.` prefix;
- a call of a function or a flag that Glibc has and Darwin does not (the list below).

Usage: linux-only-calls.py [FOLDER…]   (default: Sources Benchmarks). Exit status 1 with one line
per finding, `path:line: what`, else 0.
"""

import pathlib
import re
import sys

# Functions and constants Glibc has and Darwin lacks; a whole word of code (not in a comment or
# a string literal).
GLIBC_ONLY = [
    "posix_fallocate", "fallocate", "sync_file_range", "syncfs", "malloc_trim", "mallinfo", "mallinfo2",
    "malloc_usable_size", "statx", "memfd_create", "pipe2", "dup3", "accept4", "epoll_create", "epoll_create1",
    "epoll_ctl", "epoll_wait", "inotify_init", "inotify_init1", "inotify_add_watch", "eventfd", "timerfd_create",
    "signalfd", "sched_getaffinity", "sched_setaffinity", "get_nprocs", "get_nprocs_conf", "getauxval", "prctl",
    "renameat2", "copy_file_range", "gettid", "mremap", "posix_fadvise", "readahead", "splice", "tee", "vmsplice",
    "O_DIRECT", "O_TMPFILE", "O_PATH", "O_NOATIME", "O_LARGEFILE", "MAP_POPULATE", "MAP_ANONYMOUS_HUGE",
    "MAP_HUGETLB", "FALLOC_FL_KEEP_SIZE", "FALLOC_FL_PUNCH_HOLE", "SOCK_CLOEXEC", "SOCK_NONBLOCK",
    "RENAME_NOREPLACE", "RENAME_EXCHANGE", "SYS_gettid", "pthread_rwlockattr_setkind_np",
    "PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP", "pthread_setaffinity_np", "pthread_getaffinity_np",
]
GLIBC_ONLY_PATTERN = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, GLIBC_ONLY)) + r")\b")
KERNEL_FILES = re.compile(r"/(proc|sys)/")
GLIBC_MODULE = re.compile(r"\bimport\s+Glibc\b|(?<![\w.])Glibc\.")
# One condition of an `#if`: true only where the code is Linux (or another Glibc/Musl system).
LINUX_TERM = re.compile(r"^(os\((Linux|Android)\)|canImport\((Glibc|Musl|Bionic)\))\)*$")


def is_linux_only(condition: str) -> bool:
    """Whether `condition` holds on Linux-like systems only: Linux terms joined by `||`, or a
    conjunction with one Linux term in it. A negated term (`!os(Linux)`) is never Linux-only."""
    condition = re.sub(r"\s+", "", condition)
    if "||" in condition:
        return all(is_linux_only(part) for part in condition.split("||"))
    return any(
        LINUX_TERM.match(part.lstrip("(")) and "!" not in part for part in condition.split("&&"))


class Scanner:
    """Splits Swift source into code and string-literal text, line by line, skipping comments."""

    def __init__(self):
        self.in_block_comment = 0
        self.in_multiline_string = False

    def split(self, line: str):
        code, strings = [], []
        index = 0
        in_string = self.in_multiline_string
        while index < len(line):
            if self.in_block_comment:
                end = line.find("*/", index)
                start = line.find("/*", index)
                if start != -1 and (end == -1 or start < end):
                    self.in_block_comment += 1
                    index = start + 2
                elif end != -1:
                    self.in_block_comment -= 1
                    index = end + 2
                else:
                    break
                continue
            if in_string:
                if line.startswith('"""', index) and self.in_multiline_string:
                    self.in_multiline_string = in_string = False
                    index += 3
                elif line[index] == "\\":
                    strings.append(line[index:index + 2])
                    index += 2
                elif line[index] == '"' and not self.in_multiline_string:
                    in_string = False
                    index += 1
                else:
                    strings.append(line[index])
                    index += 1
                continue
            if line.startswith("//", index):
                break
            if line.startswith("/*", index):
                self.in_block_comment += 1
                index += 2
            elif line.startswith('"""', index):
                self.in_multiline_string = in_string = True
                index += 3
            elif line[index] == '"':
                in_string = True
                strings.append(" ")
                index += 1
            else:
                code.append(line[index])
                index += 1
        return "".join(code), "".join(strings)


def findings(path: pathlib.Path):
    # Each open `#if`: [is the current branch Linux-only, has an earlier branch been Linux-only].
    branches = []
    scanner = Scanner()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        stripped = line.strip()
        if not scanner.in_block_comment and not scanner.in_multiline_string:
            directive = re.match(r"#(if|elseif|else|endif)\b(.*)", stripped)
            if directive:
                kind, condition = directive.group(1), directive.group(2).split("//")[0]
                if kind == "if":
                    branches.append(is_linux_only(condition))
                elif kind == "elseif" and branches:
                    branches[-1] = is_linux_only(condition)
                elif kind == "else" and branches:
                    branches[-1] = False
                elif kind == "endif" and branches:
                    branches.pop()
                continue
        code, strings = scanner.split(line)
        if any(branches):
            continue
        if KERNEL_FILES.search(strings):
            yield number, "a /proc or /sys path outside `#if os(Linux)`"
        if GLIBC_MODULE.search(code):
            yield number, "Glibc outside `#if canImport(Glibc)` / `#if os(Linux)`"
        match = GLIBC_ONLY_PATTERN.search(code)
        if match:
            yield number, f"`{match.group(1)}` (Glibc only) outside `#if os(Linux)` / `#if canImport(Glibc)`"


def main(arguments):
    folders = arguments or ["Sources", "Benchmarks"]
    found = 0
    for folder in folders:
        for path in sorted(pathlib.Path(folder).rglob("*.swift")):
            if ".build" in path.parts:
                continue
            for number, what in findings(path):
                print(f"{path}:{number}: {what}")
                found += 1
    if found:
        print(f"{found} Linux-only call(s) without an `#if` and an Apple path (see Tests/Lint/linux-only-calls.py)",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
