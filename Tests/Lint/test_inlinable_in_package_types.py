#!/usr/bin/env python3
"""The inlinable-in-package-types check on planted sources: each `@inlinable` member of a package
type (or of an extension of one, or of a type nested in one) is found; those of public types, and
the attribute in a comment or a string, are not. Run by `make lint` before the check itself."""

import pathlib
import tempfile
import unittest

import planted

check = planted.load("inlinable-in-package-types.py")


def lines_found(source: str, other: str = "") -> list[int]:
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "Planted.swift"
        path.write_text(source, encoding="utf-8")
        (pathlib.Path(folder) / "Other.swift").write_text(other, encoding="utf-8")
        names = check.package_types(sorted(pathlib.Path(folder).glob("*.swift")))
        return [number for number, _ in check.findings(path, names)]


class InlinableMembersOfPackageTypesAreFound(unittest.TestCase):
    def test_a_package_struct(self):
        source = "package struct Heap {\n    @inlinable package func insert() {}\n}\n"
        self.assertEqual(lines_found(source), [2])

    def test_a_frozen_generic_package_struct(self):
        source = "@frozen\npackage struct Heap<E: Comparable> {\n    @inlinable\n    package init() {}\n}\n"
        self.assertEqual(lines_found(source), [3])

    def test_a_package_final_class_and_always_emit(self):
        source = "package final class Lock {\n    @_alwaysEmitIntoClient package func with() {}\n}\n"
        self.assertEqual(lines_found(source), [2])

    def test_an_extension_of_a_package_type_declared_elsewhere(self):
        other = "package struct Lexer {}\n"
        source = "extension Lexer {\n    @inlinable package func step() {}\n}\n"
        self.assertEqual(lines_found(source, other), [2])

    def test_a_public_type_nested_in_a_package_type(self):
        source = "package struct Outer {\n    public struct Inner {\n        @inlinable func f() {}\n    }\n}\n"
        self.assertEqual(lines_found(source), [3])


    def test_modifiers_before_the_access_word(self):
        self.assertEqual(lines_found("final package class Lock {\n    @inlinable package func f() {}\n}\n"), [2])
        self.assertEqual(lines_found("indirect package enum E {\n    @inlinable package func f() {}\n}\n"), [2])

    def test_an_extension_of_a_package_protocol(self):
        other = "package protocol Reader {\n    init()\n}\n"
        source = "extension Reader {\n    @inlinable package static func read() {}\n}\n"
        self.assertEqual(lines_found(source, other), [2])

    def test_after_a_multi_line_string_with_a_brace(self):
        source = 'package struct S {\n    let t = """\n    }\n    """\n    @inlinable package func f() {}\n}\n'
        self.assertEqual(lines_found(source), [5])


class OthersAreNot(unittest.TestCase):
    def test_a_public_type_with_package_members(self):
        source = "public struct Heap {\n    @inlinable package func insert() {}\n}\n"
        self.assertEqual(lines_found(source), [])

    def test_after_a_package_type_closes(self):
        source = "package struct A {\n    func f() { if true { } }\n}\npublic struct B {\n    @inlinable func g() {}\n}\n"
        self.assertEqual(lines_found(source), [])

    def test_an_extension_of_a_public_type(self):
        source = "extension String {\n    @inlinable package func count() -> Int { 0 }\n}\n"
        self.assertEqual(lines_found(source), [])

    def test_in_a_comment_or_a_string(self):
        source = (
            "package struct A {\n    // @inlinable would do nothing here\n    /// @inlinable\n"
            '    let s = "@inlinable {"\n    func f() {}\n}\n'
        )
        self.assertEqual(lines_found(source), [])


if __name__ == "__main__":
    unittest.main()
