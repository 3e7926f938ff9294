import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

/// What a device does with its own edits around a sync, against a real PostgreSQL behind the
/// PostgREST-style test server (Tests/Server): header names in any case, the device's own edits in
/// its answers after a partial flush and a resolution, the edit after a resolution, a requeue and a
/// reopen. `tasks` has a version column its trigger increments on every update; `notes` has none.
///
/// Two suites, each serialized (every case starts a server), side by side: this one, and what
/// follows a resolution (``EditsAfterAResolutionTests``).
@Suite(.serialized) struct OwnEditsTests {
    static let engines = TestEngine.standard(including: .encrypted)

    // MARK: - Header names in any case

    @Test(arguments: engines)
    func aNoMatchEditWhosePreferIsInLowerCaseIsRejectedNotCountedAsSynced(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "notes", #"{"id":"n1","title":"Groceries"}"#)
        let a = try await Device(engine, server)
        let b = try await Device(engine, server)
        _ = try await b.offline.read(PostgREST.select("notes", order: "id"))
        b.transport.isOffline = true
        let rename = try await b.queued(
            DataRequest(
                method: "PATCH", path: "/rest/v1/notes?id=eq.n1", headers: ["prefer": "return=minimal"],
                body: #"{"title":"Weekly groceries"}"#))
        _ = try await a.sent(PostgREST.delete(from: "notes", where: [.eq("id", "n1")]))

        b.transport.isOffline = false
        #expect(try await b.offline.flush() == 0, "the rename changed nothing: it is not counted as synced")
        #expect(try await b.offline.rejectedWrites().map(\.reason) == [.noMatchingRow])
        #expect(b.reported(rename.id) == .noMatchingRow)
        let sent = try #require(b.transport.exchanges().first { $0.request.method == "PATCH" })
        let prefers = sent.request.headers.filter { $0.key.lowercased() == "prefer" }
        #expect(prefers.count == 1, "one spelling of Prefer reaches the transport: \(sent.request.headers)")
        #expect(prefers.first?.value == "return=representation")
    }

    @Test(arguments: engines)
    func anIdempotencyKeyInLowerCaseIsTheOneKeySent(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        let device = try await Device(engine, server)
        device.transport.isOffline = true
        _ = try await device.queued(
            DataRequest(
                method: "POST", path: "/rest/v1/notes", headers: ["idempotency-key": "app-key-1"],
                body: #"{"id":"n1","title":"Milk"}"#))
        device.transport.isOffline = false
        #expect(try await device.offline.flush() == 1)
        let sent = try #require(device.transport.exchanges().first { $0.request.method == "POST" })
        let keys = sent.request.headers.filter { $0.key.lowercased() == "idempotency-key" }
        #expect(keys.map(\.value) == ["app-key-1"], "the app's own key, once: \(sent.request.headers)")
        #expect(sent.request.header("Idempotency-Key") == "app-key-1")
    }

    // MARK: - The device's own edits stay in its answers

    @Test(arguments: engines)
    func theSecondOfTwoOfflineEditsStaysInTheAnswerWhenTheNetworkDropsAfterTheFirst(
        _ engine: TestEngine
    ) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "tasks", #"{"id":"t1","title":"One"}"#)
        let device = try await Device(engine, server, versioned: .reject)
        let list = PostgREST.select("tasks", order: "id")
        _ = try await device.offline.read(list)
        device.transport.isOffline = true
        _ = try await device.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Two"}"#))
        let second = try await device.queued(
            PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Three"}"#))
        device.transport.isOffline = false
        device.transport.dropAfter(1)
        #expect(try await device.offline.flush() == 1, "the first applied, the network dropped before the second")
        let pending = try await device.offline.pendingWrites()
        #expect(pending.map(\.id) == [second.id])
        #expect(pending.first?.request.path.hasSuffix("version=eq.2") == true, "moved past the first edit")

        let answer = try await device.offline.read(list, policy: .cacheOnly)
        let body = try #require(answer.body)
        #expect(body.contains(#""title":"Three""#), "the queued edit shows: \(body)")
        #expect(answer.pendingRows.map(\.key) == [#""t1""#], "and is marked pending")
        #expect(answer.hasPendingWrites)
    }

    @Test(arguments: engines)
    func aQueuedResolutionShowsInTheAnswer(_ engine: TestEngine) async throws {
        let (_, b) = try await conflictOnT1(engine)
        let conflict = try #require(try await b.offline.conflicts().first)
        b.transport.isOffline = true
        let resolution = try await b.offline.resolve(
            conflict.id, with: PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Merged"}"#))
        #expect(resolution.request.path.hasSuffix("version=eq.2"))

        let answer = try await b.offline.read(PostgREST.select("tasks", order: "id"), policy: .cacheOnly)
        let body = try #require(answer.body)
        #expect(body.contains(#""title":"Merged""#), "the resolution waiting to be sent shows: \(body)")
        #expect(answer.pendingRows.map(\.key) == [#""t1""#])
    }

    @Test(arguments: engines)
    func aSyncedResolutionStaysInTheAnswerUntilTheNextFetch(_ engine: TestEngine) async throws {
        let (server, b) = try await conflictOnT1(engine)
        let conflict = try #require(try await b.offline.conflicts().first)
        try await b.offline.resolve(
            conflict.id, with: PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Merged"}"#))
        #expect(try await b.offline.flush() == 1)
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["Merged|3"])

        let answer = try await b.offline.read(PostgREST.select("tasks", order: "id"), policy: .cacheOnly)
        let body = try #require(answer.body)
        #expect(body.contains(#""title":"Merged""#), "the synced resolution shows before a refetch: \(body)")
        #expect(!body.contains("B's title") && !body.contains("A's title"))
    }

}

/// The edit after a resolution, a requeue and a reopen (see ``OwnEditsTests``).
@Suite(.serialized) struct EditsAfterAResolutionTests {
    static let engines = OwnEditsTests.engines

    @Test(arguments: engines)
    func anEditOnlineAfterAResolutionSyncedExpectsTheResolvedVersion(_ engine: TestEngine) async throws {
        let (server, b) = try await conflictOnT1(engine)
        let conflict = try #require(try await b.offline.conflicts().first)
        try await b.offline.resolve(
            conflict.id, with: PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Merged"}"#))
        #expect(try await b.offline.flush() == 1)

        // Before any refetch: the cache still shows version 1.
        let outcome = try await b.offline.write(
            PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Merged again"}"#))
        guard case .sent = outcome else {
            Issue.record("the edit after the device's own resolution did not apply: \(outcome)")
            return
        }
        #expect(try await b.offline.conflicts().isEmpty)
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["Merged again|4"])
    }

    @Test(arguments: engines)
    func anEditQueuedAfterAResolutionSyncedExpectsTheResolvedVersion(_ engine: TestEngine) async throws {
        let (server, b) = try await conflictOnT1(engine)
        let conflict = try #require(try await b.offline.conflicts().first)
        try await b.offline.resolve(
            conflict.id, with: PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Merged"}"#))
        #expect(try await b.offline.flush() == 1)
        b.transport.isOffline = true
        let edit = try await b.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"done":true}"#))
        #expect(edit.request.path.hasSuffix("version=eq.3"), "the version the resolution made: \(edit.request.path)")
        b.transport.isOffline = false
        #expect(try await b.offline.flush() == 1)
        #expect(try await b.offline.rejectedWrites().isEmpty)
        #expect(try await server.query("SELECT title || '|' || done || '|' || version FROM tasks") == ["Merged|true|4"])
    }

    // MARK: - Requeue

    @Test(arguments: engines)
    func aRequeuedNoMatchWriteIsANewAttemptAndAppliesOnceTheRowIsBack(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "notes", #"{"id":"n1","title":"Groceries"}"#)
        let a = try await Device(engine, server)
        let b = try await Device(engine, server)
        b.transport.isOffline = true
        let rename = try await b.queued(
            PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"title":"Weekly groceries"}"#))
        _ = try await a.sent(PostgREST.delete(from: "notes", where: [.eq("id", "n1")]))
        b.transport.isOffline = false
        #expect(try await b.offline.flush() == 0)
        #expect(try await b.offline.rejectedWrites().map(\.reason) == [.noMatchingRow])

        try await seed(server, "notes", #"{"id":"n1","title":"Groceries"}"#)
        let again = try await b.offline.requeue(rename.id)
        #expect(again.id != rename.id, "a requeue is a new attempt, under a new key")
        #expect(again.request.body == rename.request.body)
        #expect(try await b.offline.flush() == 1, "the server did not replay the old answer")
        #expect(try await b.offline.rejectedWrites().isEmpty)
        #expect(try await server.query("SELECT title FROM notes") == ["Weekly groceries"])
        let keys = b.transport.exchanges().filter { $0.request.method == "PATCH" }.compactMap {
            $0.request.header("Idempotency-Key")
        }
        #expect(keys == [rename.id, again.id])
    }

    // MARK: - Reopen

    @Test(arguments: engines)
    func aReopenedControllerCountsTheWritesWaitingOnAConflictAtOnce(_ engine: TestEngine) async throws {
        let (server, b) = try await conflictOnT1(engine)
        b.transport.isOffline = true
        _ = try await b.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"done":true}"#))
        #expect(b.offline.status.waitingOnConflictCount == 1)
        await b.offline.close()

        var configuration = b.offline.configuration
        configuration.timer = ManualTimer()
        let reopened = try await SovariaOffline(
            store: b.offline.store, transport: b.transport, configuration: configuration)
        let status = reopened.status
        #expect(status.pendingCount == 1)
        #expect(status.conflictCount == 1)
        #expect(status.waitingOnConflictCount == 1, "counted at open, not at the first flush")
        await reopened.close()
        _ = server
    }

}

// MARK: - Rig

/// B's rename of `t1` is a conflict waiting for the app: A renamed it first (version 2).
private func conflictOnT1(_ engine: TestEngine) async throws -> (RESTServer, Device) {
    let (server, _, b) = try await twoDevicesEditingT1(engine, policy: .reject)
    try #require(try await b.offline.conflicts().count == 1)
    return (server, b)
}
