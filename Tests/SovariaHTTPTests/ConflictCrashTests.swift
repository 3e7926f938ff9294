import Foundation
import Sovaria
import SovariaHTTP
import SovariaLMDB
import SovariaPostgREST
import SovariaQueue
import SovariaSQLite
import SovariaSodium
import SovariaSync
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import sovaria_crash_writer

#if canImport(Glibc)
    import Glibc
#endif

/// A process killed between the server's answer to a version-checked update (it matched no row:
/// the row changed) and the write's move to the conflicts: after the restart the write is in
/// exactly one place. On every embedded engine the crash writer opens, and the encrypted store.
@Suite(.serialized) struct ConflictCrashTests {
    /// The package's engines the crash writer opens (Tests/sovaria-crash-writer/CrashStores.swift),
    /// in its layouts and with its encryption key. Not memory: the child writes the store and this
    /// process reopens it.
    static let engines = TestEngine.standard(
        durability: .flushed, including: .encrypted, secrets: StoreSecrets(key: CrashStores.testKeyBytes)
    ).filter { $0.name != "memory" }

    @Test(arguments: engines)
    func aKillBeforeAConflictWasRecordedLeavesTheWriteInExactlyOnePlace(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        let transport = URLSessionTransport(
            baseURL: server.baseURL, apiKey: "test-anon-key", tokens: TestTokens(), configuration: .testServer)
        let folder = try TemporaryFolder()
        let seeded = try await transport.send(
            PostgREST.insert(into: "tasks", json: #"{"id":"t1","title":"Original"}"#, returning: false))
        try #require(seeded.isSuccess, "\(seeded.status) \(seeded.body)")
        let moved = try await transport.send(
            PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"Changed elsewhere"}"#))
        try #require(moved.isSuccess, "\(moved.status) \(moved.body)")
        // The child's first send gets 503 (so the write is queued); its flush reaches the server,
        // which matches no row, keeps its answer under the key and holds it until the child is dead.
        try await server.control("POST", "/_test/fail", json: #"{"status":503,"count":1}"#)
        try await server.control("POST", "/_test/fail", json: #"{"hold":true,"count":1}"#)
        let appFolder = folder.url
        let child = try ChildProcess(
            CrashWriterBinary.url.path,
            ["conflict-http-\(engine.name)", appFolder.path, "flushed", String(server.port)],
            captureOutput: false)
        let (heldStatus, _) = try await server.control("GET", "/_test/held")
        #expect(heldStatus == 200, "the server answered the child's update")
        child.send(SIGKILL)
        #expect(ChildProcess.killed(try await child.wait(), by: SIGKILL), "killed, not finished")
        try await server.control("POST", "/_test/release")

        // The app starts again on the same store, with the same rule.
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.memoryPressure = nil  // the machine's own pressure must not shed caches mid-test
        configuration.timer = ManualTimer()
        configuration.conflictRules = ["tasks": ConflictRule(versionColumn: "version", onConflict: .reject)]
        let offline = try await SovariaOffline(
            store: try await engine.open(appFolder), transport: transport, configuration: configuration)
        let pending = try await offline.pendingWrites()
        #expect(pending.count == 1, "the write is still queued, and nowhere else")
        #expect(try await offline.rejectedWrites().isEmpty)
        let id = try #require(pending.first?.id)

        #expect(try await offline.flush() == 0)
        #expect(try await offline.pendingWrites().isEmpty)
        let conflicts = try await offline.conflicts()
        #expect(conflicts.map(\.id) == [id], "now a conflict, once")
        #expect(try await offline.rejectedWrites().count == 1)
        #expect(conflicts.first?.serverRow?.contains("Changed elsewhere") == true)
        let patches = try await server.requests().filter { $0.method == "PATCH" && $0.idempotencyKey == id }
        #expect(patches.count == 3, "the 503, the try whose answer was held, and once after the restart")
        #expect(patches.last?.replayed == true, "the same key: the server's kept answer, not a second update")
        #expect(try await server.query("SELECT title || '|' || version FROM tasks") == ["Changed elsewhere|2"])
        await offline.close()
    }
}
