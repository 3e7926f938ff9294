import Sovaria
import SovariaPostgREST
import SovariaSync

/// The crash writer's conflict mode (`conflict-http-<engine>`, with the test server's port as
/// FIRST): queues an update of task `t1` that expects version 1 (the test has moved the row on,
/// and told the server to answer 503 first so the write is queued), then flushes; the server
/// holds its answer (the update matched no row) and the test kills the process while the flush
/// waits for it: the server has answered, the write is still queued, not yet a conflict.
///
/// Prints `queued <client id>` once the write is queued and `flushing` before the flush.
enum ConflictCrashWorkload {
    static let enginePrefix = "conflict-http-"

    /// The update the workload queues.
    static let update = PostgREST.update(
        "tasks", where: [.eq("id", "t1"), .eq("version", "1")], json: #"{"title":"Written before the kill"}"#)

    /// The controller's conflict rule for `tasks`, the same in the test that reopens the store.
    static let rules = ["tasks": ConflictRule(versionColumn: "version", onConflict: .reject)]

    static func run(_ store: any OfflineStore, port: Int) async throws -> Never {
        try await HTTPCrashWorkload.queueThenFlush(update, on: store, port: port, conflictRules: rules)
    }
}
