import Foundation
import Sovaria
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

/// Offline edits that no longer apply, against a real PostgreSQL behind the PostgREST-style test
/// server (Tests/Server): two or three devices of one user, each a controller on its own store.
/// `notes` has no version column; `tasks` has one its trigger increments on every update.
///
/// Three suites, each serialized (every case starts a server), side by side: rows that are gone,
/// version checks, and the randomized one.
@Suite(.serialized) struct ConflictTests {
    static let engines = TestEngine.standard(including: .encrypted)

    // MARK: - Rows that are gone

    @Test(arguments: engines)
    func aRenameOfANoteDeletedOnAnotherDeviceIsRejectedAsNoMatchingRow(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "notes", #"{"id":"n1","title":"Groceries"}"#)
        let a = try await Device(engine, server)
        let b = try await Device(engine, server)
        _ = try await b.offline.read(PostgREST.select("notes", order: "id"))
        b.transport.isOffline = true
        let rename = try await b.queued(
            PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"title":"Weekly groceries"}"#))
        _ = try await a.sent(PostgREST.delete(from: "notes", where: [.eq("id", "n1")]))

        b.transport.isOffline = false
        #expect(try await b.offline.flush() == 0, "the rename changed nothing: it is not counted as synced")
        let rejected = try await b.offline.rejectedWrites()
        #expect(rejected.map(\.id) == [rename.id])
        #expect(rejected.first?.reason == .noMatchingRow)
        #expect(rejected.first?.write.request.body == #"{"title":"Weekly groceries"}"#, "the edit is kept")
        #expect(try await b.offline.pendingWrites().isEmpty)
        #expect(b.offline.status.rejectedCount == 1)
        #expect(b.reported(rename.id) == .noMatchingRow, "a sync error says so")
        #expect(try await server.query("SELECT count(*) FROM notes") == ["0"])
    }

    @Test(arguments: engines)
    func aRenameOfAVersionedRowDeletedOnAnotherDeviceIsRejectedAsNoMatchingRow(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "tasks", #"{"id":"t1","title":"Call the bank"}"#)
        let a = try await Device(engine, server, versioned: .reject)
        let b = try await Device(engine, server, versioned: .reject)
        _ = try await a.offline.read(PostgREST.select("tasks", order: "id"))
        _ = try await b.offline.read(PostgREST.select("tasks", order: "id"))
        b.transport.isOffline = true
        let rename = try await b.queued(
            PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Call the bank at 9"}"#))
        #expect(
            rename.request.path.hasSuffix("&version=eq.1"), "the version B read is recorded: \(rename.request.path)")
        _ = try await a.sent(PostgREST.delete(from: "tasks", where: [.eq("id", "t1")]))

        b.transport.isOffline = false
        #expect(try await b.offline.flush() == 0)
        let rejected = try await b.offline.rejectedWrites()
        #expect(rejected.map(\.id) == [rename.id])
        #expect(rejected.first?.reason == .noMatchingRow, "the row is gone: not a conflict")
        #expect(try await b.offline.conflicts().isEmpty)
    }

    @Test(arguments: engines)
    func aDeleteOfAVersionedRowRenamedOnAnotherDeviceIsAConflictCarryingTheRename(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "tasks", #"{"id":"t1","title":"Call the bank"}"#)
        let a = try await Device(engine, server, versioned: .reject)
        let b = try await Device(engine, server, versioned: .reject)
        _ = try await a.offline.read(PostgREST.select("tasks", order: "id"))
        a.transport.isOffline = true
        let delete = try await a.queued(PostgREST.delete(from: "tasks", where: [.eq("id", "t1")]))
        _ = try await b.offline.read(PostgREST.select("tasks", order: "id"))
        _ = try await b.sent(
            PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Call the bank at 9"}"#))

        a.transport.isOffline = false
        #expect(try await a.offline.flush() == 0)
        let conflicts = try await a.offline.conflicts()
        #expect(conflicts.map(\.id) == [delete.id])
        let row = try #require(conflicts.first?.serverRow)
        #expect(row.contains(#""title":"Call the bank at 9""#), "the server's row is kept beside the delete: \(row)")
        #expect(row.contains(#""version":2"#))
        #expect(try await server.query("SELECT title FROM tasks") == ["Call the bank at 9"], "the rename stands")
    }

    @Test(arguments: engines)
    func withoutAVersionColumnARenameThenADeleteBothApplyTheLastWriterWins(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "notes", #"{"id":"n1","title":"Groceries"}"#)
        let a = try await Device(engine, server)
        let b = try await Device(engine, server)
        a.transport.isOffline = true
        b.transport.isOffline = true
        _ = try await a.queued(PostgREST.delete(from: "notes", where: [.eq("id", "n1")]))
        _ = try await b.queued(
            PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"title":"Weekly groceries"}"#))
        b.transport.isOffline = false
        a.transport.isOffline = false
        #expect(try await b.offline.flush() == 1, "the rename found its row")
        #expect(try await a.offline.flush() == 1, "and the delete found it renamed: no version says otherwise")
        #expect(try await a.offline.rejectedWrites().isEmpty)
        #expect(try await b.offline.rejectedWrites().isEmpty)
        #expect(try await server.query("SELECT count(*) FROM notes") == ["0"])
    }

    @Test(arguments: engines)
    func aDeleteMarkedIgnoreNoMatchOfARowAlreadyGoneCountsAsSynced(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        let device = try await Device(engine, server)
        device.transport.isOffline = true
        _ = try await device.queued(
            PostgREST.delete(from: "notes", where: [.eq("id", "n9")], onNoMatch: .ignoreNoMatch))
        let strict = try await device.queued(PostgREST.delete(from: "notes", where: [.eq("id", "n9")]))
        device.transport.isOffline = false
        #expect(try await device.offline.flush() == 1)
        #expect(try await device.offline.rejectedWrites().map(\.id) == [strict.id])
    }

}

/// Version checks, each policy (see ``ConflictTests``).
@Suite(.serialized) struct VersionConflictTests {
    static let engines = ConflictTests.engines

    @Test(arguments: engines)
    func withRejectTheSecondFlushConflictsAndResolveSendsAMergedRowTheServerTakes(_ engine: TestEngine) async throws {
        let (server, a, b) = try await twoDevicesEditingT1(engine, policy: .reject)
        let conflicts = try await b.offline.conflicts()
        let conflict = try #require(conflicts.first)
        #expect(conflicts.count == 1)
        #expect(conflict.reason == .conflict)
        #expect(conflict.write.request.body == #"{"title":"B's title"}"#, "the local write is kept")
        #expect(conflict.serverRow?.contains(#""title":"A's title""#) == true, "beside the server's row")
        #expect(conflict.serverRow?.contains(#""version":2"#) == true)
        #expect(b.reported(conflict.id) == .conflict)
        #expect(b.offline.status.conflictCount == 1)

        // The screen shows the row marked, and not B's title as if it applied.
        let screen = try await b.offline.read(PostgREST.select("tasks", order: "id"), policy: .cacheOnly)
        #expect(screen.conflictedRows == [ConflictedRow(key: "t1", conflictIDs: [conflict.id])])
        #expect(screen.body?.contains("B's title") == false, "the cached answer, with the overlay: not applied")
        #expect(screen.body?.contains("Original") == true)

        let resolution = try await b.offline.resolve(
            conflict.id, with: PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"A's and B's"}"#))
        #expect(resolution.request.path.hasSuffix("version=eq.2"), "sent against the row it was merged with")
        #expect(try await b.offline.flush() == 1)
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["A's and B's|3"])
        #expect(try await b.offline.conflicts().isEmpty)
        #expect(b.offline.status.conflictCount == 0)
        _ = a
    }

    @Test(arguments: engines)
    func withServerWinsTheLocalWriteIsDroppedAndKeptForDisplay(_ engine: TestEngine) async throws {
        let (server, _, b) = try await twoDevicesEditingT1(engine, policy: .serverWins)
        let rejected = try await b.offline.rejectedWrites()
        #expect(rejected.map(\.reason) == [.serverWon])
        #expect(rejected.first?.serverRow?.contains(#""title":"A's title""#) == true)
        #expect(try await b.offline.conflicts().isEmpty, "nothing waits for the app")
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["A's title|2"])
    }

    @Test(arguments: engines)
    func withClientWinsTheWriteIsSentAgainWithoutTheVersion(_ engine: TestEngine) async throws {
        let (server, _, b) = try await twoDevicesEditingT1(engine, policy: .clientWins)
        #expect(try await b.offline.rejectedWrites().isEmpty)
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["B's title|3"])
    }

    @Test(arguments: engines)
    func aTimestampSetByTheServerWorksAsTheVersion(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "tasks", #"{"id":"t1","title":"Original"}"#)
        let rule = ConflictRule(versionColumn: "updated_at", onConflict: .reject)
        let a = try await Device(engine, server, rules: ["tasks": rule])
        let b = try await Device(engine, server, rules: ["tasks": rule])
        _ = try await a.offline.read(PostgREST.select("tasks", order: "id"))
        _ = try await b.offline.read(PostgREST.select("tasks", order: "id"))
        b.transport.isOffline = true
        let mine = try await b.queued(
            PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"B's title"}"#))
        #expect(mine.request.path.contains("updated_at=eq."), "the timestamp B read: \(mine.request.path)")
        _ = try await a.sent(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"A's title"}"#))
        b.transport.isOffline = false
        #expect(try await b.offline.flush() == 0)
        let conflict = try #require(try await b.offline.conflicts().first)
        try await b.offline.resolve(
            conflict.id, with: PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Merged"}"#))
        #expect(try await b.offline.flush() == 1, "sent with the timestamp of the row it was merged with")
        #expect(try await server.query("SELECT title FROM tasks") == ["Merged"])
    }

    @Test(arguments: engines)
    func aConflictHoldsOnlyTheWritesToItsRowAndTheyFollowTheResolution(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "tasks", #"[{"id":"t1","title":"One"},{"id":"t2","title":"Two"}]"#)
        let a = try await Device(engine, server, versioned: .reject)
        let b = try await Device(engine, server, versioned: .reject)
        _ = try await b.offline.read(PostgREST.select("tasks", order: "id"))
        b.transport.isOffline = true
        let first = try await b.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"B1"}"#))
        let second = try await b.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"done":true}"#))
        _ = try await b.queued(PostgREST.update("tasks", where: [.eq("id", "t2")], json: #"{"title":"B2"}"#))
        _ = try await a.offline.read(PostgREST.select("tasks", order: "id"))
        _ = try await a.sent(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"A1"}"#))

        b.transport.isOffline = false
        #expect(try await b.offline.flush() == 1, "t2's write is not blocked")
        #expect(try await b.offline.conflicts().map(\.id) == [first.id])
        #expect(try await b.offline.pendingWrites().map(\.id) == [second.id], "t1's next write waits with it")
        #expect(b.offline.status.waitingOnConflictCount == 1, "and the status says why")
        #expect(
            try await server.query("SELECT id || '|' || title || '|' || done FROM tasks ORDER BY id") == [
                "t1|A1|false", "t2|B2|false",
            ])

        let conflict = try #require(try await b.offline.conflicts().first)
        let resolution = try await b.offline.resolve(
            conflict.id, with: PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"A1+B1"}"#))
        #expect(
            try await b.offline.pendingWrites().map(\.id) == [resolution.id, second.id], "the waiting write follows")
        #expect(try await b.offline.flush() == 2)
        #expect(
            try await server.query("SELECT id || '|' || title || '|' || done || '|' || version FROM tasks ORDER BY id")
                == [
                    "t1|A1+B1|true|4", "t2|B2|false|2",
                ])
        #expect(b.offline.status.waitingOnConflictCount == 0)
    }

    @Test(arguments: engines)
    func editsOfOneRowOnlineOneAfterAnotherBothApplyBeforeTheCacheIsFetchedAgain(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "tasks", #"{"id":"t1","title":"One"}"#)
        let device = try await Device(engine, server, versioned: .reject)
        _ = try await device.offline.read(PostgREST.select("tasks", order: "id"))
        _ = try await device.sent(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Two"}"#))
        // The cache still shows version 1: the next edit expects the version this device made.
        let second = try await device.sent(
            PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Three"}"#))
        #expect(second.body.contains(#""version":3"#))
        device.transport.isOffline = true
        _ = try await device.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"done":true}"#))
        device.transport.isOffline = false
        #expect(try await device.offline.flush() == 1, "and so does an offline one after them")
        #expect(try await device.offline.rejectedWrites().isEmpty)
        #expect(try await server.query("SELECT title || '|' || done || '|' || version FROM tasks") == ["Three|true|4"])
    }

    @Test(arguments: engines)
    func twoOfflineEditsOfOneRowOnOneDeviceBothApply(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await seed(server, "tasks", #"{"id":"t1","title":"One"}"#)
        let device = try await Device(engine, server, versioned: .reject)
        _ = try await device.offline.read(PostgREST.select("tasks", order: "id"))
        device.transport.isOffline = true
        _ = try await device.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Two"}"#))
        _ = try await device.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"done":true}"#))
        _ = try await device.queued(PostgREST.delete(from: "tasks", where: [.eq("id", "t1")]))
        device.transport.isOffline = false
        #expect(try await device.offline.flush() == 3, "each write expects the version the one before it made")
        #expect(try await device.offline.rejectedWrites().isEmpty)
        #expect(try await server.query("SELECT count(*) FROM tasks") == ["0"])
    }

}

/// Random offline edits of three devices (see ``ConflictTests``).
@Suite(.serialized) struct RandomConflictTests {
    static let engines = ConflictTests.engines

    /// Three devices make random offline edits and deletes of 20 rows and flush in random
    /// orders; conflicts are dropped (the server's row kept) until every queue is empty. Then every
    /// write is in exactly one of: applied on the server, rejected as matching no row, conflicted;
    /// and every update the server applied expected the version it replaced.
    @Test(arguments: engines)
    func everyRandomOfflineWriteEndsAppliedRejectedOrConflictedAndNeverOverwritesAnUnseenVersion(
        _ engine: TestEngine
    ) async throws {
        let server = try await RESTServer.start()
        let seeds: [UInt64] = engine.name == "memory" ? [1, 2, 3, 4] : [7]
        var outcomes = (applied: 0, noMatch: 0, conflicted: 0)
        for round in seeds {
            try #require(try await server.control("POST", "/_test/reset").0 == 200)
            let outcome = try await runRandomRound(engine, server, round: round)
            outcomes = (
                outcomes.applied + outcome.applied, outcomes.noMatch + outcome.noMatch,
                outcomes.conflicted + outcome.conflicted
            )
        }
        print("conflicts, random writes on \(engine): \(outcomes)")
        #expect(outcomes.applied > 0 && outcomes.noMatch > 0 && outcomes.conflicted > 0, "every outcome is exercised")
    }

    private func runRandomRound(
        _ engine: TestEngine, _ server: RESTServer, round: UInt64
    ) async throws -> (applied: Int, noMatch: Int, conflicted: Int) {
        var random = SplitMix64(seed: round &* 0x9E37_79B9_7F4A_7C15)
        let rows = (1...20).map { "r\($0)" }
        try await seed(
            server, "tasks", "[" + rows.map { #"{"id":"\#($0)","title":"\#($0)"}"# }.joined(separator: ",") + "]")
        let devices = [
            try await Device(engine, server, versioned: .reject), try await Device(engine, server, versioned: .reject),
            try await Device(engine, server, versioned: .reject),
        ]
        var made: [String] = []
        for (number, device) in devices.enumerated() {
            _ = try await device.offline.read(PostgREST.select("tasks", order: "id"))
            device.transport.isOffline = true
            for step in 0..<Int(random.next() % 8 + 6) {
                let row = rows[Int(random.next() % UInt64(rows.count))]
                let request =
                    random.next() % 4 == 0
                    ? PostgREST.delete(from: "tasks", where: [.eq("id", row)])
                    : PostgREST.update(
                        "tasks", where: [.eq("id", row)], json: #"{"title":"d\#(number) s\#(step)"}"#)
                made.append(try await device.queued(request).id)
            }
        }
        // Flush in random orders until every queue is empty, dropping each conflict.
        var rounds = 0
        while true {
            var pending = 0
            for device in devices { pending += try await device.offline.pendingWrites().count }
            if pending == 0 { break }
            rounds += 1
            try #require(rounds < 50, "the queues drain")
            var order = Array(devices.indices)
            for index in order.indices.reversed() {
                order.swapAt(index, Int(random.next() % UInt64(index + 1)))
            }
            for index in order {
                let device = devices[index]
                device.transport.isOffline = false
                _ = try await device.offline.flush()
                for conflict in try await device.offline.conflicts() { try await device.offline.discard(conflict.id) }
            }
        }
        let applied = devices.flatMap { $0.transport.appliedKeys() }
        let noMatch = devices.flatMap { $0.reports(.noMatchingRow) }
        let conflicted = devices.flatMap { $0.reports(.conflict) }
        // Counted, not collected in sets: a write applied twice, or both applied and rejected,
        // shows as two places.
        var places: [String: Int] = [:]
        for id in applied + noMatch + conflicted { places[id, default: 0] += 1 }
        for id in made {
            #expect(places[id] == 1, "round \(round): write \(id) is in \(places[id] ?? 0) places, not one")
        }
        #expect(places.count == made.count, "round \(round): nothing but the writes made")
        for device in devices {
            for exchange in device.transport.exchanges() where exchange.isAppliedUpdate {
                let expected = try #require(exchange.expectedVersion, "an update applied without a version check")
                #expect(exchange.resultingVersions.allSatisfy { $0 == expected + 1 }, "round \(round): \(exchange)")
            }
        }
        return (applied.count, noMatch.count, conflicted.count)
    }
}

// MARK: - Rig

/// A and B read `t1` at version 1 and rename it offline; A flushes first (version 2), then B.
func twoDevicesEditingT1(
    _ engine: TestEngine, policy: ConflictPolicy
) async throws -> (RESTServer, Device, Device) {
    let server = try await RESTServer.start()
    try await seed(server, "tasks", #"{"id":"t1","title":"Original"}"#)
    let a = try await Device(engine, server, versioned: policy)
    let b = try await Device(engine, server, versioned: policy)
    _ = try await a.offline.read(PostgREST.select("tasks", order: "id"))
    _ = try await b.offline.read(PostgREST.select("tasks", order: "id"))
    a.transport.isOffline = true
    b.transport.isOffline = true
    _ = try await b.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"B's title"}"#))
    _ = try await a.queued(PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"A's title"}"#))
    a.transport.isOffline = false
    #expect(try await a.offline.flush() == 1)
    b.transport.isOffline = false
    _ = try await b.offline.flush()
    return (server, a, b)
}

func seed(_ server: RESTServer, _ table: String, _ json: String) async throws {
    let transport = URLSessionTransport(baseURL: server.baseURL, tokens: AliceToken(), configuration: .testServer)
    let answer = try await transport.send(PostgREST.insert(into: table, json: json, returning: false))
    try #require(answer.isSuccess, "seed: \(answer.status) \(answer.body)")
}

/// One device of Alice's: a controller on its own store, whose network the test switches off.
final class Device: Sendable {
    let folder: TemporaryFolder
    let transport: RecordingSwitch
    let offline: SovariaOffline
    let errors = ErrorLog()

    convenience init(
        _ engine: TestEngine, _ server: RESTServer, versioned policy: ConflictPolicy? = nil, followsTasks: Bool = false
    )
        async throws
    {
        var rules: [String: ConflictRule] = [:]
        if let policy { rules["tasks"] = ConflictRule(versionColumn: "version", onConflict: policy) }
        try await self.init(engine, server, rules: rules, followsTasks: followsTasks)
    }

    /// With `followsTasks`, `tasks`' change feed is read when the test pulls it (never by a timer),
    /// over a connection of its own that the test does not switch off.
    init(
        _ engine: TestEngine, _ server: RESTServer, rules: [String: ConflictRule], followsTasks: Bool = false
    ) async throws {
        folder = try TemporaryFolder()
        transport = RecordingSwitch(
            URLSessionTransport(baseURL: server.baseURL, tokens: AliceToken(), configuration: .testServer))
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        if followsTasks {
            let feed = URLSessionTransport(baseURL: server.baseURL, tokens: AliceToken(), configuration: .testServer)
            configuration.changeFeed = PostgRESTChangeFeed(transport: feed)
        }
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.conflictRules = rules
        configuration.overlay = PostgRESTOverlay(
            tables: ["tasks": .init(primaryKey: "id"), "notes": .init(primaryKey: "id")], textOrder: .bytes)
        offline = try await SovariaOffline(
            store: try await engine.open(folder.url), transport: transport, configuration: configuration)
        let errors = errors
        offline.onSyncError = { error in errors.append(error) }
    }

    func queued(_ request: DataRequest) async throws -> QueuedWrite {
        let outcome = try await offline.write(request)
        guard case .queued(let write) = outcome else { throw TestFailure("expected the write queued, got \(outcome)") }
        return write
    }

    func sent(_ request: DataRequest) async throws -> DataResponse {
        let outcome = try await offline.write(request)
        guard case .sent(let response) = outcome, response.isSuccess else {
            throw TestFailure("expected the write sent, got \(outcome)")
        }
        return response
    }

    /// The reason the sync errors gave for write `id`, if one was reported.
    func reported(_ id: String) -> RejectionReason? {
        errors.all.lazy.compactMap { error -> RejectionReason? in
            guard case .rejected(let rejected) = error.kind, rejected.id == id else { return nil }
            return rejected.reason
        }.first
    }

    /// The ids of the writes reported rejected with `reason`.
    func reports(_ reason: RejectionReason) -> [String] {
        errors.all.compactMap { error in
            guard case .rejected(let rejected) = error.kind, rejected.reason == reason else { return nil }
            return rejected.id
        }
    }
}

/// Sync errors as they were reported.
final class ErrorLog: Sendable {
    private let errors = Mutex<[SyncError]>([])
    func append(_ error: SyncError) { errors.withLock { $0.append(error) } }
    var all: [SyncError] { errors.withLock { $0 } }
}

struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Alice's token, which never expires.
struct AliceToken: AccessTokenProvider {
    func accessToken() async throws -> String? { "token-alice" }
    func refreshAccessToken() async throws {}
}

/// A transport the test switches off, keeping every request and answer that reached the server.
final class RecordingSwitch: SyncTransport {
    struct Exchange: Sendable, CustomStringConvertible {
        let request: DataRequest
        let response: DataResponse

        /// A PATCH or DELETE the server took that changed rows.
        var isAppliedWrite: Bool {
            ["PATCH", "DELETE"].contains(request.method) && response.isSuccess
                && response.body.trimmingCharacters(in: .whitespaces).hasPrefix("[{")
        }
        var isAppliedUpdate: Bool { isAppliedWrite && request.method == "PATCH" }
        /// The version in the request's filter.
        var expectedVersion: Int? {
            request.path.split(separator: "&").first { $0.hasPrefix("version=eq.") }.flatMap {
                Int($0.dropFirst("version=eq.".count))
            }
        }
        /// The versions of the rows in the answer.
        var resultingVersions: [Int] {
            guard let rows = try? JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? [[String: Any]]
            else { return [] }
            return rows.compactMap { $0["version"] as? Int }
        }
        var description: String { "\(request.method) \(request.path) → \(response.status) \(response.body)" }
    }

    private let inner: any SyncTransport
    private let state = Mutex((offline: false, sendsLeft: Int?.none, exchanges: [Exchange]()))

    init(_ inner: any SyncTransport) { self.inner = inner }

    var isOffline: Bool {
        get { state.withLock { $0.offline } }
        set { state.withLock { $0.offline = newValue } }
    }

    /// The network drops after `count` more requests reach the server.
    func dropAfter(_ count: Int) { state.withLock { $0.sendsLeft = count } }

    /// The next request reaches the server, and its answer is lost on the way back (an offline
    /// error after the server acted on it).
    func loseNextAnswer() { losesNext.withLock { $0 = true } }
    private let losesNext = Mutex(false)

    func send(_ request: DataRequest) async throws -> DataResponse {
        let offline = state.withLock { state in
            if state.sendsLeft == 0 {
                (state.offline, state.sendsLeft) = (true, nil)
            }
            state.sendsLeft? -= 1
            return state.offline
        }
        if offline { throw SyncTransportError.offline("switched off by the test") }
        let response = try await inner.send(request)
        let lost = losesNext.withLock { loses in
            defer { loses = false }
            return loses
        }
        if lost { throw SyncTransportError.offline("the answer was lost") }
        state.withLock { $0.exchanges.append(Exchange(request: request, response: response)) }
        return response
    }

    func exchanges() -> [Exchange] { state.withLock { $0.exchanges } }

    /// The client ids (the `Idempotency-Key`, less a `:client-wins` suffix) of the writes the
    /// server took and that changed rows.
    func appliedKeys() -> [String] {
        exchanges().filter(\.isAppliedWrite).compactMap { exchange in
            exchange.request.headers["Idempotency-Key"].map { String($0.split(separator: ":").first ?? "") }
        }
    }
}

/// The seeded generator of the test kit, by the name these tests knew it by.
typealias SplitMix64 = SplitMix
