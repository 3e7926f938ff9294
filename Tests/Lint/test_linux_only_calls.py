#!/usr/bin/env python3
"""The Linux-only-call check (linux-only-calls.py) on planted lines: each unguarded call is found,
each guarded one and each comment is not. Run by `make lint` before the check itself."""

import pathlib
import sys
import tempfile
import unittest

import planted

check = planted.load("linux-only-calls.py")


def lines_found(source: str) -> list[int]:
    return planted.lines_found(check, source)


class UnguardedCallsAreFound(unittest.TestCase):
    def test_a_proc_path_in_a_string(self):
        self.assertEqual(lines_found('let exe = URL(fileURLWithPath: "/proc/self/exe")\n'), [1])

    def test_a_sys_path_in_an_interpolated_string(self):
        self.assertEqual(lines_found('let file = "/sys/fs/cgroup\\(group)/memory.pressure"\n'), [1])

    def test_import_glibc(self):
        self.assertEqual(lines_found("import Foundation\nimport Glibc\n"), [2])

    def test_a_glibc_prefix(self):
        self.assertEqual(lines_found("let fd = Glibc.open(path, O_RDONLY)\n"), [1])

    def test_a_glibc_only_function(self):
        self.assertEqual(lines_found("_ = posix_fallocate(fd, 0, size)\n"), [1])

    def test_the_else_branch_of_a_linux_guard_is_the_apple_path(self):
        source = '#if os(Linux)\n    let a = "/proc/self/fd"\n#else\n    let a = "/proc/self/fd"\n#endif\n'
        self.assertEqual(lines_found(source), [4])

    def test_a_guard_for_another_system(self):
        source = "#if os(Linux) || os(macOS)\n    import Glibc\n#endif\n#if !os(Linux)\n    import Glibc\n#endif\n"
        self.assertEqual(lines_found(source), [2, 5])

    def test_a_multiline_string(self):
        self.assertEqual(lines_found('let text = """\n    read /proc/meminfo\n    """\n'), [2])


class GuardedCallsAndCommentsPass(unittest.TestCase):
    def test_linux_guards(self):
        source = (
            "#if canImport(Glibc)\n    import Glibc\n#elseif canImport(Darwin)\n    import Darwin\n#endif\n"
            '#if os(Linux)\n    let fd = Glibc.open("/proc/self/fd/3", O_RDONLY)\n#endif\n'
            "#if DEBUG\n    #if os(Linux) && arch(x86_64)\n        _ = posix_fallocate(fd, 0, 1)\n    #endif\n#endif\n"
            "#if os(macOS)\n#elseif os(Linux) || os(Android)\n    _ = syncfs(fd)\n#endif\n"
        )
        self.assertEqual(lines_found(source), [])

    def test_comments_and_words_that_only_look_alike(self):
        source = (
            "// reads /proc/self/exe, like Glibc.open\n"
            "/// The kernel's `/sys/fs/cgroup` file (see `import Glibc`).\n"
            "/* posix_fallocate(fd) */\n"
            'let url = "https://example.com/proc"  // no trailing slash: not the kernel\'s folder\n'
            "let myposix_fallocate = 1\n"
            "store.fallocateLater()\n"
        )
        self.assertEqual(lines_found(source), [])


class TheCommandFailsListingThem(unittest.TestCase):
    def test_exit_status_and_listing(self):
        with tempfile.TemporaryDirectory() as folder:
            source = pathlib.Path(folder) / "Sources" / "Planted.swift"
            source.parent.mkdir()
            source.write_text('let exe = "/proc/self/exe"\n', encoding="utf-8")
            self.assertEqual(check.main([str(source.parent)]), 1)
            source.write_text('#if os(Linux)\n    let exe = "/proc/self/exe"\n#endif\n', encoding="utf-8")
            self.assertEqual(check.main([str(source.parent)]), 0)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False, verbosity=1).result.wasSuccessful() else 1)
