import Foundation
import Sovaria
import SovariaHTTP
import SovariaLevelDB
import SovariaPostgREST
import SovariaQueue
import SovariaSQLite
import SovariaSync
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Synchronization

/// The stores each end-to-end test runs on: SQLite and one other engine, from the package's one
/// engine list. A subset: the HTTP path is the same on every engine, and each test starts a server.
/// With `.flushed` and SQLite's file `store.sqlite`, the layouts are the crash writer's
/// (Tests/sovaria-crash-writer/CrashStores.swift), so a killed child's store opens again here.
typealias HTTPEngine = TestEngine

extension TestEngine {
    static let all = standard(durability: .flushed).filter { ["sqlite", "leveldb"].contains($0.name) }
}

/// Alice's session: `token-alice`, and after each refresh a new spelling of it
/// (`token-alice.r1`, …), which the test server accepts while the expired one stays refused.
final class TestTokens: AccessTokenProvider {
    private let state = Mutex((token: "token-alice", refreshes: 0))

    func accessToken() async throws -> String? { state.withLock { $0.token } }

    func refreshAccessToken() async throws {
        state.withLock { state in
            state.refreshes += 1
            state.token = "token-alice.r\(state.refreshes)"
        }
    }

    var refreshes: Int { state.withLock { $0.refreshes } }
}

/// Values appended from any task, read back in order.
final class Recorder<Value: Sendable>: Sendable {
    private let values = Mutex<[Value]>([])
    func append(_ value: Value) { values.withLock { $0.append(value) } }
    var all: [Value] { values.withLock { $0 } }
}

/// A controller on a fresh store, talking HTTP to the test server over its own database, with a
/// manual timer and a test clock.
struct HTTPRig {
    let server: RESTServer
    let folder: TemporaryFolder
    let engine: HTTPEngine
    let tokens = TestTokens()
    let transport: URLSessionTransport
    let timer = ManualTimer()
    let clock = TestClock()
    let offline: SovariaOffline
    let errors = Recorder<SyncError>()

    /// A rig whose server has a database of `cluster` (by default the one every test shares).
    init(_ engine: HTTPEngine, cluster: PostgresCluster? = nil) async throws {
        server = try await RESTServer.start(on: cluster)
        folder = try TemporaryFolder()
        self.engine = engine
        transport = URLSessionTransport(
            baseURL: server.baseURL, apiKey: "test-anon-key", tokens: tokens, configuration: .testServer)
        offline = try await Self.controller(
            await engine.open(folder.url), transport: transport, timer: timer, clock: clock, errors: errors)
    }

    static func controller(
        _ store: any OfflineStore, transport: any SyncTransport, timer: ManualTimer, clock: TestClock,
        errors: Recorder<SyncError>
    ) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.memoryPressure = nil  // the machine's own pressure must not shed caches mid-test
        configuration.timer = timer
        configuration.clock = clock.read
        configuration.jitter = { 1 }
        let offline = try await SovariaOffline(store: store, transport: transport, configuration: configuration)
        offline.onSyncError = { errors.append($0) }
        return offline
    }

    /// The notes table as the superuser sees it: `id|owner|title|done` rows, by id.
    func notes() async throws -> [String] {
        try await server.query("SELECT id || '|' || owner || '|' || title || '|' || done FROM notes ORDER BY id")
    }
}

/// A note insert, as queued.
func insertNote(_ id: String, title: String, list: String? = nil, owner: String? = nil) -> DataRequest {
    var fields = [#""id":"\#(id)""#, #""title":"\#(title)""#]
    if let list { fields.append(#""list_id":"\#(list)""#) }
    if let owner { fields.append(#""owner":"\#(owner)""#) }
    return PostgREST.insert(into: "notes", json: "{" + fields.joined(separator: ",") + "}")
}
