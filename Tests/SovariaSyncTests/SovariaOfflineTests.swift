import Foundation
import Sovaria
import SovariaCache
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgREST
import SovariaQueue
import SovariaSQLite
import SovariaSodium
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaSync

/// The stores every controller test runs on (the package's one engine list), writing `.synced`.
typealias SyncEngine = TestEngine

extension TestEngine {
    static let all = standard(durability: .synced, sqliteFile: "s.sqlite", including: .encrypted)
}

/// A controller on a fresh store, with a scripted server, a manual timer and a test clock.
struct Rig {
    let folder: TemporaryFolder
    let store: any OfflineStore
    let transport = ScriptedTransport()
    let timer = ManualTimer()
    let clock = TestClock()
    let offline: SovariaOffline
    let errors = Recorder<SyncError>()

    /// Makes the store a controller uses of the one its engine opened.
    struct Wrap {
        let make: (any OfflineStore) -> any OfflineStore
    }

    /// A controller on `engine`'s store (through `wrap`, if given), configured by `configure`.
    init(
        _ engine: SyncEngine, wrap: Wrap? = nil,
        configure: (inout SovariaOffline.Configuration) -> Void = { _ in }
    ) async throws {
        folder = try TemporaryFolder()
        let opened = try await engine.open(folder.url)
        store = wrap?.make(opened) ?? opened
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = timer
        configuration.clock = clock.read
        configuration.jitter = { 1 }
        // The machine's own memory pressure would shed caches mid-test (a loaded test run makes
        // some): a test that wants pressure injects a ManualMemoryPressureSource.
        configuration.memoryPressure = nil
        configure(&configuration)
        offline = try await SovariaOffline(store: store, transport: transport, configuration: configuration)
        let errors = errors
        offline.onSyncError = { error in errors.append(error) }
    }

    var reported: [SyncError] { errors.all }
}

/// Values appended from any task, read back in order.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}

func insert(_ id: Int) -> DataRequest {
    DataRequest(method: "POST", path: "/rest/v1/notes", body: #"{"id":\#(id)}"#)
}

@Suite struct SovariaOfflineTests {
    @Test(arguments: SyncEngine.all)
    func offlineWritesQueueAndFlushInOrderWithTheirIdempotencyKeys(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        var queued: [QueuedWrite] = []
        for id in 1...3 {
            guard case .queued(let write) = try await rig.offline.write(insert(id)) else {
                Issue.record("write \(id) was not queued while offline")
                return
            }
            queued.append(write)
        }
        #expect(!rig.offline.online)
        #expect(try await rig.offline.pendingWrites().map(\.id) == queued.map(\.id))
        rig.transport.online = true
        #expect(try await rig.offline.flush() == 3)
        #expect(rig.transport.received.map(\.body) == (1...3).map { #"{"id":\#($0)}"# })
        #expect(rig.transport.received.map { $0.headers["Idempotency-Key"] } == queued.map(\.id))
        #expect(try await rig.offline.pendingWrites().isEmpty)
        #expect(rig.offline.online)
    }

    @Test(arguments: SyncEngine.all)
    func aWriteMadeWhileOthersArePendingQueuesBehindThemEvenOnline(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 503))  // reaches the server, keeps the head
        #expect(try await rig.offline.flush() == 0)
        #expect(rig.offline.online)
        let outcome = try await rig.offline.write(insert(2))
        guard case .queued = outcome else {
            Issue.record("a write overtook a pending one: \(outcome)")
            return
        }
        rig.clock.advance(seconds: 3_600)
        #expect(try await rig.offline.flush() == 2)
        #expect(rig.transport.received.suffix(2).map(\.body) == [#"{"id":1}"#, #"{"id":2}"#])
    }

    @Test(arguments: SyncEngine.all)
    func onlineWithNothingPendingSendsAtOnce(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        let outcome = try await rig.offline.write(insert(1))
        #expect(outcome == .sent(DataResponse(status: 201, body: "[]")))
        #expect(try await rig.offline.pendingWrites().isEmpty)
    }

    /// A write sent at once whose answer was lost (applied, then the connection dropped) is
    /// queued under the key it was sent with, so its replay is recognised: applied once.
    @Test(arguments: SyncEngine.all)
    func aDirectSendWhoseAnswerIsLostIsReplayedWithTheSameKey(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.loseNextAnswer()
        guard case .queued(let write) = try await rig.offline.write(insert(1)) else {
            Issue.record("a write whose answer was lost was not queued")
            return
        }
        let firstKey = try #require(rig.transport.received.first?.headers["Idempotency-Key"])
        #expect(write.id == firstKey)
        #expect(try await rig.offline.flush() == 1)
        #expect(rig.transport.received.map { $0.headers["Idempotency-Key"] } == [firstKey, firstKey])
        #expect(rig.transport.applied == [firstKey])
    }

    @Test(arguments: SyncEngine.all)
    func pastMaxQueuedAWriteIsRefusedAndNothingIsWritten(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine) { $0.maxQueued = 2 }
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        _ = try await rig.offline.write(insert(2))
        let error = await #expect(throws: WriteQueueError.self) { try await rig.offline.write(insert(3)) }
        #expect(error?.code == .queueFull)
        #expect(error?.message.contains("OFFLINE_QUEUE_FULL") == true)
        #expect(try await rig.offline.pendingWrites().count == 2)
    }

    @Test(arguments: SyncEngine.all)
    func retryAfterKeepsTheHeadUntilTheDelayPasses(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 503, headers: ["Retry-After": "120"]))
        #expect(try await rig.offline.flush() == 0)
        #expect(rig.reported.first?.kind == .retryLater(status: 503, retryAfter: .seconds(120)))
        rig.clock.advance(seconds: 119)
        #expect(try await rig.offline.flush() == 0)
        #expect(rig.transport.received.count == 1, "nothing is sent before Retry-After passes")
        rig.clock.advance(seconds: 2)
        #expect(try await rig.offline.flush() == 1)
        #expect(Set(rig.transport.received.map { $0.headers["Idempotency-Key"] }).count == 1, "one key on every try")
    }

    @Test(arguments: SyncEngine.all)
    func backoffDoublesAndAStuckHeadIsReportedAsStalled(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine) { configuration in
            configuration.stalledAfterAttempts = 3
            configuration.stalledAfter = .seconds(3_600)
        }
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        rig.transport.online = true
        for _ in 0..<3 {
            rig.transport.answer(DataResponse(status: 500))
            #expect(try await rig.offline.flush() == 0)
            rig.clock.advance(seconds: 120)
        }
        let delays = rig.reported.compactMap { error -> Duration? in
            if case .retryLater(_, let delay) = error.kind { delay } else { nil }
        }
        #expect(delays == [.seconds(1), .seconds(2), .seconds(4)])
        #expect(rig.reported.contains { if case .stalled(3, _) = $0.kind { true } else { false } })
        #expect(try await rig.offline.pendingWrites().first?.attempts == 3)
    }

    @Test(arguments: SyncEngine.all)
    func aHeadFailingForLongIsReportedAsStalledAfterItsFirstFailure(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine) { $0.stalledAfter = .seconds(600) }
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        rig.clock.advance(seconds: 601)  // queued more than ten minutes ago, never tried
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 502))
        #expect(try await rig.offline.flush() == 0)
        #expect(rig.reported.contains { if case .stalled(1, _) = $0.kind { true } else { false } })
    }

    @Test(arguments: SyncEngine.all)
    func aRefusedWriteMovesToTheRejectedListAndTheNextOneSyncs(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        let first = try await rig.offline.write(insert(1))
        _ = try await rig.offline.write(insert(2))
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 409, body: "duplicate key value violates unique constraint"))
        #expect(try await rig.offline.flush() == 1)
        let rejected = try await rig.offline.rejectedWrites()
        #expect(rejected.count == 1)
        #expect(rejected.first?.status == 409)
        #expect(rejected.first?.message == "duplicate key value violates unique constraint")
        if case .queued(let write) = first { #expect(rejected.first?.id == write.id) }
        #expect(rig.reported.contains { if case .rejected = $0.kind { true } else { false } })
        #expect(try await rig.offline.pendingWrites().isEmpty)
    }

    @Test(arguments: SyncEngine.all)
    func a401RefreshesOnceAndNeverRejects(_ engine: SyncEngine) async throws {
        let refreshes = Recorder<Void>()
        let rig = try await Rig(engine) { configuration in
            configuration.refreshAuthorization = { refreshes.append(()) }
        }
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 401))
        #expect(try await rig.offline.flush() == 1)
        #expect(refreshes.all.count == 1)

        _ = try await rig.offline.write(insert(2))  // online, nothing pending: sent at once
        rig.transport.online = false
        _ = try await rig.offline.write(insert(3))
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 401), DataResponse(status: 401))
        #expect(try await rig.offline.flush() == 0)
        #expect(rig.reported.contains { $0.kind == .unauthorized })
        #expect(try await rig.offline.rejectedWrites().isEmpty)
        #expect(try await rig.offline.pendingWrites().count == 1)
        await rig.timer.fire()  // paused: the timer does not send
        #expect(try await rig.offline.pendingWrites().count == 1)
        #expect(try await rig.offline.flush() == 1)  // an explicit flush resumes
    }

    @Test(arguments: SyncEngine.all)
    func theTimerAndAReconnectFlush(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        rig.transport.online = true
        await rig.timer.fire()
        #expect(try await rig.offline.pendingWrites().isEmpty)

        rig.transport.online = false
        _ = try await rig.offline.write(insert(2))
        rig.transport.online = true
        // A read that reaches the server is a reconnect: it starts a flush.
        _ = try await rig.offline.read(DataRequest(method: "GET", path: "/rest/v1/other"))
        await rig.offline.waitForRunningFlush()
        #expect(try await rig.offline.pendingWrites().isEmpty)
        #expect(rig.transport.applied.count == 2)
    }

    @Test(arguments: SyncEngine.all)
    func readsFallBackToTheCacheAndWritesMarkTheirTableStale(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        let select = DataRequest(method: "GET", path: "/rest/v1/notes?select=*")
        rig.transport.answer(DataResponse(status: 200, headers: ["ETag": "\"v1\""], body: "[1]"))
        #expect(try await rig.offline.read(select).response?.body == "[1]")

        rig.transport.online = false
        await #expect(throws: SyncTransportError.self) { try await rig.offline.read(select, policy: .networkOnly) }
        #expect(!rig.offline.online)
        // Offline, a read falls back to the last cached result, even when it is stale.
        try await rig.offline.cache.markStale(ReadIdentity(select, api: PostgREST()).cacheKey)
        #expect(try await rig.offline.read(select).response?.body == "[1]")

        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 304))
        #expect(try await rig.offline.read(select, policy: .networkOnly).response?.body == "[1]")
        #expect(rig.transport.received.last?.headers["If-None-Match"] == "\"v1\"")

        _ = try await rig.offline.write(insert(9))  // synced at once: the notes lists are stale
        rig.transport.answer(DataResponse(status: 200, body: "[1,9]"))
        #expect(try await rig.offline.read(select).response?.body == "[1,9]")
    }

    @Test(arguments: SyncEngine.all)
    func maxCachedKeepsTheResultsTheServerSentLast(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine) { $0.maxCached = 2 }
        let dates = ["Mon, 01 Jun 2026 10:00:00 GMT", "Mon, 01 Jun 2026 09:00:00 GMT", "Mon, 01 Jun 2026 11:00:00 GMT"]
        for (index, date) in dates.enumerated() {
            rig.transport.answer(DataResponse(status: 200, headers: ["Date": date], body: "[\(index)]"))
            _ = try await rig.offline.read(DataRequest(method: "GET", path: "/rest/v1/notes?page=\(index)"))
        }
        #expect(try await rig.offline.cache.responseCount == 2)
        rig.transport.online = false
        // Page 1 had the oldest server time: it went; pages 0 and 2 answer from the cache.
        for index in [0, 2] {
            let page = DataRequest(method: "GET", path: "/rest/v1/notes?page=\(index)")
            #expect(try await rig.offline.read(page).response?.body == "[\(index)]")
        }
        await #expect(throws: SyncTransportError.self) {
            try await rig.offline.read(DataRequest(method: "GET", path: "/rest/v1/notes?page=1"))
        }
    }

    @Test(arguments: SyncEngine.all)
    func clearForgetsEverythingAndCloseRefusesLaterCalls(_ engine: SyncEngine) async throws {
        let rig = try await Rig(engine)
        rig.transport.online = false
        _ = try await rig.offline.write(insert(1))
        try await rig.offline.clear()
        #expect(try await rig.offline.pendingWrites().isEmpty)
        #expect(try await rig.store.keys("sov:").filter { !$0.starts(with: "sov:meta:") }.isEmpty)
        await rig.offline.close()
        let error = await #expect(throws: SovariaOfflineError.self) { try await rig.offline.flush() }
        #expect(error?.code == .closed)
    }

    @Test(arguments: SyncEngine.all.filter { $0.name != "memory" })
    func theQueueSurvivesARestartAndKeepsItsKeys(_ engine: SyncEngine) async throws {
        let folder = try TemporaryFolder()
        let transport = ScriptedTransport()
        transport.online = false
        var ids: [String] = []
        do {
            let offline = try await SovariaOffline(
                store: try await engine.open(folder.url), transport: transport, configuration: .init(api: PostgREST()))
            for id in 1...3 {
                if case .queued(let write) = try await offline.write(insert(id)) { ids.append(write.id) }
            }
            await offline.close()
        }
        transport.online = true
        let reopened = try await SovariaOffline(
            store: try await engine.open(folder.url), transport: transport, configuration: .init(api: PostgREST()))
        #expect(try await reopened.pendingWrites().map(\.id) == ids)
        #expect(try await reopened.flush() == 3)
        #expect(transport.applied == ids)
        await reopened.close()
    }
}
