import Foundation
import Sovaria
import SovariaTestKit
import Testing

@testable import SovariaFiles

/// Seed 000's eviction rules for the file cache (rules 1, 2 and 4 of issue 13), on every
/// metadata engine.
@Suite struct FileCacheEvictionTests {
    /// Rule 1: past the bound, the least recently used go until the total is at most 90%.
    @Test(arguments: MetadataEngine.all)
    func aDownloadPastTheBoundEvictsLeastRecentlyUsedDownToNinetyPercent(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let store = try await bench.metadata()
        let cache = try await bench.open(.bytes(10_000), store: store)
        for number in 0..<10 {
            try await put(cache, "photo \(number)", 1_000, tag: number)
            bench.clock.advance(by: 60)
        }
        #expect(cache.totalBytes == 10_000)
        await cache.waitForPendingWork()
        #expect(cache.statistics.evictions == 0, "at the bound is not past it")
        try #require(try await cache.open("photo 0") != nil)  // now the most recently used
        bench.clock.advance(by: 60)
        try await put(cache, "photo 10", 1_000, tag: 10)
        await cache.waitForPendingWork()

        let kept = Set([0] + Array(3...10)).map { fileID("photo \($0)") }
        #expect(cache.totalBytes == 9_000, "a tenth below the bound")
        #expect(Set(try bench.filesOnDisk().keys) == Set(kept), "photos 1 and 2 were used least recently")
        #expect(Set(try await bench.metadataKeys(store).map(\.id)) == Set(kept))
        #expect(!cache.contains("photo 1") && !cache.contains("photo 2") && cache.contains("photo 0"))
        let statistics = cache.statistics
        #expect(statistics.evictions == 2)
        #expect(statistics.evictedBytes == 2_000)
        #expect(statistics.passes == 1)
        #expect(!statistics.isOverBound)
        #expect(try await cache.open("photo 1") == nil)
    }

    /// Rule 1: every download over the bound checks, a pass deletes past one store batch (16
    /// files) when it must, and (rule 7) it reads nothing from the store: its cost is one delete
    /// per evicted file, in batches.
    @Test(arguments: MetadataEngine.all)
    func everyDownloadOverTheBoundStartsAPass(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        do {
            let cache = try await bench.open(.unlimited)
            for number in 0..<150 {
                try await put(cache, "tile \(number)", 100, tag: number)
                bench.clock.advance(by: 1)
            }
        }
        bench.clock.advance(by: 60)
        let spy = SpyStore(try await bench.metadata())
        let cache = try await bench.open(.bytes(2_000), store: spy)
        #expect(cache.totalBytes == 15_000, "a lower bound takes effect at the next download")
        #expect(cache.folder.listings.withLock { $0 } == 2, "open lists files/ and tmp/ once")
        spy.reset()
        try await put(cache, "tile 150", 100, tag: 150)
        await cache.waitForPendingWork()
        #expect(cache.totalBytes == 1_800)
        #expect(cache.fileCount == 18)
        #expect(cache.statistics.evictions == 133)
        #expect((133...150).allSatisfy { cache.contains("tile \($0)") }, "the newest stay")
        let deletions = spy.batches.filter { batch in batch.allSatisfy { if case .delete = $0 { true } else { false } }
        }
        #expect(deletions.map(\.count) == Array(repeating: 16, count: 8) + [5], "one delete per file, 16 a batch")
        spy.log.withLock { log in
            #expect(log.gets.isEmpty && log.entriesPrefixes.isEmpty && log.keysPrefixes.isEmpty, "no reads")
        }

        for number in 151..<181 {
            try await put(cache, "tile \(number)", 100, tag: number)
            await cache.waitForPendingWork()
            bench.clock.advance(by: 31)
            #expect(cache.totalBytes <= 2_000, "after download \(number)")
        }
        // From 1,800 the third download passes 2,000 each time: ten more passes.
        #expect(cache.statistics.passes == 11)
        #expect(cache.statistics.evictions == 133 + 30)
        #expect(try bench.filesOnDisk().count == cache.fileCount)
        #expect(cache.folder.listings.withLock { $0 } == 2, "31 downloads and 11 passes listed no folder")
    }

    /// Rule 2: files with an open lease or used in the last 30 seconds stay; when that leaves the
    /// cache over the bound, its statistics say so, and the next download tries again.
    @Test(arguments: MetadataEngine.all)
    func leasedAndRecentFilesStayAndTheCacheSaysItIsOverTheBound(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.bytes(5_000))
        try await put(cache, "photo 0", 1_000, tag: 0)
        let lease = try #require(try await cache.open("photo 0"))
        for number in 1..<6 {
            bench.clock.advance(by: 1)
            try await put(cache, "photo \(number)", 1_000, tag: number)
            await cache.waitForPendingWork()
        }
        var statistics = cache.statistics
        #expect(statistics.fileCount == 6, "every file was used in the last 30 seconds")
        #expect(statistics.isOverBound)
        #expect(statistics.protectedBytes == 6_000)
        #expect(statistics.passes >= 1)

        bench.clock.advance(by: 40)
        try await put(cache, "photo 6", 1_000, tag: 6)
        await cache.waitForPendingWork()
        // 7,000 → at most 4,500: photo 0 is leased, so photos 1, 2, 3 go.
        #expect(cache.contains("photo 0"))
        #expect(!cache.contains("photo 1") && !cache.contains("photo 2") && !cache.contains("photo 3"))
        #expect(cache.totalBytes == 4_000)
        statistics = cache.statistics
        #expect(!statistics.isOverBound)
        #expect(statistics.protectedBytes == 1_000, "the leased file the pass skipped")
        #expect(try Data(contentsOf: lease.url) == body(0, 1_000))
        lease.end()
    }

    /// Rule 2: a lease dropped without `end()` stops protecting its file.
    @Test(arguments: MetadataEngine.all)
    func aDroppedLeaseStopsProtectingItsFile(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.bytes(2_000))
        try await put(cache, "old", 1_000)
        bench.clock.advance(by: 60)
        do {
            let lease = try await cache.open("old")
            #expect(lease?.isEnded == false)
        }
        bench.clock.advance(by: 60)
        try await put(cache, "new", 1_500)
        await cache.waitForPendingWork()
        #expect(!cache.contains("old"), "the lease ended with its last reference")
        #expect(cache.totalBytes == 1_500)
    }

    /// Rule 4: `.unlimited` (and the seed's -1) never evicts.
    @Test(arguments: MetadataEngine.all)
    func unlimitedNeverEvicts(engine: MetadataEngine) async throws {
        #expect(FileCacheSize(byteCount: -1) == .unlimited)
        #expect(FileCacheSize.bytes(-1).effectiveBytes == nil)
        #expect(FileCacheSize.default == .bytes(268_435_456))
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.bytes(-1))
        for number in 0..<20 {
            try await put(cache, "file \(number)", 500, tag: number)
            await cache.waitForPendingWork()
            bench.clock.advance(by: 3_600)
        }
        #expect(cache.fileCount == 20)
        #expect(cache.totalBytes == 10_000)
        #expect(cache.statistics.passes == 0)
        #expect(!cache.statistics.isOverBound)
        #expect(try await cache.open("file 0") != nil)
    }

    /// Rule 4: any other value below zero counts as zero: only protected files stay.
    @Test(arguments: MetadataEngine.all)
    func aNegativeBoundCountsAsZero(engine: MetadataEngine) async throws {
        #expect(FileCacheSize.bytes(-5).effectiveBytes == 0)
        #expect(FileCacheSize.bytes(-5).evictionTargetBytes == 0)
        #expect(FileCacheSize.bytes(1_005).evictionTargetBytes == 904)
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.bytes(-5))
        for number in 0..<3 {
            if number > 0 { bench.clock.advance(by: 31) }
            try await put(cache, "file \(number)", 700, tag: number)
            await cache.waitForPendingWork()
        }
        #expect(cache.fileCount == 1, "each download evicted everything no longer protected")
        #expect(cache.contains("file 2"))
        #expect(cache.statistics.isOverBound, "the newest file is protected: over a bound of zero")
        #expect(try bench.filesOnDisk() == [fileID("file 2"): 700])
    }
}
