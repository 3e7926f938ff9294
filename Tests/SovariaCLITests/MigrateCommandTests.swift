import Foundation
import Sovaria
import SovariaQueue
import SovariaSQLite
import SovariaTestServers
import Testing

/// `sovaria load`, `migrate` and `dump` between every pair of engines, and a migrate stopped
/// halfway (SIGINT, SIGKILL) then resumed.
@Suite struct MigrateCommandTests {
    /// Loads the generated set into a store of `engine`; returns its URL.
    private func loadedSource(
        _ engine: String, in folder: Fixtures.Folder, key: String,
        entries: [(key: String, value: Data)] = Fixtures.entries
    ) async throws -> String {
        let source = Fixtures.url(engine, in: folder, name: "source")
        let load = try await CommandRunner.run(
            ["load", source, "--key-file", key], inputFile: try Fixtures.inputFile(in: folder, entries: entries))
        try #require(load.status == 0, "load failed: \(load.errors)")
        return source
    }

    @Test(arguments: Fixtures.engines)
    func migratesToEveryOtherEngineAndDumpsAlike(sourceEngine: String) async throws {
        let folder = try Fixtures.Folder()
        let key = try Fixtures.keyFile(in: folder)
        let source = try await loadedSource(sourceEngine, in: folder, key: key, entries: Fixtures.pairEntries)
        let sourceDump = try await CommandRunner.run(["dump", source, "--decrypt", "--key-file", key])
        #expect(sourceDump.status == 0)
        // Compared as one Bool: a failure message listing thousands of entries' bytes helps nobody.
        let dumpsTheGeneratedSet =
            try Fixtures.parseDump(sourceDump.output) == Fixtures.dump(of: Fixtures.pairEntries)
        #expect(dumpsTheGeneratedSet, "\(sourceEngine): dump differs from the loaded set, in byte order")

        for targetEngine in Fixtures.engines where targetEngine != sourceEngine {
            let target = Fixtures.url(targetEngine, in: folder, name: "target-" + targetEngine)
            let migrate = try await CommandRunner.run(
                ["migrate", "--from", source, "--to", target, "--key-file", key, "--verify"])
            #expect(migrate.status == 0, "\(sourceEngine) → \(targetEngine): \(migrate.errors)")
            let targetDump = try await CommandRunner.run(["dump", target, "--decrypt", "--key-file", key])
            #expect(targetDump.status == 0)
            #expect(
                Data(targetDump.output.utf8) == Data(sourceDump.output.utf8),
                "\(sourceEngine) → \(targetEngine): the dumps differ")
        }
    }

    @Test func copiesTwoAccountsQueuesWhole() async throws {
        let folder = try Fixtures.Folder()
        let sourcePath = folder.file("accounts.sqlite")
        let alice = try AccountID("alice@example.com")
        let bob = try AccountID("bob")
        var sourceQueues: [AccountID: (pending: [QueuedWrite], rejected: [RejectedWrite])] = [:]
        do {
            let store = try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: sourcePath))
            for (account, edits) in [(alice, ["a1", "a2", "a3"]), (bob, ["b1", "b2"])] {
                let queue = try await WriteQueue(store: AccountScopedStore(wrapping: store, account: account))
                for edit in edits {
                    try await queue.enqueue(
                        DataRequest(method: "PATCH", path: "/rest/v1/notes?id=eq.\(edit)", body: edit))
                }
                let first = try #require(try await queue.pending().first)
                try #require(try await queue.reject(first.id, status: 409, message: "conflict") != nil)
                sourceQueues[account] = (try await queue.pending(), try await queue.rejected())
            }
        }
        let target = folder.file("target")
        let migrate = try await CommandRunner.run(
            ["migrate", "--from", "sqlite:" + sourcePath, "--to", "file:" + target, "--verify"])
        #expect(migrate.status == 0, "\(migrate.errors)")

        let copied = FileOfflineStore(directory: URL(fileURLWithPath: target))
        #expect(try await AccountScopedStore.accounts(in: copied) == [alice, bob])
        for account in [alice, bob] {
            let queue = try await WriteQueue(store: AccountScopedStore(wrapping: copied, account: account))
            let source = try #require(sourceQueues[account])
            #expect(source.pending.count == (account == alice ? 2 : 1))
            #expect(try await queue.pending() == source.pending, "\(account): the queue arrived in order")
            #expect(try await queue.rejected() == source.rejected, "\(account): the rejected list arrived")
        }
    }

    @Test func keepsKeysTheTargetAlreadyHas() async throws {
        let folder = try Fixtures.Folder()
        let input = folder.file("one.jsonl")
        try Data(#"{"key":"sov:cache:l:0","value":"the target's own"}"#.utf8).write(to: URL(fileURLWithPath: input))
        let source = try await loadedSource("sqlite", in: folder, key: try Fixtures.keyFile(in: folder))
        let target = Fixtures.url("lmdb", in: folder, name: "target")
        #expect(try await CommandRunner.run(["load", target], inputFile: input).status == 0)

        let migrate = try await CommandRunner.run(["migrate", "--from", source, "--to", target, "--json"])
        #expect(migrate.status == 0)
        let done = try #require(migrate.lines.last)
        #expect(done.contains(#""event":"done""#) && done.contains(#""copied":1999"#) && done.contains(#""kept":1"#))
        let dump = try await CommandRunner.run(["dump", target, "--prefix", "sov:cache:l:0"])
        #expect(dump.lines.first == #"{"key":"sov:cache:l:0","value":"the target's own"}"#)
    }

    @Test func overwriteNeedsYesOffATerminalAndThenReplacesValues() async throws {
        let folder = try Fixtures.Folder()
        let input = folder.file("one.jsonl")
        try Data(#"{"key":"sov:cache:l:0","value":"the target's own"}"#.utf8).write(to: URL(fileURLWithPath: input))
        let source = try await loadedSource("lmdb", in: folder, key: try Fixtures.keyFile(in: folder))
        let target = Fixtures.url("file", in: folder, name: "target")
        #expect(try await CommandRunner.run(["load", target], inputFile: input).status == 0)

        let unconfirmed = try await CommandRunner.run(["migrate", "--from", source, "--to", target, "--overwrite"])
        #expect(unconfirmed.status == 2)
        #expect(unconfirmed.errors.contains("--yes"))
        let kept = try await CommandRunner.run(["dump", target])
        #expect(kept.lines == [#"{"key":"sov:cache:l:0","value":"the target's own"}"#], "nothing was written")

        let confirmed = try await CommandRunner.run(
            ["migrate", "--from", source, "--to", target, "--overwrite", "--yes", "--verify"])
        #expect(confirmed.status == 0, "\(confirmed.errors)")
        let sourceDump = try await CommandRunner.run(["dump", source])
        let targetDump = try await CommandRunner.run(["dump", target])
        #expect(Data(targetDump.output.utf8) == Data(sourceDump.output.utf8))
    }

    @Test func dryRunWritesNothing() async throws {
        let folder = try Fixtures.Folder()
        let source = try await loadedSource("leveldb", in: folder, key: try Fixtures.keyFile(in: folder))
        let target = Fixtures.url("sqlite", in: folder, name: "target")
        let run = try await CommandRunner.run(["migrate", "--from", source, "--to", target, "--dry-run", "--json"])
        #expect(run.status == 0)
        #expect(run.lines.last?.contains(#""copied":2000"#) == true)
        #expect(!FileManager.default.fileExists(atPath: folder.file("target.sqlite")))
    }

    /// Starts a migrate printing one event per page of one entry, reads its first page, stops it
    /// with `signal` and returns how it ended. The child cannot finish first: it blocks writing
    /// events once the pipe (64 KiB, about 700 events of 2,000) is full and nobody reads.
    private func migrateStopped(
        by signal: Int32, from source: String, to target: String
    ) async throws
        -> CommandRunner.Run
    {
        try await SovariaTestServers.PostgresCluster.onThread {
            let started = try CommandRunner.start(
                ["migrate", "--from", source, "--to", target, "--batch", "1", "--json"])
            let seen = CommandRunner.readUntil(#""event":"progress""#, from: started)
            started.process.send(signal)
            var output = seen
            output.append(started.process.output?.readDataToEndOfFile() ?? Data())
            return CommandRunner.finish(started, output: output)
        }
    }

    @Test func interruptedMigrateExitsSixAndResumes() async throws {
        let folder = try Fixtures.Folder()
        let source = try await loadedSource("file", in: folder, key: try Fixtures.keyFile(in: folder))
        let target = Fixtures.url("leveldb", in: folder, name: "target") + "?durability=flushed"

        let stopped = try await migrateStopped(by: SIGINT, from: source, to: target)
        #expect(stopped.status == 6, "\(stopped.errors)")
        #expect(stopped.errors.contains("--resume"))
        let partial = try await CommandRunner.run(["dump", target, "--prefix", "sov:meta:migrate:"])
        #expect(partial.lines.count == 1, "the checkpoint stays in the target")

        let resumed = try await CommandRunner.run(["migrate", "--from", source, "--to", target, "--resume", "--json"])
        #expect(resumed.status == 0, "\(resumed.errors)")
        #expect(resumed.lines.first?.contains(#""resumeAfter":"""#) == false, "it resumed after a checkpoint")
        let sourceDump = try await CommandRunner.run(["dump", source])
        let targetDump = try await CommandRunner.run(["dump", target])
        #expect(Data(targetDump.output.utf8) == Data(sourceDump.output.utf8))
    }

    @Test func killedMigrateResumesToTheSourceEntries() async throws {
        let folder = try Fixtures.Folder()
        let source = try await loadedSource("lmdb", in: folder, key: try Fixtures.keyFile(in: folder))
        let target = Fixtures.url("sqlite", in: folder, name: "target") + "?durability=flushed"

        let killed = try await migrateStopped(by: SIGKILL, from: source, to: target)
        #expect(killed.status == nil, "SIGKILL ended it")
        let partial = try await CommandRunner.run(["dump", target])
        #expect(partial.lines.count > 1 && partial.lines.count < 2_001, "killed halfway: \(partial.lines.count)")

        let resumed = try await CommandRunner.run(["migrate", "--from", source, "--to", target, "--resume", "--json"])
        #expect(resumed.status == 0, "\(resumed.errors)")
        #expect(resumed.lines.first?.contains(#""resumeAfter":"""#) == false, "it resumed after a checkpoint")
        let sourceDump = try await CommandRunner.run(["dump", source])
        let targetDump = try await CommandRunner.run(["dump", target])
        #expect(Data(targetDump.output.utf8) == Data(sourceDump.output.utf8))
    }
}
