#!/usr/bin/env python3
"""The released-temporary-folders check on planted sources: a folder whose URL or child is read
from the initializer's value is found; a kept folder, and the words in a comment or a string, are
not. Run by `make lint` before the check itself."""

import unittest

import planted

check = planted.load("released-temporary-folders.py")


def lines_found(source: str) -> list[int]:
    return planted.lines_found(check, source)


class FoldersReleasedAtOnceAreFound(unittest.TestCase):
    def test_the_url_of_a_folder_not_kept(self):
        source = "let a = 1\nlet store = try await engine.open(try TemporaryFolder().url)\n"
        self.assertEqual(lines_found(source), [2])

    def test_a_child_of_a_folder_not_kept(self):
        self.assertEqual(lines_found("let path = try TemporaryFolder() .child(\"db\")\n"), [1])

    def test_a_folder_in_parentheses_or_assigned_to_nothing(self):
        source = "let url = (try TemporaryFolder()).url\n_ = try TemporaryFolder()\n"
        self.assertEqual(lines_found(source), [1, 2])

    def test_a_kept_folder_is_not_a_finding(self):
        source = "let folder = try TemporaryFolder()\nlet store = try await engine.open(folder.url)\n"
        self.assertEqual(lines_found(source), [])

    def test_a_comment_or_a_string_is_not_a_finding(self):
        source = "// try TemporaryFolder().url\nlet s = \"TemporaryFolder().url\"\n"
        self.assertEqual(lines_found(source), [])


if __name__ == "__main__":
    unittest.main()
