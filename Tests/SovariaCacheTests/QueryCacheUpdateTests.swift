import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaCache

/// `QueryCache.update(_:alongWith:)`: bodies brought up to date without a fetch (a change feed's
/// effect), stale marks, and the writes that ride in the same batch.
@Suite(.sharedPostgresDatabase) struct QueryCacheUpdateTests {
    @Test(arguments: CacheEngine.all)
    func aReplacedBodyKeepsItsPlaceInEvictionOrderDropsItsETagAndRidesWithTheExtraWrites(
        engine: CacheEngine
    )
        async throws
    {
        let folder = try TemporaryFolder()
        let clock = TestClock()
        clock.advance(by: 0.123_456)  // a fetch time finer than the store's milliseconds
        let store = try await engine.open(folder.url)
        let cache = try await QueryCache(store: store, clock: clock.function)
        let older = try await cache.put("older", body: "[1]", serverTime: serverTime(1), etag: "\"e1\"")
        try await cache.put("newer", body: "[2]", serverTime: serverTime(2))

        let changed = try await cache.update(
            [.replaceBody(base: older, body: "[1,10]"), .markStale(query: "newer"), .markStale(query: "absent")],
            alongWith: [.set(key: "sov:meta:feed:t", value: "7")])
        #expect(changed == ["older", "newer"])
        let replaced = try await cache.cachedResponse(for: "older")
        #expect(replaced?.body == "[1,10]" && replaced?.etag == nil && replaced?.isStale == false)
        #expect(replaced?.serverTime == older.serverTime, "its place in eviction order")
        #expect(try await cache.cachedResponse(for: "newer")?.isStale == true)
        #expect(try await store.get("sov:meta:feed:t") == "7")
        #expect(try await cache.totalBytes == "[1,10]".utf8.count + "[2]".utf8.count)

        // The same from a cache opened again on the store (the index rebuilt from its keys).
        let reopened = try await QueryCache(store: store, clock: clock.function)
        #expect(try await reopened.cachedResponse(for: "older")?.body == "[1,10]")
        try await reopened.evict(downToResponses: 1)
        #expect(try await reopened.cachedResponse(for: "older") == nil, "the one the server sent first went")
    }

    @Test(arguments: CacheEngine.all)
    func aBodyComputedFromAnAnswerAFetchReplacedMarksTheNewOneStale(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let cache = try await QueryCache(store: try await engine.open(folder.url))
        let first = try await cache.put("q", body: "[1]", serverTime: serverTime(1))
        try await cache.put("q", body: "[1,2]", serverTime: serverTime(2))
        try await cache.update([.replaceBody(base: first, body: "[1,3]")], alongWith: [])
        let now = try await cache.cachedResponse(for: "q")
        #expect(now?.body == "[1,2]" && now?.isStale == true, "the fetched body stays, marked stale")
    }

    /// A fetch that stored the same text spelled otherwise (`é` composed, then `e` and a
    /// combining accent) replaced the base: Swift's `==` calls the two bodies equal, the cache
    /// does not, and the body computed from the old bytes is not written over the new ones.
    @Test(arguments: CacheEngine.all)
    func aBodyRespelledByAFetchIsNotTheBase(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        // One fetch time for both: only the bodies' bytes tell the two records apart.
        let clock = TestClock()
        let cache = try await QueryCache(store: try await engine.open(folder.url), clock: clock.function)
        let first = try await cache.put("q", body: "[\"caf\u{E9}\"]", serverTime: serverTime(1))
        try await cache.put("q", body: "[\"cafe\u{301}\"]", serverTime: serverTime(1))
        #expect("[\"caf\u{E9}\"]" == "[\"cafe\u{301}\"]", "Swift calls the two bodies equal")
        try await cache.update([.replaceBody(base: first, body: "[\"caf\u{E9}\",2]")], alongWith: [])
        let now = try await cache.cachedResponse(for: "q")
        #expect(now.map { Array($0.body.utf8) } == Array("[\"cafe\u{301}\"]".utf8) && now?.isStale == true)
    }

    /// The record an update compares with its base is the memory layer's copy when it holds
    /// one (no store read), and the store's when it does not: here the layer keeps one response,
    /// so one update reads the store and the other does not, and both are replaced.
    @Test func theRecordComesFromTheMemoryLayerWhenItHoldsItAndFromTheStoreOtherwise() async throws {
        let spy = SpyStore(MemoryOfflineStore())
        let cache = try await QueryCache(store: spy, configuration: .init(memoryCountLimit: 1))
        let dropped = try await cache.put("dropped", body: "[1]", serverTime: serverTime(1))
        let held = try await cache.put("held", body: "[2]", serverTime: serverTime(2))
        spy.reset()
        let changed = try await cache.update(
            [.replaceBody(base: dropped, body: "[1,10]"), .replaceBody(base: held, body: "[2,20]")], alongWith: [])
        #expect(changed == ["dropped", "held"])
        let gets = spy.log.withLock { $0.gets }
        let droppedPrefix = CacheKeys.responsePrefix(of: CacheKeys.id(of: "dropped"))
        #expect(gets.count == 1 && gets.first?.hasPrefix(droppedPrefix) == true, "only the record memory does not hold")
        #expect(try await cache.cachedResponse(for: "dropped")?.body == "[1,10]")
        #expect(try await cache.cachedResponse(for: "held")?.body == "[2,20]")
    }

    /// A put that throws after its batch applied (its acknowledgement lost) leaves the store
    /// holding the new answer: the memory layer forgets the old one, so an update computed from
    /// the old one reads the store, finds another record, and marks it stale instead of writing
    /// over it. The same for a stale mark that throws after it applied.
    @Test func aWriteThatThrowsAfterApplyingLeavesNoMemoryCopyAnUpdateWouldTrust() async throws {
        let spy = SpyStore(MemoryOfflineStore())
        let cache = try await QueryCache(store: spy)
        let first = try await cache.put("q", body: "[1]", serverTime: serverTime(1))
        struct LostAcknowledgement: Error {}
        spy.afterWrite.withLock { $0 = { _ in throw LostAcknowledgement() } }
        await #expect(throws: LostAcknowledgement.self) {
            try await cache.put("q", body: "[2]", serverTime: serverTime(1))  // the same key: same time and size
        }
        spy.afterWrite.withLock { $0 = nil }
        try await cache.update([.replaceBody(base: first, body: "[1,9]")], alongWith: [])
        let now = try await cache.cachedResponse(for: "q")
        #expect(now?.body == "[2]" && now?.isStale == true, "the stored answer stays, marked stale")

        // An update that throws after it applied (the same size: the same key).
        let second = try #require(try await cache.cachedResponse(for: "q"))
        spy.afterWrite.withLock { $0 = { _ in throw LostAcknowledgement() } }
        await #expect(throws: LostAcknowledgement.self) {
            try await cache.update([.replaceBody(base: second, body: "[7]")], alongWith: [])
        }
        spy.afterWrite.withLock { $0 = nil }
        try await cache.update([.replaceBody(base: second, body: "[8]")], alongWith: [])
        #expect(try await cache.cachedResponse(for: "q")?.body == "[7]", "the store's answer, not overwritten")
    }

    /// With the memory layer off, every record is read from the store, and a base a fetch
    /// replaced is still told from the stored answer (marked stale), a base still stored is
    /// replaced, and a query no longer cached is skipped.
    @Test(arguments: CacheEngine.all)
    func withTheMemoryLayerOffTheStoreTellsTheBase(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let cache = try await QueryCache(
            store: try await engine.open(folder.url), configuration: .init(memoryCountLimit: 0))
        let first = try await cache.put("q", body: "[1]", serverTime: serverTime(1))
        try await cache.put("q", body: "[1,2]", serverTime: serverTime(2))
        let other = try await cache.put("other", body: "[3]", serverTime: serverTime(3))
        let gone = try await cache.put("gone", body: "[4]", serverTime: serverTime(4))
        try await cache.remove("gone")
        let changed = try await cache.update(
            [
                .replaceBody(base: first, body: "[1,3]"), .replaceBody(base: other, body: "[3,4]"),
                .replaceBody(base: gone, body: "[4,5]"),
            ],
            alongWith: [])
        #expect(changed == ["q", "other"])
        let now = try await cache.cachedResponse(for: "q")
        #expect(now?.body == "[1,2]" && now?.isStale == true, "the fetched body stays, marked stale")
        #expect(try await cache.cachedResponse(for: "other")?.body == "[3,4]")
        #expect(try await cache.cachedResponse(for: "gone") == nil)
    }

    /// The position a fetch's server gave is stored with the answer, survives a reopen, moves with
    /// a replaced body that names one and stays with one that does not; a 304 keeps it; a record
    /// without one (as every record was before positions) reads as `nil`.
    @Test(arguments: CacheEngine.all)
    func thePositionAnAnswerIsCurrentToIsKeptAndMoved(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let cache = try await QueryCache(store: store)
        let fetched = try await cache.read("q", policy: .networkOnly) { _ in
            .response(body: "[1]", serverTime: serverTime(1), etag: "\"e\"", position: 40)
        }
        #expect(fetched.response?.position == 40)
        let revalidated = try await cache.read("q", policy: .networkOnly) { _ in .notModified(serverTime: serverTime(2))
        }
        #expect(revalidated.response?.position == 40, "a 304 keeps it")
        #expect(try await QueryCache(store: store).cachedResponse(for: "q")?.position == 40, "stored")

        let base = try #require(try await cache.cachedResponse(for: "q"))
        try await cache.update([.replaceBody(base: base, body: "[1,2]", position: 55)], alongWith: [])
        let moved = try #require(try await cache.cachedResponse(for: "q"))
        #expect(moved.position == 55 && moved.body == "[1,2]")
        try await cache.update([.replaceBody(base: moved, body: "[1,2,3]")], alongWith: [])
        #expect(try await cache.cachedResponse(for: "q")?.position == 55, "kept without a new one")

        let unknown = CachedResponse(query: "p", body: "[]", serverTime: serverTime(3), fetchedAt: serverTime(3))
        let record = CacheRecord.encode(unknown)
        #expect(record.prefix { $0 != "\n" }.split(separator: " ").count == 6, "no field without a position")
        #expect(CacheRecord.decode(record) == unknown)
        #expect(CacheRecord.decode(record.replacingOccurrences(of: " 1\n", with: " 1 x\n")) == nil, "a bad one")
    }
}

/// `QueryCache.version(of:)`: a number that moves with every change of a query's cached response
/// and is never given twice, so what a change feed's page learned of a response at one version
/// can be taken as known while the version stays.
@Suite struct QueryCacheVersionTests {
    @Test func theVersionMovesWithEveryChangeAndNeverComesBack() async throws {
        let cache = try await QueryCache(store: MemoryOfflineStore())
        await cache.waitForBackgroundRefreshes()
        #expect(cache.version(of: "q") == nil, "nothing cached")
        var seen: Set<UInt64> = []
        func next(_ what: String) throws {
            let version = try #require(cache.version(of: "q"), "\(what): cached")
            #expect(seen.insert(version).inserted, "\(what): a version given before")
        }
        let stored = try await cache.put("q", body: "[1]", serverTime: Date(timeIntervalSince1970: 1))
        try next("stored")
        try await cache.put("other", body: "[]", serverTime: Date(timeIntervalSince1970: 1))
        #expect(seen.contains(try #require(cache.version(of: "q"))), "another query's put leaves it")
        _ = try await cache.update([.replaceBody(base: stored, body: "[1,2]")], alongWith: [])
        try next("brought up to date")
        try await cache.markStale("q")
        try next("marked stale")
        try await cache.put("q", body: "[3]", serverTime: Date(timeIntervalSince1970: 2))
        try next("fetched again")
        try await cache.remove("q")
        #expect(cache.version(of: "q") == nil, "removed")
        try await cache.put("q", body: "[3]", serverTime: Date(timeIntervalSince1970: 2))
        try next("stored again")
        try await cache.clearLocalData()
        #expect(cache.versions(of: ["q", "other"]) == [nil, nil], "cleared")
        try await cache.put("q", body: "[1]", serverTime: Date(timeIntervalSince1970: 1))
        try next("stored after a clear, the same body as the first")
        let reopened = try await QueryCache(store: cache.store)
        await reopened.waitForBackgroundRefreshes()
        let version = try #require(reopened.version(of: "q"))
        #expect(!seen.contains(version), "another cache on the store gives versions of its own")
    }

    /// A body brought up to date keeps its record's key when it keeps its size, and moves it
    /// (the old key deleted in the same batch) when it does not: read back from the store in both
    /// cases, one key under the response's prefix.
    @Test(arguments: ["[2]", "[2,20]"])
    func aRecordKeepsItsKeyUnlessItsSizeMoves(body: String) async throws {
        let store = MemoryOfflineStore()
        let cache = try await QueryCache(store: store)
        let stored = try await cache.put("q", body: "[1]", serverTime: Date(timeIntervalSince1970: 1))
        let prefix = CacheKeys.responsePrefix(of: CacheKeys.id(of: "q"))
        let before = try await store.keys(prefix)
        _ = try await cache.update([.replaceBody(base: stored, body: body)], alongWith: [])
        let after = try await store.keys(prefix)
        #expect(after.count == 1)
        #expect((after == before) == (body.utf8.count == 3), "the key moves with the size alone")
        let reopened = try await QueryCache(store: store)
        #expect(try await reopened.cachedResponse(for: "q")?.body == body)
    }

    /// `sameResponseKey` says what comparing the two keys written out says, at the edges of the
    /// layout too (times and sizes below zero are written as zero).
    @Test func twoEntriesShareAKeyWhenTheirWrittenKeysAreEqual() {
        let id = CacheKeys.id(of: "q")
        let times: [Int64] = [-5, 0, 1, 9_999_999_999_999_999, 10_000_000_000_000_000]
        let sizes = [-1, 0, 7, 9_999_999_999, 10_000_000_000]
        let entries = times.flatMap { time in
            sizes.map { CacheIndex.Entry(serverTimeMillis: time, sizeBytes: $0, generation: 0) }
        }
        for a in entries {
            for b in entries {
                #expect(
                    CacheKeys.sameResponseKey(a, b) == (CacheKeys.responseKey(id, a) == CacheKeys.responseKey(id, b)),
                    "\(a) \(b)")
            }
        }
    }

    /// A read by the query's slot finds what a read by the query finds, from memory and from the
    /// store; another query's slot finds nothing (the record read is checked against the query).
    @Test func aReadByItsSlotIsAReadByTheQuery() async throws {
        let store = MemoryOfflineStore()
        let cache = try await QueryCache(store: store)
        try await cache.put("q", body: "[1]", serverTime: Date(timeIntervalSince1970: 1))
        try await cache.put("other", body: "[2]", serverTime: Date(timeIntervalSince1970: 1))
        let (slot, otherSlot) = (QueryCache.Slot("q"), QueryCache.Slot("other"))
        #expect(try await cache.cachedResponse(for: "q", at: slot)?.body == "[1]", "from memory")
        #expect(try await cache.cachedResponse(for: "q", at: otherSlot) == nil, "another query's slot")
        let reopened = try await QueryCache(store: store)
        await reopened.waitForBackgroundRefreshes()
        #expect(try await reopened.cachedResponse(for: "q", at: slot)?.body == "[1]", "from the store")
        #expect(try await reopened.cachedResponse(for: "other", at: slot) == nil, "from the store, another's slot")
        #expect(try await reopened.cachedResponse(for: "absent", at: QueryCache.Slot("absent")) == nil)
    }

    /// While the index still loads behind the open, no version is known: the caller reads.
    @Test func noVersionIsKnownWhileTheIndexLoads() async throws {
        let store = MemoryOfflineStore()
        let first = try await QueryCache(store: store)
        try await first.put("q", body: "[1]", serverTime: Date(timeIntervalSince1970: 1))
        let spy = SpyStore(store)
        let (reached, reachedContinuation) = AsyncStream<Void>.makeStream()
        let (release, releaseContinuation) = AsyncStream<Void>.makeStream()
        spy.beforeKeys.withLock { hook in
            hook = { prefix in
                guard prefix == CacheKeys.responsePrefix else { return }
                reachedContinuation.yield()
                for await _ in release {}
            }
        }
        let reopened = try await QueryCache(store: spy)
        var loads = reached.makeAsyncIterator()
        await loads.next()
        #expect(reopened.version(of: "q") == nil)
        #expect(try await reopened.cachedResponse(for: "q")?.body == "[1]", "read meanwhile")
        releaseContinuation.finish()
        await reopened.waitForBackgroundRefreshes()
        #expect(reopened.version(of: "q") != nil)
    }
}
