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
}
