import Foundation
import Sovaria
import SovariaCache
import SovariaQueue
import SovariaSync
import SovariaTestEngines
import Testing

@testable import sovaria_crash_writer

/// kill -9 while the controller applies change-feed pages to two cached answers: inside the
/// store batch that holds a page's answers and its checkpoint (before and after it reaches the
/// store) and at random moments of a pull. After every kill, the checkpoint never went back nor
/// behind an acknowledged pull, and each cached answer is the table's answer at that checkpoint
/// (on a store without atomic batches, at it or one page past it: the page comes again, and
/// applying it twice changes nothing). Following on after the last kill brings both answers to
/// the log's answer.
@Suite(.serialized) struct FeedCrashTests {
    static let rounds = 8

    @Test(arguments: TestEngine.onDisk)
    func aKillDuringAnApplyNeitherSkipsNorTearsAPage(engine: String) async throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("sovaria-feed-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var checkpoint = 0
        for round in 0..<Self.rounds {
            let acks = try await CrashChild.run(
                engine: FeedCrashWorkload.enginePrefix + engine, path: folder.path,
                durability: round.isMultiple(of: 2) ? "flushed" : "synced", first: round,
                killAfterAcknowledgements: Int.random(in: 1...12))
            #expect(acks.exitMessage == nil)
            let pulled = acks.queue.filter { $0.kind == "pulled" }.map(\.index).max() ?? 0
            // The store alone, not a controller, whose tasks could hold it (and LevelDB's lock)
            // past the next child's start; the cache's own background work is waited for.
            let stored = try await Self.check(engine, folder, round: round)
            #expect(stored >= checkpoint, "round \(round): the checkpoint went back from \(checkpoint) to \(stored)")
            #expect(stored >= pulled, "round \(round): an acknowledged pull to \(pulled) was lost (\(stored))")
            #expect(stored.isMultiple(of: FeedCrashWorkload.pageSize), "round \(round): \(stored)")
            checkpoint = stored
        }
        #expect(checkpoint > 0, "no page was ever applied")

        let offline = try await Self.open(engine, folder)
        for _ in 0..<3 { _ = try await offline.pullChanges(of: "notes") }
        let last = Int(try await offline.feedCheckpoint(of: "notes") ?? 0)
        #expect(last == checkpoint + 3 * FeedCrashWorkload.pageSize)
        try await Self.expectAnswers(at: last, atomic: true, round: Self.rounds) { read in
            try await offline.read(read, policy: .cacheOnly).response
        }
        #expect(try await offline.read(FeedCrashWorkload.all, policy: .cacheOnly).isExact)
        await offline.close()
    }

    /// The checkpoint the store holds (`sov:meta:feed:notes`), after checking that both cached
    /// answers are the table's at it (see ``expectAnswers(_:at:atomic:round:)``).
    static func check(_ engine: String, _ folder: URL, round: Int) async throws -> Int {
        let store = try await CrashStores.open(engine, at: folder, durability: .synced)
        let checkpoint = try #require(Int(try await store.get("sov:meta:feed:notes") ?? "0"))
        let cache = try await QueryCache(store: store)
        let atomic = store.capabilities.contains(.atomicBatch)
        try await expectAnswers(at: checkpoint, atomic: atomic, round: round) { read in
            try await cache.cachedResponse(for: "GET " + read.path)
        }
        // The cache loads its index behind its open, in a task that holds the store (and
        // LevelDB's lock) until it ends: the next child must find the store free.
        await cache.waitForBackgroundRefreshes()
        return checkpoint
    }

    static func open(_ engine: String, _ folder: URL) async throws -> SovariaOffline {
        let store = try await CrashStores.open(engine, at: folder, durability: .synced)
        return try await SovariaOffline(
            store: store, transport: LogFeedServer(), configuration: FeedCrashWorkload.configuration())
    }

    /// Both answers are the table's at `position`, or (on a store without atomic batches) at the
    /// next page's end, and not stale; none is cached only while no page was applied. `cached`
    /// gives the cached response of a read.
    static func expectAnswers(
        at position: Int, atomic: Bool, round: Int,
        _ cached: (DataRequest) async throws -> CachedResponse?
    ) async throws {
        let positions = atomic ? [position] : [position, position + FeedCrashWorkload.pageSize]
        for read in [FeedCrashWorkload.all, FeedCrashWorkload.open] {
            guard let response = try await cached(read) else {
                #expect(position == 0, "round \(round): \(read.path) not cached after a page was applied")
                continue
            }
            let rows = try JSONDecoder().decode([Row].self, from: Data(response.body.utf8))
            let expected = positions.map { answer(read, at: $0) }
            #expect(expected.contains(rows), "round \(round), \(read.path) at \(positions): \(response.body)")
            #expect(!response.isStale, "round \(round): \(read.path) stale")
        }
    }

    /// The server's answer to `read` (one of the workload's two) after the changes up to `position`.
    static func answer(_ read: DataRequest, at position: Int) -> [Row] {
        let rows = FeedCrashWorkload.rows(at: position).values
        if read == FeedCrashWorkload.all {
            return rows.sorted { $0.id < $1.id }.map { Row(id: $0.id, title: $0.title, done: $0.done) }
        }
        return rows.filter { !$0.done }.sorted { $0.title < $1.title }.map { Row(id: $0.id, title: $0.title) }
    }

    /// A row as either answer holds it (the open notes' answer has no `done`).
    struct Row: Decodable, Equatable {
        var id: String
        var title: String
        var done: Bool?
    }
}
