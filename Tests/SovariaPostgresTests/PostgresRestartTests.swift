import Foundation
import Sovaria
import SovariaPostgres
import SovariaTestServers
import Testing

/// The server goes away and comes back under a running store: calls during the outage throw
/// `.io` saying what to check, and the store works again after the restart with no action.
@Suite struct PostgresRestartTests {
    @Test func theStoreKeepsWorkingAcrossARestartOfTheServer() async throws {
        let cluster = try await PostgresCluster.start()
        do {
            try await checkRestarts(cluster)
        } catch {
            try? await cluster.destroy()
            throw error
        }
        try await cluster.destroy()
    }

    /// An administrator ends every session of the database (`pg_terminate_backend`) while the
    /// server stays up: the store's idle connections are dead, and the next calls, reads and
    /// writes alike, open new ones without an error. (The timeout makes `pg_terminate_backend`
    /// wait until the sessions are gone, so their sockets are closed before the store is called.)
    @Test func sessionsEndedByAnAdministratorAreReplaced() async throws {
        let cluster = try await PostgresCluster.shared()
        let conninfo = try await cluster.makeDatabase()
        let database = String(conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }?.dropFirst(7) ?? "")
        let store = try PostgresOfflineStore(connection: conninfo, configuration: .init(maxConnections: 3))
        try await fill(store, "before", count: 20)
        let ended = try await cluster.psql(
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity WHERE datname = '\(database)'")
        #expect((Int(ended.trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0) >= 1)
        #expect(try await store.get("before:3") == "3")
        try await store.write([.set(key: "after", value: "1"), .delete(key: "before:3")])
        try await fill(store, "after", count: 20)
        #expect(try await store.keys("after").count == 21)
        #expect(try await store.get("before:3") == nil)
    }

    private func checkRestarts(_ cluster: PostgresCluster) async throws {
        let conninfo = try await cluster.makeDatabase()
        let store = try PostgresOfflineStore(connection: conninfo, configuration: .init(maxConnections: 3))
        try await fill(store, "before", count: 30)  // several connections are open and idle now

        // A restart while connections sit idle: the next calls drop them and reconnect, reads and
        // writes alike, without an error.
        try await cluster.restart()
        #expect(try await store.get("before:7") == "7")
        try await fill(store, "after-restart", count: 30)
        #expect(try await store.keys("after-restart:").count == 30)

        // During an outage every call throws .io naming the server and what to check.
        try await cluster.stop()
        for call in outageCalls(store) {
            let error = await offlineStoreError(call)
            #expect(error?.code == .io, "\(String(describing: error))")
            #expect(error?.engine == .postgres)
            #expect(error?.message.contains("Check that the server is running") == true, "\(String(describing: error))")
            #expect(error?.message.contains("port=\(cluster.port)") == true, "\(String(describing: error))")
        }

        // Back up: the same store reads what was written before and writes again.
        try await cluster.restart()
        #expect(try await store.keys("before:").count == 30)
        try await store.write([.set(key: "back", value: "1"), .delete(key: "before:0")])
        #expect(try await store.get("back") == "1")
        #expect(try await store.get("before:0") == nil)
        try await fill(store, "after-outage", count: 30)
    }

    private func fill(_ store: PostgresOfflineStore, _ prefix: String, count: Int) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask { try await store.set("\(prefix):\(index)", "\(index)") }
            }
            try await group.waitForAll()
        }
    }

    private func outageCalls(_ store: PostgresOfflineStore) -> [() async throws -> Void] {
        [
            { _ = try await store.get("before:1") },
            { try await store.set("during", "outage") },
            { try await store.write([.set(key: "x", value: "1"), .set(key: "y", value: "2")]) },
            { _ = try await store.keys("before:") },
            { _ = try await store.entries("", after: nil, limit: 5) },
            { try await store.compact() },
        ]
    }
}
