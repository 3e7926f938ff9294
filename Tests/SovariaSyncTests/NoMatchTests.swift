import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaSync

/// How the controller learns that an update or delete changed nothing, on either path, against a
/// scripted server (the real one is in ConflictTests).
@Suite struct NoMatchTests {
    static let rename = DataRequest(
        method: "PATCH", path: "/rest/v1/notes?id=eq.n1", headers: ["Prefer": "return=minimal,tx=commit"],
        body: #"{"title":"New"}"#)

    @Test(arguments: SyncEngine.all)
    func aDirectUpdateThatMatchedNoRowIsRejectedAndReported(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.answer(DataResponse(status: 200, body: "[]"))
        let outcome = try await rig.offline.write(Self.rename)
        guard case .rejected(let rejected) = outcome else {
            Issue.record("an update that matched no row was not rejected: \(outcome)")
            return
        }
        #expect(rejected.reason == .noMatchingRow)
        #expect(rejected.write.request == Self.rename, "the request as made")
        #expect(try await rig.offline.rejectedWrites() == [rejected])
        #expect(rig.reported.map(\.kind) == [.rejected(rejected)])
        #expect(rig.transport.received.first?.headers["Prefer"] == "tx=commit,return=representation")
    }

    @Test(arguments: SyncEngine.all)
    func aQueuedDeleteThatMatchedNoRowIsRejectedAndTheRestSync(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        let delete = DataRequest(method: "DELETE", path: "/rest/v1/notes?id=eq.n1")
        guard case .queued(let gone) = try await rig.offline.write(delete) else {
            Issue.record("an offline write was not queued")
            return
        }
        _ = try await rig.offline.write(insert(2))
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 200, body: " [ ] "), DataResponse(status: 201, body: ""))
        #expect(try await rig.offline.flush() == 1)
        #expect(try await rig.offline.rejectedWrites().map(\.id) == [gone.id])
        #expect(try await rig.offline.rejectedWrites().map(\.reason) == [.noMatchingRow])
        #expect(try await rig.offline.pendingWrites().isEmpty)
    }

    @Test(arguments: SyncEngine.all)
    func aContentRangeOfNoRowsIsANoMatchToo(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.answer(DataResponse(status: 204, headers: ["Content-Range": "*/0"]))
        guard case .rejected(let rejected) = try await rig.offline.write(Self.rename) else {
            Issue.record("an answer counting no rows was not a no-match")
            return
        }
        #expect(rejected.reason == .noMatchingRow)
    }

    @Test(arguments: SyncEngine.all)
    func anAnswerThatDoesNotSayHowManyRowsCountsAsApplied(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.answer(DataResponse(status: 204))
        guard case .sent(let response) = try await rig.offline.write(Self.rename) else {
            Issue.record("an answer without rows was not taken as applied")
            return
        }
        #expect(response.status == 204)
        #expect(try await rig.offline.rejectedWrites().isEmpty)
    }

    @Test(arguments: SyncEngine.all)
    func anIgnoreNoMatchWriteAndATableRuleCountAMatchOfNoRowAsSynced(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine) { $0.conflictRules["lists"] = ConflictRule(onNoMatch: .ignoreNoMatch) }
        rig.transport.answer(DataResponse(status: 200, body: "[]"), DataResponse(status: 200, body: "[]"))
        var ignored = Self.rename
        ignored.noMatchPolicy = .ignoreNoMatch
        guard case .sent = try await rig.offline.write(ignored) else {
            Issue.record("the write's own policy was not followed")
            return
        }
        guard case .sent = try await rig.offline.write(DataRequest(method: "DELETE", path: "/rest/v1/lists?id=eq.l1"))
        else {
            Issue.record("the table's rule was not followed")
            return
        }
        #expect(try await rig.offline.rejectedWrites().isEmpty)
    }

    @Test(arguments: SyncEngine.all)
    func aWriteToARowInConflictWaitsWhileOtherRowsSync(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine) { $0.conflictRules["tasks"] = ConflictRule(versionColumn: "version") }
        let t1 = DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.t1&version=eq.1", body: #"{"done":true}"#)
        rig.transport.answer(
            DataResponse(status: 200, body: "[]"), DataResponse(status: 200, body: #"[{"id":"t1","version":2}]"#))
        guard case .rejected(let conflict) = try await rig.offline.write(t1) else {
            Issue.record("the version-checked update that matched no row is not a conflict")
            return
        }
        #expect(conflict.reason == .conflict && conflict.serverRow == #"{"id":"t1","version":2}"#)
        #expect(rig.transport.received.map(\.method) == ["PATCH", "GET"])
        #expect(rig.transport.received.last?.path == "/rest/v1/tasks?id=eq.t1", "the row, read without the version")

        let sentBefore = rig.transport.received.count
        let next = DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.t1", body: #"{"title":"x"}"#)
        guard case .queued(let waiting) = try await rig.offline.write(next) else {
            Issue.record("a write to the row in conflict was sent")
            return
        }
        #expect(rig.transport.received.count == sentBefore, "not sent: it waits with the conflict")
        #expect(rig.offline.status.waitingOnConflictCount == 1, "and the status counts it at once")
        rig.transport.answer(DataResponse(status: 200, body: #"[{"id":"t2","version":5}]"#))
        _ = try await rig.offline.write(DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.t2", body: "{}"))
        await rig.offline.waitForRunningFlush()
        #expect(rig.transport.received.last?.path == "/rest/v1/tasks?id=eq.t2", "the other row's write went at once")
        #expect(try await rig.offline.pendingWrites().map(\.id) == [waiting.id])
        #expect(rig.offline.status.waitingOnConflictCount == 1 && rig.offline.status.conflictCount == 1)

        // Dropping the conflict lets the waiting write go.
        try await rig.offline.discard(conflict.id)
        rig.transport.answer(DataResponse(status: 200, body: #"[{"id":"t1","version":3}]"#))
        #expect(try await rig.offline.flush() == 1)
        #expect(rig.offline.status.conflictCount == 0 && rig.offline.status.waitingOnConflictCount == 0)
    }

    @Test(arguments: SyncEngine.all)
    func aConflictHoldsOnlyWhatMayTouchItsRow(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine) { $0.conflictRules["tasks"] = ConflictRule(versionColumn: "version") }
        rig.transport.answer(
            DataResponse(status: 200, body: "[]"), DataResponse(status: 200, body: #"[{"id":"t1","version":2}]"#))
        _ = try await rig.offline.write(
            DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.t1&version=eq.1", body: "{}"))
        #expect(rig.offline.status.conflictCount == 1)
        let held = [
            DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.t1", body: "{}"),
            DataRequest(method: "DELETE", path: "/rest/v1/tasks?done=eq.true"),
            DataRequest(method: "POST", path: "/rest/v1/tasks", body: #"{"id":"t1","title":"again"}"#),
            DataRequest(
                method: "POST", path: "/rest/v1/tasks", headers: ["Prefer": "resolution=merge-duplicates"],
                body: #"[{"id":"t9"}]"#),
            DataRequest(method: "POST", path: "/rest/v1/rpc/archive_done", body: "{}"),
        ]
        let free = [
            DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.t2", body: "{}"),
            DataRequest(
                method: "POST", path: "/rest/v1/tasks", body: #"{"title":"a new row, its id from the server"}"#),
            DataRequest(method: "DELETE", path: "/rest/v1/notes?done=eq.true"),
            DataRequest(method: "POST", path: "/storage/v1/object/photos/a.jpg", body: ""),
        ]
        for request in held { #expect(rig.offline.isHeld(request), "\(request.method) \(request.path)") }
        for request in free { #expect(!rig.offline.isHeld(request), "\(request.method) \(request.path)") }
    }

    @Test(arguments: SyncEngine.all)
    func rowKeysAreComparedByTheirBytes(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine) { $0.conflictRules["tasks"] = ConflictRule(versionColumn: "version") }
        rig.transport.answer(
            DataResponse(status: 200, body: "[]"), DataResponse(status: 200, body: #"[{"id":"e\u0301","version":2}]"#))
        // Row "e" + U+0301 (decomposed): Swift's == calls it equal to "é" (U+00E9), PostgreSQL does not.
        _ = try await rig.offline.write(
            DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.e%CC%81&version=eq.1", body: "{}"))
        #expect(rig.offline.status.conflictCount == 1)
        #expect(rig.offline.isHeld(DataRequest(method: "DELETE", path: "/rest/v1/tasks?id=eq.e%CC%81")))
        #expect(!rig.offline.isHeld(DataRequest(method: "DELETE", path: "/rest/v1/tasks?id=eq.%C3%A9")), "another row")
        // A key that begins with a combining mark is still read from its filter.
        let combining = DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.%CC%81x", body: "{}")
        #expect(PostgREST().equalValue(of: "id", in: combining.path) == "\u{301}x")
    }

    @Test(arguments: SyncEngine.all)
    func requeueingAConflictResolvesItWithItsOwnWriteAheadOfTheWritesThatWaited(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine) { $0.conflictRules["tasks"] = ConflictRule(versionColumn: "version") }
        rig.transport.online = false
        _ = try await rig.offline.write(
            DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.t1&version=eq.1", body: #"{"a":1}"#))
        guard
            case .queued(let waiting) = try await rig.offline.write(
                DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.t1&version=eq.1", body: #"{"b":2}"#))
        else {
            Issue.record("an offline write was not queued")
            return
        }
        rig.transport.online = true
        rig.transport.answer(
            DataResponse(status: 200, body: "[]"), DataResponse(status: 200, body: #"[{"id":"t1","version":5}]"#))
        #expect(try await rig.offline.flush() == 0)
        let conflict = try #require(try await rig.offline.conflicts().first)
        rig.transport.online = false  // so that the requeue's flush waits for the test
        let resolution = try await rig.offline.requeue(conflict.id)
        await rig.offline.waitForRunningFlush()
        #expect(resolution.id != conflict.id, "a new key: the old one's answer is kept by the server")
        #expect(resolution.request.path == "/rest/v1/tasks?id=eq.t1&version=eq.5")
        #expect(resolution.request.body == #"{"a":1}"#)
        let pending = try await rig.offline.pendingWrites()
        #expect(pending.map(\.id) == [resolution.id, waiting.id], "ahead of the write that waited")
        #expect(pending.last?.request.path == "/rest/v1/tasks?id=eq.t1&version=eq.5")
        #expect(try await rig.offline.conflicts().isEmpty)
    }

    @Test(arguments: SyncEngine.all)
    func conflictsSurviveARestartAndStillHoldTheirRow(_ engine: SyncEngine) async throws {
        let folder = try TemporaryFolder()
        let transport = ScriptedTransport()
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.memoryPressure = nil  // the machine's own pressure must not shed caches mid-test
        configuration.timer = ManualTimer()
        configuration.conflictRules["tasks"] = ConflictRule(versionColumn: "version")
        var offline = try await SovariaOffline(
            store: try await engine.open(folder.url), transport: transport, configuration: configuration)
        transport.answer(DataResponse(status: 200, body: "[]"), DataResponse(status: 200, body: #"[{"id":"t1"}]"#))
        _ = try await offline.write(
            DataRequest(method: "PATCH", path: "/rest/v1/tasks?id=eq.t1&version=eq.1", body: "{}"))
        await offline.close()
        offline = try await SovariaOffline(
            store: try await engine.open(folder.url), transport: transport, configuration: configuration)
        #expect(offline.status.conflictCount == 1)
        guard
            case .queued = try await offline.write(
                DataRequest(method: "DELETE", path: "/rest/v1/tasks?id=eq.t1"))
        else {
            Issue.record("after a restart, a write to the row in conflict was sent")
            return
        }
        await offline.close()
    }
}
