import Foundation
import SovariaTestEngines
import Testing

/// `load`, `compact` and `verify` on plain stores.
@Suite struct StoreCommandTests {
    private func writeLines(_ lines: [String], to path: String) throws {
        try Data(lines.joined(separator: "\n").utf8).write(to: URL(fileURLWithPath: path))
    }

    @Test func loadKeepsExistingValuesUnlessOverwriteWithYes() async throws {
        let folder = try Fixtures.Folder()
        let store = Fixtures.url("sqlite", in: folder, name: "store")
        let first = folder.file("first.jsonl")
        let second = folder.file("second.jsonl")
        try writeLines([#"{"key":"a","value":"1"}"#, #"{"key":"b","value":"2"}"#], to: first)
        try writeLines([#"{"key":"a","value":"new"}"#, #"{"key":"c","value":"3"}"#], to: second)
        #expect(try await CommandRunner.run(["load", store], inputFile: first).status == 0)

        let keeping = try await CommandRunner.run(["load", store], inputFile: second)
        #expect(keeping.status == 0)
        #expect(keeping.errors.contains("wrote 1 entries, kept 1"))
        #expect(
            try await CommandRunner.run(["dump", store]).lines == [
                #"{"key":"a","value":"1"}"#, #"{"key":"b","value":"2"}"#, #"{"key":"c","value":"3"}"#,
            ])

        let unconfirmed = try await CommandRunner.run(["load", store, "--overwrite"], inputFile: second)
        #expect(unconfirmed.status == 2)
        #expect(unconfirmed.errors.contains("--yes"))
        let replacing = try await CommandRunner.run(["load", store, "--overwrite", "--yes"], inputFile: second)
        #expect(replacing.status == 0)
        #expect(try await CommandRunner.run(["dump", store]).lines.first == #"{"key":"a","value":"new"}"#)
    }

    @Test func loadStopsAtALineThatIsNotAnEntry() async throws {
        let folder = try Fixtures.Folder()
        let store = Fixtures.url("lmdb", in: folder, name: "store")
        let input = folder.file("bad.jsonl")
        try writeLines([#"{"key":"a","value":"1"}"#, #"{"key":"b"}"#], to: input)
        let run = try await CommandRunner.run(["load", store], inputFile: input)
        #expect(run.status == 1)
        #expect(run.errors.contains("Line 2"))
    }

    @Test func verifyNamesADamagedEntryFileAndExitsFour() async throws {
        let folder = try Fixtures.Folder()
        let store = "file:" + folder.file("store")
        let input = folder.file("two.jsonl")
        try writeLines(
            [#"{"key":"sov:a","value":"first value"}"#, #"{"key":"sov:b","value":"second value"}"#], to: input)
        #expect(try await CommandRunner.run(["load", store], inputFile: input).status == 0)
        #expect(try await CommandRunner.run(["verify", store]).status == 0)
        // One letter of one entry file changed, as a bad disk would: found by the file whose bytes hold the value.
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.file("store"))
        let damaged = try #require(
            files.map { folder.file("store/" + $0) }.first { path in
                (FileManager.default.contents(atPath: path) ?? Data()).range(of: Data("second".utf8)) != nil
            })
        var bytes = try Data(contentsOf: URL(fileURLWithPath: damaged))
        let range = try #require(bytes.range(of: Data("second".utf8)))
        bytes[range.lowerBound] = UInt8(ascii: "S")
        try bytes.write(to: URL(fileURLWithPath: damaged))

        let run = try await CommandRunner.run(["verify", store])
        #expect(run.status == 4)
        #expect(run.errors.contains("sov:b: corrupt"))
        #expect(!run.errors.contains("sov:a: corrupt"))
        #expect(run.errors.contains("read 1 entries"))
    }

    @Test(arguments: TestEngine.onDisk)
    func compactAndVerifyKeepEveryEntry(engine: String) async throws {
        let folder = try Fixtures.Folder()
        let store = Fixtures.url(engine, in: folder, name: "store")
        #expect(
            try await CommandRunner.run(["load", store], inputFile: try Fixtures.inputFile(in: folder)).status == 0)
        let before = try await CommandRunner.run(["dump", store])

        let compact = try await CommandRunner.run(["compact", store])
        #expect(compact.status == 0, "\(compact.errors)")
        #expect(compact.errors.contains("bytes on disk before"))
        let verify = try await CommandRunner.run(["verify", store, "--json"])
        #expect(verify.status == 0, "\(verify.errors)")
        #expect(verify.lines.first?.contains(#""entries":2000"#) == true)
        #expect(verify.lines.first?.contains(#""problems":0"#) == true)
        let after = try await CommandRunner.run(["dump", store])
        #expect(Data(after.output.utf8) == Data(before.output.utf8))
    }
}
