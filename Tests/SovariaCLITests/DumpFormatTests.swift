import Foundation
import Testing

/// `sovaria dump` and `load` with values that are bytes: text stays `"value"` exactly as before,
/// other bytes go as `"base64"`, and `load` takes either, refusing a line that is neither.
@Suite struct DumpFormatTests {
    /// A store of `engine` in `folder` loaded from `lines` (JSON Lines); returns its URL.
    private func loaded(_ engine: String, in folder: Fixtures.Folder, lines: [String]) async throws -> String {
        let url = Fixtures.url(engine, in: folder, name: "store")
        let input = folder.file("input.jsonl")
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: input))
        let load = try await CommandRunner.run(["load", url], inputFile: input)
        try #require(load.status == 0, "\(load.errors)")
        return url
    }

    /// The documented lines, byte for byte: text (NUL, empty, non-ASCII) as `"value"`, and each
    /// value that is not UTF-8 as padded standard base64.
    @Test func dumpWritesTextAsValueAndOtherBytesAsBase64() async throws {
        let folder = try Fixtures.Folder()
        let url = try await loaded(
            "file", in: folder,
            lines: [
                #"{"key":"a","value":"é\u0000"}"#, #"{"key":"b","value":""}"#, #"{"key":"c","base64":"/w=="}"#,
                #"{"key":"d","base64":"ww=="}"#, #"{"key":"e","base64":"wIA="}"#, #"{"key":"f","base64":"7aCA"}"#,
                #"{"key":"g","base64":"+/8A"}"#,
            ])
        let dump = try await CommandRunner.run(["dump", url])
        #expect(dump.status == 0, "\(dump.errors)")
        #expect(
            dump.lines == [
                #"{"key":"a","value":"é\u0000"}"#, #"{"key":"b","value":""}"#, #"{"key":"c","base64":"/w=="}"#,
                #"{"key":"d","base64":"ww=="}"#, #"{"key":"e","base64":"wIA="}"#, #"{"key":"f","base64":"7aCA"}"#,
                #"{"key":"g","base64":"+/8A"}"#,
            ])
    }

    /// Bytes given as base64 that happen to be UTF-8 are text: they dump as `"value"`, so the form
    /// depends only on the bytes, never on how they were written.
    @Test func bytesThatAreUTF8DumpAsValue() async throws {
        let folder = try Fixtures.Folder()
        let url = try await loaded("file", in: folder, lines: [#"{"key":"k","base64":"aGk="}"#])
        let dump = try await CommandRunner.run(["dump", url])
        #expect(dump.lines == [#"{"key":"k","value":"hi"}"#])
    }

    /// The fixtures (text and binary values) loaded, dumped, loaded into a second store and dumped
    /// again: every value byte-identical, both dumps identical.
    @Test(arguments: Fixtures.engines)
    func dumpThenLoadKeepsEveryByte(engine: String) async throws {
        let folder = try Fixtures.Folder()
        let key = try Fixtures.keyFile(in: folder)
        let first = Fixtures.url(engine, in: folder, name: "first")
        let load = try await CommandRunner.run(
            ["load", first, "--key-file", key], inputFile: try Fixtures.inputFile(in: folder))
        try #require(load.status == 0, "\(load.errors)")
        let dump = try await CommandRunner.run(["dump", first, "--decrypt", "--key-file", key])
        #expect(dump.status == 0, "\(dump.errors)")
        let matchesTheFixtures = try Fixtures.parseDump(dump.output) == Fixtures.expectedDump
        #expect(matchesTheFixtures, "\(engine): the dump differs from the loaded entries")

        let dumpFile = folder.file("dump.jsonl")
        try Data(dump.output.utf8).write(to: URL(fileURLWithPath: dumpFile))
        let second = Fixtures.url(engine, in: folder, name: "second")
        let reload = try await CommandRunner.run(["load", second, "--key-file", key], inputFile: dumpFile)
        #expect(reload.status == 0, "\(reload.errors)")
        let again = try await CommandRunner.run(["dump", second, "--decrypt", "--key-file", key])
        #expect(Data(again.output.utf8) == Data(dump.output.utf8), "\(engine): the second dump differs")
    }

    /// A bad third line: exit 1, the message names line 3 and what is wrong, and nothing is loaded
    /// (the two good lines before it wait for their batch, which never comes).
    @Test(arguments: [
        (#"{"key":"c","value":"v","base64":"dg=="}"#, #"has both "value" and "base64""#),
        (#"{"key":"c"}"#, #"has neither "value" nor "base64""#),
        (#"{"key":"c","base64":"not base64!"}"#, #"has a "base64" that is not base64"#),
        (#"{"key":"c","base64":"/w"}"#, #"has a "base64" that is not base64"#),
        (#"{"key":"c","value":7}"#, #"is not {"key":…,"value":…} or {"key":…,"base64":…}"#),
    ])
    func loadRefusesABadLineNamingIt(line: String, problem: String) async throws {
        let folder = try Fixtures.Folder()
        let url = Fixtures.url("file", in: folder, name: "store")
        let input = folder.file("input.jsonl")
        let lines = [#"{"key":"a","value":"1"}"#, #"{"key":"b","base64":"/w=="}"#, line]
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: input))
        let load = try await CommandRunner.run(["load", url], inputFile: input)
        #expect(load.status == 1)
        #expect(load.errors.contains("Line 3 of standard input " + problem), "\(load.errors)")
        let dump = try await CommandRunner.run(["dump", url])
        #expect(dump.status == 0 && dump.lines.isEmpty, "\(dump.output)")
    }

    /// A line that is not UTF-8 (a dump never writes one) is refused, not repaired into U+FFFD.
    @Test func loadRefusesALineThatIsNotUTF8() async throws {
        let folder = try Fixtures.Folder()
        let url = Fixtures.url("file", in: folder, name: "store")
        let input = folder.file("input.jsonl")
        var bytes = Data(#"{"key":"a","value":"1"}"#.utf8)
        bytes.append(contentsOf: [0x0A] + Array(#"{"key":"b","value":""#.utf8) + [0xFF] + Array(#""}"#.utf8) + [0x0A])
        try bytes.write(to: URL(fileURLWithPath: input))
        let load = try await CommandRunner.run(["load", url], inputFile: input)
        #expect(load.status == 1)
        #expect(load.errors.contains("Line 2 of standard input is not UTF-8"), "\(load.errors)")
    }

    /// `migrate --verify` compares bytes: a target value `"e\u{301}"` kept under a key where the
    /// source has `"é"` is a difference, though Swift's `==` calls the two strings equal.
    @Test func migrateVerifyFindsCanonicallyEquivalentValuesDifferent() async throws {
        let folder = try Fixtures.Folder()
        let sourceFolder = try Fixtures.Folder()
        let source = try await loaded("file", in: sourceFolder, lines: [#"{"key":"k","value":"\u00e9"}"#])
        let target = try await loaded("file", in: folder, lines: [#"{"key":"k","value":"e\u0301"}"#])
        let migrate = try await CommandRunner.run(["migrate", "--from", source, "--to", target, "--verify"])
        #expect(migrate.status == 4, "\(migrate.errors)")
        #expect(migrate.errors.contains("verify: differs: k"), "\(migrate.errors)")
    }

    /// A binary value the target already holds neither stops `migrate` (which learns the target's
    /// keys from byte pages) nor is replaced; `--verify` reports it as the one difference.
    @Test func migrateKeepsABinaryValueTheTargetHas() async throws {
        let folder = try Fixtures.Folder()
        let sourceFolder = try Fixtures.Folder()
        let source = try await loaded(
            "file", in: sourceFolder, lines: [#"{"key":"a","value":"1"}"#, #"{"key":"b","value":"2"}"#])
        let target = try await loaded("file", in: folder, lines: [#"{"key":"a","base64":"/w=="}"#])
        let migrate = try await CommandRunner.run(["migrate", "--from", source, "--to", target, "--json"])
        #expect(migrate.status == 0, "\(migrate.errors)")
        #expect(migrate.lines.last?.contains(#""copied":1,"kept":1"#) == true, "\(migrate.output)")
        let dump = try await CommandRunner.run(["dump", target])
        #expect(dump.lines == [#"{"key":"a","base64":"/w=="}"#, #"{"key":"b","value":"2"}"#])
    }
}
