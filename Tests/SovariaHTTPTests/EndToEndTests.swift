import Foundation
import Sovaria
import SovariaCache
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The offline story against a real PostgreSQL with row-level security, through the real HTTP
/// transport and the PostgREST-style test server (Tests/Server). Each test on SQLite and LevelDB.
@Suite(.serialized) struct EndToEndTests {
    @Test(arguments: HTTPEngine.all)
    func twentyWritesQueuedWhileTheServerIsDownSyncInOrder(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine)
        try await rig.server.stop()
        var writes = [PostgREST.insert(into: "lists", json: #"{"id":"l1","name":"Groceries"}"#)]
        for item in 1...5 { writes.append(insertNote("n\(item)", title: "Item \(item)", list: "l1")) }
        for item in 1...5 {
            writes.append(
                PostgREST.update("notes", where: [.eq("id", "n\(item)")], json: #"{"title":"Item \#(item) v2"}"#))
        }
        for item in [1, 3, 5] {
            writes.append(PostgREST.update("notes", where: [.eq("id", "n\(item)")], json: #"{"done":true}"#))
        }
        writes.append(PostgREST.delete(from: "notes", where: [.eq("id", "n2")]))
        writes.append(PostgREST.update("notes", where: [.eq("id", "n3")], json: #"{"title":"Final"}"#))
        writes.append(insertNote("n6", title: "Short-lived", list: "l1"))
        writes.append(PostgREST.delete(from: "notes", where: [.eq("id", "n6")]))
        writes.append(PostgREST.update("lists", where: [.eq("id", "l1")], json: #"{"name":"Weekly groceries"}"#))
        writes.append(PostgREST.update("notes", where: [.eq("id", "n4")], json: #"{"body":"Two of them"}"#))
        #expect(writes.count == 20)

        var queued: [QueuedWrite] = []
        for write in writes {
            guard case .queued(let entry) = try await rig.offline.write(write) else {
                Issue.record("a write with the server down was not queued")
                return
            }
            queued.append(entry)
        }
        #expect(!rig.offline.online)
        #expect(try await rig.offline.pendingWrites().map(\.id) == queued.map(\.id))

        try await rig.server.start()
        #expect(try await rig.offline.flush() == 20)
        #expect(try await rig.offline.pendingWrites().isEmpty)
        #expect(rig.offline.online)
        #expect(
            try await rig.notes() == [
                "n1|alice|Item 1 v2|true", "n3|alice|Final|true", "n4|alice|Item 4 v2|false",
                "n5|alice|Item 5 v2|true",
            ])
        #expect(try await rig.server.query("SELECT body FROM notes WHERE id = 'n4'") == ["Two of them"])
        #expect(try await rig.server.query("SELECT name FROM lists") == ["Weekly groceries"])
        let received = try await rig.server.requests()
        #expect(received.map(\.idempotencyKey) == queued.map(\.id), "in order, each once, with its client id")
        #expect(try await rig.server.query("SELECT count(*) FROM idempotency_keys") == ["20"])
    }

    @Test(arguments: HTTPEngine.all)
    func aWriteRefusedByRowLevelSecurityIsRejectedAndTheRestSync(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine)
        try await rig.server.stop()
        _ = try await rig.offline.write(insertNote("n1", title: "Mine"))
        _ = try await rig.offline.write(insertNote("n2", title: "Bob's, written by Alice", owner: "bob"))
        _ = try await rig.offline.write(insertNote("n3", title: "Mine too"))
        try await rig.server.start()

        #expect(try await rig.offline.flush() == 2)
        #expect(try await rig.notes() == ["n1|alice|Mine|false", "n3|alice|Mine too|false"])
        let rejected = try await rig.offline.rejectedWrites()
        #expect(rejected.count == 1)
        #expect(rejected.first?.status == 403)
        #expect(rejected.first?.message.contains("42501") == true)
        #expect(rejected.first?.message.contains("row-level security") == true, "PostgreSQL's own message")
        #expect(rejected.first?.write.request.body?.contains("Bob's") == true)
        let reported = rig.errors.all.filter { if case .rejected = $0.kind { true } else { false } }
        #expect(reported.map(\.write.id) == rejected.map(\.write.id))
        #expect(try await rig.offline.pendingWrites().isEmpty)
    }

    @Test(arguments: HTTPEngine.all)
    func a503WithRetryAfterKeepsTheHeadUntilTheDelayPasses(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine)
        try await rig.server.stop()
        _ = try await rig.offline.write(insertNote("n1", title: "Waits"))
        try await rig.server.start()
        try await rig.server.control("POST", "/_test/fail", json: #"{"status":503,"retry_after":120,"count":1}"#)

        #expect(try await rig.offline.flush() == 0)
        #expect(try await rig.offline.pendingWrites().count == 1)
        #expect(
            rig.errors.all.contains { $0.kind == .retryLater(status: 503, retryAfter: .seconds(120)) },
            "\(rig.errors.all.map(\.kind))")
        let sent = try await rig.server.requests().count
        rig.clock.advance(seconds: 119)
        #expect(try await rig.offline.flush() == 0, "the delay has not passed")
        #expect(try await rig.server.requests().count == sent, "nothing was sent before the delay")
        rig.clock.advance(seconds: 2)
        #expect(try await rig.offline.flush() == 1)
        #expect(try await rig.notes() == ["n1|alice|Waits|false"])
    }

    @Test(arguments: HTTPEngine.all)
    func a401RefreshesTheTokenAndTheWriteSucceeds(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine)
        try await rig.server.control("POST", "/_test/expire", json: #"{"token":"token-alice"}"#)
        let outcome = try await rig.offline.write(insertNote("n1", title: "After a refresh"))
        guard case .sent(let response) = outcome else {
            Issue.record("expected the write to be sent, got \(outcome)")
            return
        }
        #expect(response.status == 201)
        #expect(rig.tokens.refreshes == 1)
        #expect(try await rig.server.requests().map(\.status) == [401, 201])
        #expect(try await rig.notes() == ["n1|alice|After a refresh|false"])
    }

    @Test(arguments: HTTPEngine.all)
    func aKillAfterTheServerAppliedAWriteReplaysItWithTheSameKeyOnce(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine)
        // The child's first send gets 503 (so the write is queued); its flush is applied and the
        // answer held back until the child is dead.
        try await rig.server.control("POST", "/_test/fail", json: #"{"status":503,"count":1}"#)
        try await rig.server.control("POST", "/_test/fail", json: #"{"hold":true,"count":1}"#)
        // The app's store, in a folder of its own (the rig's controller holds the rig's store).
        let appFolder = rig.folder.child("app")
        let child = try ChildProcess(
            CrashWriterBinary.url.path, ["http-\(engine.name)", appFolder.path, "flushed", String(rig.server.port)],
            captureOutput: false)
        let (heldStatus, _) = try await rig.server.control("GET", "/_test/held")
        #expect(heldStatus == 200, "the server applied the child's write")
        child.send(SIGKILL)
        #expect(ChildProcess.killed(try await child.wait(), by: SIGKILL), "killed, not finished")
        try await rig.server.control("POST", "/_test/release")
        #expect(try await rig.server.query("SELECT count(*) FROM notes") == ["1"], "applied before the kill")

        // The app starts again on the same store.
        let offline = try await HTTPRig.controller(
            await rig.engine.open(appFolder), transport: rig.transport, timer: rig.timer, clock: rig.clock,
            errors: rig.errors)
        let pending = try await offline.pendingWrites()
        #expect(pending.count == 1, "the write the server applied is still queued")
        #expect(try await offline.flush() == 1)
        #expect(try await offline.pendingWrites().isEmpty)
        #expect(try await rig.notes() == ["crash-1|alice|Written before the kill|false"], "once")
        #expect(try await rig.server.query("SELECT count(*) FROM idempotency_keys") == ["1"])
        let received = try await rig.server.requests()
        #expect(received.map(\.idempotencyKey) == Array(repeating: pending.first?.id, count: 3), "one key on every try")
        #expect(received.last?.replayed == true, "the replay was recognised, not applied again")
    }

    @Test(arguments: HTTPEngine.all)
    func readsAreCachedServedOfflineRevalidatedAndMadeStaleByWrites(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine)
        _ = try await rig.offline.write(insertNote("n1", title: "First"))
        let select = PostgREST.select("notes", columns: "id,title", order: "id")
        let fetched = try await rig.offline.read(select)
        #expect(fetched.source == .network)
        #expect(fetched.response?.body.contains("First") == true)

        try await rig.server.stop()
        rig.clock.advance(seconds: 60)
        let offlineRead = try await rig.offline.read(select, maxAge: .seconds(30))
        #expect(offlineRead.source != .network)
        #expect(offlineRead.response?.body == fetched.response?.body, "offline, the last cached rows")
        #expect(!rig.offline.online)

        try await rig.server.start()
        let revalidated = try await rig.offline.read(select, policy: .networkOnly)
        #expect(try await rig.server.requests().last?.status == 304, "the cached ETag was sent")
        #expect(revalidated.response?.body == fetched.response?.body, "a 304 keeps the cached body")

        _ = try await rig.offline.write(
            PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"title":"Second"}"#))
        let afterWrite = try await rig.offline.read(select)
        #expect(afterWrite.source == .network, "a write to notes made its cached lists stale")
        #expect(afterWrite.response?.body.contains("Second") == true)
    }
}

/// The crash writer binary, built beside this test bundle.
enum CrashWriterBinary {
    static var url: URL {
        if let path = ProcessInfo.processInfo.environment["SOVARIA_CRASH_WRITER"] { return URL(fileURLWithPath: path) }
        return URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("sovaria-crash-writer")
    }
}
