import Foundation
import Sovaria
import SovariaQueue
import SovariaTestServers
import Testing

@testable import SovariaPostgREST
@testable import SovariaSync

/// The cached reads of a table, as a change feed's page lists them: parsed once and kept until a
/// query of the table is added or the controller is cleared.
@Suite struct CachedReadsTests {
    static func controller(_ server: ScriptedTransport) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        server.state.withLock { $0.defaultAnswer = DataResponse(status: 200, body: "[]") }
        return try await SovariaOffline(store: MemoryOfflineStore(), transport: server, configuration: configuration)
    }

    static func paths(_ reads: [ReadIdentity]) -> [String] { reads.map(\.request.path) }

    @Test func aReadAddedToTheTableIsListedNextTime() async throws {
        let offline = try await Self.controller(ScriptedTransport())
        let open = PostgREST.select("notes", where: [.eq("done", "false")])
        let done = PostgREST.select("notes", where: [.eq("done", "true")])
        _ = try await offline.read(open, policy: .networkOnly)
        #expect(try await Self.paths(offline.cachedReads(of: "notes")) == [open.path])
        _ = try await offline.read(done, policy: .networkOnly)
        #expect(try await Self.paths(offline.cachedReads(of: "notes")) == [done.path, open.path].sorted())
        await offline.close()
    }

    /// After a clear, as many queries as before are other queries: the list kept from before
    /// must not be taken for theirs.
    @Test func afterAClearTheSameNumberOfQueriesAreListedAfresh() async throws {
        let offline = try await Self.controller(ScriptedTransport())
        let before = PostgREST.select("notes", where: [.eq("owner", "ada")])
        let after = PostgREST.select("notes", where: [.eq("owner", "grace")])
        _ = try await offline.read(before, policy: .networkOnly)
        #expect(try await Self.paths(offline.cachedReads(of: "notes")) == [before.path])
        try await offline.clear()
        _ = try await offline.read(after, policy: .networkOnly)
        #expect(try await Self.paths(offline.cachedReads(of: "notes")) == [after.path])
        await offline.close()
    }
}

/// What the change feed's evaluator keeps between pages goes when memory runs short.
@Suite struct KeptParsesTests {
    @Test func memoryPressureEmptiesTheParsesKeptForTheNextPage() async throws {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        let overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        configuration.overlay = overlay
        let offline = try await SovariaOffline(
            store: MemoryOfflineStore(), transport: ScriptedTransport(), configuration: configuration)
        let read = PostgREST.select("notes", columns: "id,title", order: "id")
        let delete = RowChange(position: 1, table: "notes", key: "n1", operation: .delete)
        _ = overlay.changesThatCanAlter([(read, #"[{"id":"n1","title":"a"}]"#)], among: [delete])
        #expect(overlay.parsedAnswers.count == 1, "a page's parse is kept, shared with the controller's copy")
        offline.shedOverlays(for: .warning)
        #expect(overlay.parsedAnswers.count == 0)
        await offline.close()
    }
}
