import Foundation
import Sovaria
import Testing

@testable import SovariaFiles

/// A cached file deleted behind the cache (the system purging Caches, a user cleaning a folder)
/// drops its entry at the next open of it (issue 47, section 2b), on every metadata engine.
@Suite struct FileCacheMissingFileTests {
    @Test(arguments: MetadataEngine.all)
    func aFileDeletedBehindTheCacheIsDownloadedAgainByTheReadThrough(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let store = try await bench.metadata()
        let cache = try await bench.open(.unlimited, store: store)
        try await put(cache, "k", 400, tag: 1)
        try await put(cache, "other", 250, tag: 5)
        try deleteBehindTheCache(bench, "k")
        // A cache that loops downloading stops at the second call.
        let downloads = Downloads(body: body(2, 600), limit: 1)
        downloads.gate.open()
        let reading = Task { try await cache.open("k", orDownload: downloads.write) }
        // Bounded by a number of looks, not a timer: a cache that spins without downloading is
        // cancelled (its loop ends on cancellation) and the test fails.
        if !(await waitUntil { downloads.count > 0 }) { reading.cancel() }
        let lease = try await reading.value
        #expect(downloads.count == 1, "downloaded once")
        #expect(try lease.fileHandle.readToEnd() == body(2, 600))
        #expect(lease.sizeBytes == 600)
        #expect(cache.contains("k"))
        #expect(cache.totalBytes == 850, "the lost file's 400 bytes left the total, the new 600 came in")
        #expect(cache.fileCount == 2)
        #expect(cache.statistics.misses == 1)
        #expect(cache.statistics.hits == 0)
        #expect(try bench.filesOnDisk() == [fileID("k"): 600, fileID("other"): 250])
        let keys = try await bench.metadataKeys(store)
        #expect(keys.filter { $0.id == fileID("k") }.map(\.sizeBytes) == [600], "one key for k, the new size")
        #expect(keys.count == 2)
    }

    @Test(arguments: MetadataEngine.all)
    func openOfAFileDeletedBehindTheCacheMissesAndDropsItsEntry(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let store = try await bench.metadata()
        do {
            let cache = try await bench.open(.bytes(1_000), store: store)
            try await put(cache, "a", 400, tag: 1)
            try await put(cache, "k", 300, tag: 2)
            try deleteBehindTheCache(bench, "k")
            #expect(cache.contains("k"), "not noticed before an open")
            #expect(try await cache.open("k") == nil)
            #expect(!cache.contains("k"), "the entry is dropped")
            #expect(cache.totalBytes == 400, "and its bytes")
            #expect(cache.fileCount == 1)
            #expect(cache.statistics.misses == 1)
            #expect(try await bench.metadataKeys(store).map(\.id) == [fileID("a")], "and its key")
            #expect(try await cache.open("k") == nil, "still a miss")
            #expect(cache.statistics.misses == 2)
            // Eviction counts what is there: 500 more bytes make 900, under the bound, so no pass
            // takes "a" (unprotected: its last use is a minute old).
            bench.clock.advance(by: 60)
            try await put(cache, "c", 500, tag: 3)
            await cache.waitForPendingWork()
            #expect(cache.totalBytes == 900)
            #expect(!cache.statistics.isOverBound)
            #expect(cache.statistics.evictions == 0)
            #expect(cache.contains("a"))
            await cache.waitForPendingWork()
        }
        let reopened = try await bench.open(.bytes(1_000), store: store)
        #expect(reopened.totalBytes == 900, "the next open finds the same")
        #expect(reopened.fileCount == 2)
        #expect(!reopened.contains("k"))
    }

    @Test(arguments: MetadataEngine.all)
    func removeAndEvictionOfAFileDeletedBehindTheCacheSucceed(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let store = try await bench.metadata()
        let cache = try await bench.open(.bytes(1_000), store: store)
        try await put(cache, "gone", 300, tag: 1)
        try await put(cache, "evicted", 400, tag: 2)
        try deleteBehindTheCache(bench, "gone")
        try deleteBehindTheCache(bench, "evicted")
        #expect(try await cache.remove("gone"), "there was an entry")
        #expect(!cache.contains("gone"))
        bench.clock.advance(by: 60)
        // 400 + 700 is over the bound: the pass takes the entry whose file is already gone.
        try await put(cache, "new", 700, tag: 3)
        await cache.waitForPendingWork()
        #expect(!cache.contains("evicted"))
        #expect(cache.statistics.evictions == 1)
        #expect(cache.totalBytes == 700)
        #expect(try await bench.metadataKeys(store).map(\.id) == [fileID("new")])
    }

    /// Deletes the file cached under `key` from `files/`, as the system or a user would.
    private func deleteBehindTheCache(_ bench: CacheBench, _ key: String) throws {
        try FileManager.default.removeItem(at: bench.directory.appendingPathComponent("files/" + fileID(key)))
    }
}
