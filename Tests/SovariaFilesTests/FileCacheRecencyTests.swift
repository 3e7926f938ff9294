import Foundation
import Sovaria
import SovariaTestKit
import Testing

@testable import SovariaFiles

/// Rule 3 of issue 13: a file's last use is recorded in the store (it survives a restart),
/// without a store write on every read; and leases.
@Suite struct FileCacheRecencyTests {
    @Test(arguments: MetadataEngine.all)
    func lastUseSurvivesAReopenAndDecidesWhatIsEvicted(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        do {
            let cache = try await bench.open(.unlimited)
            try await put(cache, "a", 1_000, tag: 1)
            bench.clock.advance(by: 10)
            try await put(cache, "b", 1_000, tag: 2)
            bench.clock.advance(by: 60)
            let lease = try #require(try await cache.open("a"))  // a is now newer than b
            bench.clock.advance(by: 5)
            lease.end()  // a lease's end is a use too
            await cache.waitForPendingWork()
        }
        let store = try await bench.metadata()
        let recorded = try await bench.metadataKeys(store)
        let useOfA = recorded.first { $0.id == fileID("a") }?.lastUseMillis
        #expect(useOfA == 1_800_000_075_000, "the lease's end, recorded by the write it started")
        bench.clock.advance(by: 60)
        let cache = try await bench.open(.bytes(2_000), store: store)
        try await put(cache, "c", 500, tag: 3)
        await cache.waitForPendingWork()
        #expect(cache.contains("a") && cache.contains("c"))
        #expect(!cache.contains("b"), "b was used least recently, before the restart")
    }

    @Test(arguments: MetadataEngine.all)
    func readsRecordAUseAtMostOncePerFilePerSecond(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let spy = SpyStore(try await bench.metadata())
        let cache = try await bench.open(.unlimited, store: spy)
        try await put(cache, "photo", 2_000)
        bench.clock.advance(by: 5)
        spy.reset()
        for _ in 0..<100 {  // 100 reads in 0.5 s
            let lease = try #require(try await cache.open("photo"))
            #expect(try lease.fileHandle.readToEnd() == body(0, 2_000))
            lease.end()
            bench.clock.advance(by: 0.005)
        }
        await cache.waitForPendingWork()
        #expect(spy.batches.count == 1, "only the first read was a second past the recorded use")
        #expect(cache.statistics.hits == 100)
        let afterReads = try await bench.metadataKeys(spy)
        #expect(afterReads.map(\.lastUseMillis) == [1_800_000_005_000])
        // What a crash now would lose: the last reads' 0.495 s, less than the promised second.
        try await cache.recordPendingUses()
        let afterRecord = try await bench.metadataKeys(spy)
        #expect(afterRecord.map(\.lastUseMillis) == [1_800_000_005_495], "the last lease's end")
        #expect(spy.batches.count == 2)
        #expect(afterRecord.map(\.sizeBytes) == [2_000], "the size moves with the key")

        bench.clock.advance(by: 2)
        let lease = try #require(try await cache.open("photo"))
        #expect(spy.batches.count == 3, "a read a second after the recorded use writes before returning")
        #expect(try await bench.metadataKeys(spy).map(\.lastUseMillis) == [1_800_000_007_500])
        lease.end()
    }

    @Test(arguments: MetadataEngine.all)
    func aMissAndAHitAreCountedAndOpenReadsNoValue(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let spy = SpyStore(try await bench.metadata())
        let cache = try await bench.open(.unlimited, store: spy)
        try await put(cache, "https://example.com/a%20b/é?x=1&y=/..", 300)
        #expect(try await cache.open("https://example.com/a%20b/e\u{301}?x=1&y=/..") == nil, "bytes, not characters")
        let lease = try #require(try await cache.open("https://example.com/a%20b/é?x=1&y=/.."))
        #expect(lease.sizeBytes == 300)
        #expect(lease.url.lastPathComponent == fileID("https://example.com/a%20b/é?x=1&y=/.."))
        #expect(cache.statistics.hits == 1 && cache.statistics.misses == 1)
        spy.log.withLock { #expect($0.gets.isEmpty && $0.entriesPrefixes.isEmpty) }
    }

    @Test(arguments: MetadataEngine.all)
    func aLeaseReadsItsFileAfterARemoveAndANewDownload(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let store = try await bench.metadata()
        let cache = try await bench.open(.unlimited, store: store)
        try await put(cache, "doc", 5_000, tag: 1)
        let first = try #require(try await cache.open("doc"))
        try await put(cache, "doc", 3_000, tag: 2)
        let second = try #require(try await cache.open("doc"))
        #expect(try await cache.remove("doc"))
        #expect(try await !cache.remove("doc"))
        #expect(try first.fileHandle.readToEnd() == body(1, 5_000), "the handle keeps the first file")
        #expect(try second.fileHandle.readToEnd() == body(2, 3_000))
        #expect(!FileManager.default.fileExists(atPath: second.url.path))
        #expect(cache.totalBytes == 0)
        #expect(try await store.keys("sov:file:").isEmpty)
        first.end()
        first.end()
        #expect(first.isEnded)
    }

    @Test(arguments: MetadataEngine.all)
    func removeAllDeletesEveryFileAndKey(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let store = try await bench.metadata()
        let cache = try await bench.open(.unlimited, store: store)
        for number in 0..<5 { try await put(cache, "f\(number)", 100 * (number + 1)) }
        #expect(cache.totalBytes == 1_500)
        try await cache.removeAll()
        #expect(cache.totalBytes == 0 && cache.fileCount == 0)
        #expect(try bench.filesOnDisk().isEmpty)
        #expect(try await store.keys("sov:file:").isEmpty)
        try await put(cache, "f0", 10)
        #expect(cache.totalBytes == 10)
    }

    @Test func idsAreSHA256OfTheKeysUTF8Bytes() {
        #expect(fileID("abc") == "ba7816bf8f01cfea414140de5dae2223")
        #expect(fileID("") == "e3b0c44298fc1c149afbf4c8996fb924")
        let long = String(repeating: "a", count: 1_000_000)
        #expect(
            SHA256.digest(Array(long.utf8)).prefix(4) == [0xcd, 0xc7, 0x6e, 0x5c], "FIPS 180-2's million a's")
        #expect(
            fileID("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") == "248d6a61d20638b8e5c026930c3e6039")
        let x = FileKeys.id(of: "x")
        let parsed = FileKeys.parse(FileKeys.metadataKey(id: x, sizeBytes: 12, lastUseMillis: 34))
        #expect(parsed?.id == x && parsed?.sizeBytes == 12 && parsed?.lastUseMillis == 34)
        #expect(FileKeys.parse("sov:file:" + x.hex + ":12:34") == nil)
        #expect(FileKeys.parse("sov:file:" + x.hex.uppercased() + ":0000000000000012:0000000000000034") == nil)
        #expect(FileKeys.id(fileName: x.hex) == x && FileKeys.id(fileName: "stray.txt") == nil)
    }
}
