import Foundation
import Testing

/// The exit statuses scripts branch on, and the messages that go with them.
@Suite struct CommandErrorTests {
    @Test(arguments: [
        [String](),
        ["frobnicate"],
        ["dump"],
        ["dump", "memory:", "--colour"],
        ["migrate", "--from", "memory:"],
        ["migrate", "--from", "memory:", "--to", "memory:", "--batch", "0"],
        ["load", "memory:", "extra:"],
        ["migrate", "--from", "sqlite:/tmp/same.sqlite", "--to", "sqlite:/tmp/same.sqlite"],
    ])
    func usageErrorsExitTwo(arguments: [String]) async throws {
        let run = try await CommandRunner.run(arguments)
        #expect(run.status == 2, "\(arguments): \(run.errors)")
        #expect(run.errors.hasPrefix("sovaria") || run.errors.contains("Commands:"))
        #expect(run.output.isEmpty)
    }

    @Test(arguments: [
        ("nosuch:/tmp/x", "nosuch"), ("no-colon", "ENGINE:"), ("sqlite:", "sqlite:"),
        ("sqlite:/tmp/x?durability=often", "often"), ("encrypted+zip:/x", "zip"),
    ])
    func badURLExitsTwoNamingTheBadPartAndPointingToTheForms(url: String, part: String) async throws {
        let run = try await CommandRunner.run(["dump", url])
        #expect(run.status == 2)
        #expect(run.errors.contains("is not a store URL"), "\(run.errors)")
        #expect(run.errors.contains("`\(part)`"), "names the bad part: \(run.errors)")
        #expect(run.errors.contains("`sovaria help` lists the forms"), "\(run.errors)")
        #expect(!run.errors.contains("leveldb:DIR"), "the table of forms stays in `sovaria help`: \(run.errors)")
        #expect(run.errors.split(separator: "\n").count == 1, "one line: \(run.errors)")
    }

    /// A key that is refused creates no store: not the plain database an encrypted one was meant
    /// to be (issue 47).
    @Test func aRefusedKeyCreatesNoStore() async throws {
        let folder = try Fixtures.Folder()
        let input = try Fixtures.inputFile(in: folder)
        let short = folder.file("short-key")
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: short))
        let url = "encrypted+sqlite:" + folder.file("secret.sqlite")
        for keyOptions in [[], ["--key-file", short], ["--key-file", folder.file("absent-key")]] {
            let run = try await CommandRunner.run(["load", url] + keyOptions, environment: [:], inputFile: input)
            #expect(run.status == 2, "\(keyOptions): \(run.errors)")
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
            #expect(files == [URL(fileURLWithPath: input).lastPathComponent, "short-key"], "\(keyOptions): \(files)")
        }
    }

    @Test func missingStoreExitsThree() async throws {
        let folder = try Fixtures.Folder()
        let run = try await CommandRunner.run(["dump", "lmdb:" + folder.file("absent")])
        #expect(run.status == 3)
        #expect(run.errors.contains("no store at"))
        #expect(!FileManager.default.fileExists(atPath: folder.file("absent")), "dump creates nothing")
    }

    private func encryptedStore(
        in folder: Fixtures.Folder, environment: [String: String] = [:], keyFile: String?
    )
        async throws -> String
    {
        let url = "encrypted+sqlite:" + folder.file("secret.sqlite")
        let input = folder.file("secret.jsonl")
        try Data(#"{"key":"sov:cache:a","value":"secret value"}"#.utf8).write(to: URL(fileURLWithPath: input))
        let load = try await CommandRunner.run(
            ["load", url] + (keyFile.map { ["--key-file", $0] } ?? []), environment: environment, inputFile: input)
        try #require(load.status == 0, "\(load.errors)")
        return url
    }

    @Test func wrongKeyFileExitsSeven() async throws {
        let folder = try Fixtures.Folder()
        let url = try await encryptedStore(in: folder, keyFile: try Fixtures.keyFile(in: folder))
        let wrong = try Fixtures.keyFile(in: folder, name: "wrong", byte: 99)
        let run = try await CommandRunner.run(["dump", url, "--decrypt", "--key-file", wrong])
        #expect(run.status == 7)
        #expect(run.errors.contains("key does not open"))
        #expect(!run.output.contains("secret value"))
    }

    @Test func anEncryptedStoreWhoseFirstValueIsBytesOpensAndDumpsIt() async throws {
        let folder = try Fixtures.Folder()
        let keyFile = try Fixtures.keyFile(in: folder)
        let url = "encrypted+sqlite:" + folder.file("bytes.sqlite")
        let input = folder.file("bytes.jsonl")
        try Data(#"{"key":"a","base64":"/wA="}"#.utf8).write(to: URL(fileURLWithPath: input))
        let load = try await CommandRunner.run(["load", url, "--key-file", keyFile], inputFile: input)
        try #require(load.status == 0, "\(load.errors)")
        let dump = try await CommandRunner.run(["dump", url, "--decrypt", "--key-file", keyFile])
        #expect(dump.status == 0, "\(dump.errors)")
        #expect(dump.lines == [#"{"key":"a","base64":"/wA="}"#])
    }

    @Test func wrongPassphraseExitsSeven() async throws {
        let folder = try Fixtures.Folder()
        let url = try await encryptedStore(in: folder, environment: ["SOVARIA_PASSPHRASE": "right horse"], keyFile: nil)
        let right = try await CommandRunner.run(
            ["dump", url, "--decrypt"], environment: ["SOVARIA_PASSPHRASE": "right horse"])
        #expect(right.status == 0)
        #expect(right.output.contains("secret value"))
        let wrong = try await CommandRunner.run(
            ["dump", url, "--decrypt"], environment: ["SOVARIA_PASSPHRASE": "wrong horse"])
        #expect(wrong.status == 7)
        #expect(wrong.errors.contains("passphrase does not open"))
    }

    @Test func encryptedStoreIsNotDumpedWithoutDecrypt() async throws {
        let folder = try Fixtures.Folder()
        let key = try Fixtures.keyFile(in: folder)
        let url = try await encryptedStore(in: folder, keyFile: key)
        let refused = try await CommandRunner.run(["dump", url, "--key-file", key])
        #expect(refused.status == 2)
        #expect(refused.output.isEmpty)
        #expect(refused.errors.contains("--decrypt"))
        let plain = try await CommandRunner.run(["dump", url, "--key-file", key, "--decrypt"])
        #expect(plain.lines == [#"{"key":"sov:cache:a","value":"secret value"}"#])
    }

    @Test func verifyNamesAValueThatDoesNotDecryptAndExitsFour() async throws {
        let folder = try Fixtures.Folder()
        let key = try Fixtures.keyFile(in: folder)
        let url = try await encryptedStore(in: folder, keyFile: key)
        #expect(try await CommandRunner.run(["verify", url, "--key-file", key]).status == 0)
        // A value written past the encryption layer, as a damaged or foreign value would be.
        let input = folder.file("plain.jsonl")
        try Data(#"{"key":"sov:cache:z","value":"not sealed"}"#.utf8).write(to: URL(fileURLWithPath: input))
        let sneak = try await CommandRunner.run(["load", "sqlite:" + folder.file("secret.sqlite")], inputFile: input)
        try #require(sneak.status == 0)

        let run = try await CommandRunner.run(["verify", url, "--key-file", key])
        #expect(run.status == 4)
        #expect(run.errors.contains("sov:cache:z"))
        #expect(!run.errors.contains("sov:cache:a:"), "the good value is not listed")
    }

    @Test func inspectCountsEntriesPerArea() async throws {
        let folder = try Fixtures.Folder()
        let url = Fixtures.url("leveldb", in: folder, name: "store")
        let load = try await CommandRunner.run(["load", url], inputFile: try Fixtures.inputFile(in: folder))
        try #require(load.status == 0)
        let run = try await CommandRunner.run(["inspect", url, "--json"])
        #expect(run.status == 0)
        let report = try #require(
            try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        #expect(report["cacheEntries"] as? Int == 500)
        #expect(report["queueEntries"] as? Int == 500)
        #expect(report["filesEntries"] as? Int == 500)
        #expect(report["otherEntries"] as? Int == 500)
        #expect(report["metaEntries"] as? Int == 0)
        #expect((report["diskBytes"] as? Int ?? 0) > 0)
    }
}
