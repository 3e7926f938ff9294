import Foundation
import Sovaria
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSync

/// The crash writer's HTTP mode (`http-<engine>`, with the test server's port as FIRST): sends one
/// insert to the test server through `URLSessionTransport` as `token-alice`, which the test has
/// told to answer 503 first (so the write is queued) and then to hold its answer after applying
/// it; then flushes. The test kills the process while the flush waits for that answer: the
/// server has the row, the queue still has the write.
///
/// Prints `queued <client id>` once the write is queued and `flushing` before the flush.
enum HTTPCrashWorkload {
    static let enginePrefix = "http-"

    /// The note the workload inserts.
    static let insert = PostgREST.insert(into: "notes", json: #"{"id":"crash-1","title":"Written before the kill"}"#)

    static func run(_ store: any OfflineStore, port: Int) async throws -> Never {
        try await queueThenFlush(insert, on: store, port: port)
    }

    /// Queues `write` (the test server answers its first try 503) and flushes it, as Alice over
    /// `URLSessionTransport`, saying `ready`, `queued <client id>`, `flushing` and `flushed`.
    static func queueThenFlush(
        _ request: DataRequest, on store: any OfflineStore, port: Int,
        conflictRules: [String: ConflictRule] = [:]
    ) async throws -> Never {
        let transport = URLSessionTransport(
            baseURL: URL(string: "http://127.0.0.1:\(port)")!, tokens: FixedToken("token-alice"))
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = NeverFiringTimer()
        configuration.conflictRules = conflictRules
        let offline = try await SovariaOffline(store: store, transport: transport, configuration: configuration)
        CrashWriter.acknowledge("ready")
        guard case .queued(let write) = try await offline.write(request) else {
            throw OfflineStoreError(.io, "the test server did not answer 503 first")
        }
        CrashWriter.acknowledge("queued \(write.id)")
        CrashWriter.acknowledge("flushing")
        _ = try await offline.flush()
        CrashWriter.acknowledge("flushed")
        exit(0)
    }
}

/// A token that never changes.
struct FixedToken: AccessTokenProvider {
    let token: String
    init(_ token: String) { self.token = token }
    func accessToken() async throws -> String? { token }
    func refreshAccessToken() async throws {}
}
