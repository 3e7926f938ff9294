import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaSync

/// Conflicts flagged from the change feed (issue 62, item 4), against the real PostgreSQL behind
/// the test server: `tasks` has a version column its trigger increments and is published. The
/// device's writes cannot get through while its feed (a connection of its own) does: a queued
/// write waits, and the page shows it out of date.
@Suite(.serialized) struct FeedConflictTests {
    static let engines = TestEngine.standard(including: .encrypted)

    /// A server on a cluster of this suite's own: the feed serves a change once every older
    /// transaction of the cluster has ended, and other suites' long polls hold transactions open
    /// on the shared one (a page would then not show the change yet).
    static func server() async throws -> RESTServer {
        try await RESTServer.start(on: try await PostgresCluster.shared(named: "feed-conflicts"))
    }
    static let tasks = PostgREST.select("tasks", order: "id")
    static func rename(_ title: String) -> DataRequest {
        PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"\#(title)"}"#)
    }

    @Test(arguments: engines)
    func aWriteThePageShowsOutOfDateIsAConflictAtOnceAndResolvesAsAtAFlush(_ engine: TestEngine) async throws {
        let server = try await Self.server()
        try await seed(server, "tasks", #"{"id":"t1","title":"Call the bank"}"#)
        let a = try await Device(engine, server, versioned: .reject)
        let b = try await Device(engine, server, versioned: .reject, followsTasks: true)
        try await b.offline.pullChanges(of: "tasks")
        _ = try await b.offline.read(Self.tasks)
        b.transport.isOffline = true
        let edit = try await b.queued(Self.rename("B's title"))
        _ = try await a.offline.read(Self.tasks)
        _ = try await a.sent(Self.rename("A's title"))

        let sentBefore = b.transport.exchanges().count
        try await b.offline.pullChanges(of: "tasks")
        let conflicts = try await b.offline.conflicts()
        #expect(conflicts.map(\.id) == [edit.id], "listed by the page, before any flush")
        #expect(conflicts.first?.serverRow?.contains("A's title") == true, "with the row the feed brought")
        #expect(try await b.offline.pendingWrites().isEmpty)
        #expect(b.reported(edit.id) == .conflict)
        #expect(
            b.transport.exchanges().dropFirst(sentBefore).allSatisfy { $0.request.method == "GET" },
            "the edit was never sent")

        // The same resolution as a flush's conflict: sent with the server's version, applied.
        let conflict = try #require(conflicts.first)
        b.transport.isOffline = false
        try await b.offline.resolve(conflict.id, with: Self.rename("merged"))
        _ = try await b.offline.flush()
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["merged|3"])
    }

    @Test func theEchoOfThisDevicesOwnWriteIsNoConflict() async throws {
        let server = try await Self.server()
        try await seed(server, "tasks", #"{"id":"t1","title":"Call the bank"}"#)
        let a = try await Device(.memory, server, versioned: .reject)
        let b = try await Device(.memory, server, versioned: .reject, followsTasks: true)
        try await b.offline.pullChanges(of: "tasks")
        _ = try await b.offline.read(Self.tasks)
        _ = try await b.sent(Self.rename("B's first"))  // version 2, sent at once
        b.transport.isOffline = true
        let second = try await b.queued(Self.rename("B's second"))
        try await b.offline.pullChanges(of: "tasks")  // brings version 2: B's own
        #expect(try await b.offline.conflicts().isEmpty, "B's own write, not another device's")
        #expect(try await b.offline.pendingWrites().map(\.id) == [second.id])

        _ = try await a.offline.read(Self.tasks)
        _ = try await a.sent(Self.rename("A's"))  // version 3
        try await b.offline.pullChanges(of: "tasks")
        #expect(try await b.offline.conflicts().map(\.id) == [second.id], "another device's version is")
    }

    /// B, following `tasks`, renames t1 to `title`: the edit reaches the server (version 2), and
    /// its answer is lost on the way back, so it stays queued. Returns the server, B and the edit.
    static func editWithItsAnswerLost(_ title: String) async throws -> (RESTServer, Device, QueuedWrite) {
        let server = try await Self.server()
        try await seed(server, "tasks", #"{"id":"t1","title":"Call the bank"}"#)
        let b = try await Device(.memory, server, versioned: .reject, followsTasks: true)
        try await b.offline.pullChanges(of: "tasks")
        _ = try await b.offline.read(Self.tasks)
        b.transport.loseNextAnswer()
        return (server, b, try await b.queued(Self.rename(title)))
    }

    /// B's edit reaches the server but its answer is lost: still queued, expecting the version
    /// before it. The page then brings B's own edit at the next version: no conflict (the row
    /// holds what the edit sets); the flush replays it under its idempotency key and it syncs.
    @Test func anEditWhoseAnswerWasLostIsNoConflictWhenThePageShowsItsEcho() async throws {
        let (server, b, edit) = try await Self.editWithItsAnswerLost("B's")
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["B's|2"], "applied")
        b.transport.isOffline = true  // no flush sends it before the page is applied
        let pulled = try await b.offline.pullChanges(of: "tasks")
        #expect(pulled.changes == 1, "the page holds the edit's echo")
        #expect(try await b.offline.conflicts().isEmpty, "its own edit, not another device's")
        #expect(try await b.offline.pendingWrites().map(\.id) == [edit.id], "left to the flush")
        b.transport.isOffline = false
        _ = try await b.offline.flush()
        #expect(try await b.offline.pendingWrites().isEmpty)
        #expect(try await b.offline.rejectedWrites().isEmpty)
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["B's|2"], "once")
    }

    /// The same with a second edit of the row queued behind the one whose answer was lost: both
    /// are left to the flush, in their order (a conflict listed for the second would put the
    /// first after its resolution).
    @Test func aRowsLaterEditWaitsBehindTheEditWhoseAnswerWasLost() async throws {
        let (server, b, first) = try await Self.editWithItsAnswerLost("B's first")
        b.transport.isOffline = true
        let second = try await b.queued(Self.rename("B's second"))
        let pulled = try await b.offline.pullChanges(of: "tasks")
        #expect(pulled.changes == 1, "the page holds the first edit's echo")
        #expect(try await b.offline.conflicts().isEmpty)
        #expect(try await b.offline.pendingWrites().map(\.id) == [first.id, second.id])
        b.transport.isOffline = false
        _ = try await b.offline.flush()
        #expect(try await b.offline.pendingWrites().isEmpty)
        #expect(try await b.offline.rejectedWrites().isEmpty)
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["B's second|3"])
    }

    /// Another device's edit of another column at the next version is a conflict still.
    @Test func aRowThatHoldsOnlyPartOfTheEditIsAConflict() {
        let update = PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"B's","done":true}"#)
        #expect(SovariaOffline.row(#"{"done":true,"id":"t1","title":"B's","version":2}"#, holdsWhat: update))
        #expect(!SovariaOffline.row(#"{"done":false,"id":"t1","title":"B's","version":2}"#, holdsWhat: update))
        #expect(!SovariaOffline.row(#"{"id":"t1","title":"B's","version":2}"#, holdsWhat: update), "no done column")
        let spelled = PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"caf\u00e9"}"#)
        #expect(SovariaOffline.row(#"{"title":"caf\u00e9"}"#, holdsWhat: spelled))
        #expect(!SovariaOffline.row(#"{"title":"cafe\u0301"}"#, holdsWhat: spelled), "another spelling")
        let delete = PostgREST.delete(from: "tasks", where: [.eq("id", "t1")])
        #expect(!SovariaOffline.row(#"{"id":"t1"}"#, holdsWhat: delete), "a delete's row is never shown")
    }

    /// B, following `tasks` under `policy`, queues an edit of t1 offline; A then edits t1 and
    /// syncs. Returns the server, B and its edit, before B's next pull.
    static func editMadeOutOfDate(
        under policy: ConflictPolicy
    ) async throws -> (server: RESTServer, b: Device, edit: QueuedWrite) {
        let server = try await Self.server()
        try await seed(server, "tasks", #"{"id":"t1","title":"Call the bank"}"#)
        let a = try await Device(.memory, server, versioned: .reject)
        let b = try await Device(.memory, server, versioned: policy, followsTasks: true)
        try await b.offline.pullChanges(of: "tasks")
        _ = try await b.offline.read(Self.tasks)
        b.transport.isOffline = true
        let edit = try await b.queued(Self.rename("B's"))
        _ = try await a.offline.read(Self.tasks)
        _ = try await a.sent(Self.rename("A's"))
        return (server, b, edit)
    }

    @Test func withServerWinsTheWriteIsDroppedAsServerWon() async throws {
        let (server, b, edit) = try await Self.editMadeOutOfDate(under: .serverWins)
        defer { withExtendedLifetime(server) {} }  // the server's process lives as long as it
        try await b.offline.pullChanges(of: "tasks")
        #expect(try await b.offline.rejectedWrites().map(\.reason) == [.serverWon])
        #expect(b.reported(edit.id) == .serverWon)
        #expect(try await b.offline.conflicts().isEmpty)
        #expect(try await b.offline.pendingWrites().isEmpty)
    }

    /// With `clientWins` the page flags nothing: the write stays queued, and the flush sends it
    /// again without the version (the last writer wins), as it does without a feed.
    @Test func withClientWinsThePageLeavesTheWriteToTheFlush() async throws {
        let (server, b, edit) = try await Self.editMadeOutOfDate(under: .clientWins)
        try await b.offline.pullChanges(of: "tasks")
        #expect(try await b.offline.conflicts().isEmpty)
        #expect(try await b.offline.rejectedWrites().isEmpty)
        #expect(try await b.offline.pendingWrites().map(\.id) == [edit.id], "left to the flush")
        b.transport.isOffline = false
        _ = try await b.offline.flush()
        #expect(try await server.query("SELECT title FROM tasks") == ["B's"], "the last writer wins")
    }

    /// A page that flags a row's oldest write holds the row's later writes behind it (counted as
    /// waiting, never sent), while another row's write goes at the next flush.
    @Test func aRowsLaterWritesWaitBehindTheConflictThePageFlagged() async throws {
        let server = try await Self.server()
        try await seed(server, "tasks", #"{"id":"t1","title":"Call the bank"}"#)
        try await seed(server, "tasks", #"{"id":"t2","title":"Pay the rent"}"#)
        let a = try await Device(.memory, server, versioned: .reject)
        let b = try await Device(.memory, server, versioned: .reject, followsTasks: true)
        try await b.offline.pullChanges(of: "tasks")
        _ = try await b.offline.read(Self.tasks)
        b.transport.isOffline = true
        let first = try await b.queued(Self.rename("B's first"))
        let second = try await b.queued(Self.rename("B's second"))
        let other = try await b.queued(
            PostgREST.update("tasks", where: [.eq("id", "t2")], json: #"{"title":"B's rent"}"#))
        _ = try await a.offline.read(Self.tasks)
        _ = try await a.sent(Self.rename("A's"))
        try await b.offline.pullChanges(of: "tasks")
        #expect(try await b.offline.conflicts().map(\.id) == [first.id], "the row's oldest write")
        #expect(try await b.offline.pendingWrites().map(\.id) == [second.id, other.id])
        #expect(b.offline.status.waitingOnConflictCount == 1, "the second waits behind it")

        b.transport.isOffline = false
        _ = try await b.offline.flush()
        #expect(try await b.offline.pendingWrites().map(\.id) == [second.id], "still waiting")
        #expect(
            try await server.query("SELECT id || '|' || title FROM tasks ORDER BY id") == ["t1|A's", "t2|B's rent"])
    }

    @Test func aVersionShownOlderThanTheOneExpectedIsNoConflict() {
        #expect(SovariaOffline.version("3", isNewerThan: "2"))
        #expect(!SovariaOffline.version("2", isNewerThan: "3"))
        #expect(!SovariaOffline.version("10", isNewerThan: "10"))
        #expect(SovariaOffline.version("10", isNewerThan: "9"), "as numbers, not text")
        #expect(SovariaOffline.version("2026-12-05T10:00:01Z", isNewerThan: "2026-12-05T10:00:00Z"))
        #expect(!SovariaOffline.version("2026-12-05T10:00:01.5Z", isNewerThan: "2026-12-05T10:00:00Z"), "unknown order")
    }
}

/// A table whose key is not `id`, stated once, in the overlay: its conflict rule, given no key
/// column, takes the overlay's. The write records the version of the row by that key, and the
/// feed's page flags it by that key (with `"id"`, neither would find the row).
@Suite struct FeedConflictKeyTests {
    /// `notes` keyed by `note_id`: one row at version 2, and a feed whose one change brings it at
    /// version 3. Writes do not get through.
    final class Server: SyncTransport {
        func send(_ request: DataRequest) async throws -> DataResponse {
            guard request.method == "GET" else { throw SyncTransportError.offline("no writes get through") }
            if request.path.hasPrefix("/rest/v1/sovaria_feed") {
                if request.path.contains("order=position.desc") {
                    return DataResponse(status: 200, body: #"[{"position":10}]"#)
                }
                if request.path.contains("position=gt.") { return DataResponse(status: 200, body: "[]") }
                return DataResponse(
                    status: 200,
                    body:
                        #"[{"position":10,"key":"n1","op":"upsert","row":{"note_id":"n1","title":"theirs","version":3}}]"#
                )
            }
            return DataResponse(status: 200, body: #"[{"note_id":"n1","title":"mine","version":2}]"#)
        }
    }

    static func device(keyColumn: String?) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "note_id")], textOrder: .bytes)
        configuration.conflictRules["notes"] = ConflictRule(keyColumn: keyColumn, versionColumn: "version")
        configuration.changeFeed = PostgRESTChangeFeed(transport: Server())
        return try await SovariaOffline(store: MemoryOfflineStore(), transport: Server(), configuration: configuration)
    }

    @Test func aRuleWithoutAKeyColumnTakesTheOverlaysKey() async throws {
        let offline = try await Self.device(keyColumn: nil)
        #expect(offline.conflictRule(of: "notes").keyColumn == "note_id")
        #expect(offline.conflictRule(of: "other").keyColumn == "id", "a table the overlay does not list")
        _ = try await offline.read(PostgREST.select("notes", order: "note_id"))
        guard
            case .queued(let edit) = try await offline.write(
                PostgREST.update("notes", where: [.eq("note_id", "n1")], json: #"{"title":"mine, edited"}"#))
        else {
            Issue.record("the write was not queued")
            return
        }
        #expect(try await offline.pendingWrites().first?.request.path.contains("version=eq.2") == true)
        try await offline.pullChanges(of: "notes")
        #expect(try await offline.conflicts().map(\.id) == [edit.id], "flagged by the page, by note_id")
        await offline.close()
    }

    @Test func aKeyColumnGivenWinsOverTheOverlays() async throws {
        let offline = try await Self.device(keyColumn: "id")
        #expect(offline.conflictRule(of: "notes").keyColumn == "id")
        _ = try await offline.read(PostgREST.select("notes", order: "note_id"))
        _ = try await offline.write(
            PostgREST.update("notes", where: [.eq("note_id", "n1")], json: #"{"title":"mine, edited"}"#))
        #expect(try await offline.pendingWrites().first?.request.path.contains("version=") == false)
        try await offline.pullChanges(of: "notes")
        #expect(try await offline.conflicts().isEmpty, "the rule names rows by id: this write names none")
        await offline.close()
    }
}
