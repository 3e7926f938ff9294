import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaCache

/// The read path: memory layer, read policies, TTL on an injected clock, ETags, identities.
@Suite(.sharedPostgresDatabase) struct QueryCacheReadingTests {
    /// A fetch closure that answers from a script and counts its calls.
    final class Server: Sendable {
        let calls = Counter()
        let etagsSeen = NSLock()
        nonisolated(unsafe) private var seen: [String?] = []
        let answer: @Sendable (Int, String?) throws -> FetchResult

        init(_ answer: @escaping @Sendable (Int, String?) throws -> FetchResult) { self.answer = answer }

        var fetch: @Sendable (String?) async throws -> FetchResult {
            { etag in
                self.etagsSeen.withLock { self.seen.append(etag) }
                return try self.answer(self.calls.increment(), etag)
            }
        }

        var count: Int { etagsSeen.withLock { seen.count } }
        var etags: [String?] { etagsSeen.withLock { seen } }
    }

    static func fresh(_ body: String, at second: Int = 1, etag: String? = nil) -> FetchResult {
        .response(body: body, serverTime: serverTime(second), etag: etag)
    }

    @Test(arguments: CacheEngine.all)
    func cacheFirstThenNetworkFetchesOnlyOnAMissOrWhenExpired(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let clock = TestClock()
        let cache = try await QueryCache(store: try await engine.open(folder.url), clock: clock.function)
        let server = Server { call, _ in Self.fresh("answer \(call)") }
        let first = try await cache.read("q", maxAge: .seconds(60), fetch: server.fetch)
        #expect(first.source == .network && first.response?.body == "answer 1")
        let second = try await cache.read("q", maxAge: .seconds(60), fetch: server.fetch)
        #expect(second.source == .memory && second.response?.body == "answer 1" && server.count == 1)
        clock.advance(by: 61)
        let third = try await cache.read("q", maxAge: .seconds(60), fetch: server.fetch)
        #expect(third.source == .network && third.response?.body == "answer 2")
        cache.memory.removeAll()
        let fromStore = try await cache.read("q", maxAge: .seconds(60), fetch: server.fetch)
        #expect(fromStore.source == .store && fromStore.response?.body == "answer 2")
        #expect(cache.memory.value(forKey: CacheKeys.id(of: "q"))?.body == "answer 2", "copied up")
    }

    @Test(arguments: CacheEngine.all)
    func aFailedFetchFallsBackToTheCachedAnswer(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let cache = try await QueryCache(store: try await engine.open(folder.url))
        try await cache.put("q", body: "cached", serverTime: serverTime(1))
        try await cache.markStale("q")
        let offline = Server { _, _ in throw URLError(.notConnectedToInternet) }
        let answer = try await cache.read("q", fetch: offline.fetch)
        #expect(answer.response?.body == "cached" && answer.response?.isStale == true && offline.count == 1)
        await #expect(throws: URLError.self) { try await cache.read("missing", fetch: offline.fetch) }
    }

    @Test(arguments: CacheEngine.all)
    func cacheOnlyNeverFetchesAndNetworkOnlyAlwaysDoes(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let cache = try await QueryCache(store: try await engine.open(folder.url))
        let server = Server { call, _ in Self.fresh("answer \(call)") }
        let miss = try await cache.read("q", policy: .cacheOnly, fetch: server.fetch)
        #expect(miss.response == nil && miss.source == .none && server.count == 0)
        _ = try await cache.read("q", policy: .networkOnly, fetch: server.fetch)
        let again = try await cache.read("q", policy: .networkOnly, fetch: server.fetch)
        #expect(again.response?.body == "answer 2" && again.source == .network)
        try await cache.markStale("q")
        let stale = try await cache.read("q", policy: .cacheOnly, fetch: server.fetch)
        #expect(stale.response?.body == "answer 2" && stale.response?.isStale == true && server.count == 2)
    }

    @Test(arguments: CacheEngine.all)
    func staleWhileRevalidateAnswersAtOnceAndRefreshesBehind(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let clock = TestClock()
        let cache = try await QueryCache(store: try await engine.open(folder.url), clock: clock.function)
        let server = Server { call, _ in Self.fresh("answer \(call)", at: call) }
        let first = try await cache.read("q", policy: .staleWhileRevalidate, maxAge: .seconds(10), fetch: server.fetch)
        #expect(first.source == .network && !first.isRefreshing)
        let fresh = try await cache.read("q", policy: .staleWhileRevalidate, maxAge: .seconds(10), fetch: server.fetch)
        #expect(!fresh.isRefreshing && server.count == 1)
        clock.advance(by: 11)
        let old = try await cache.read("q", policy: .staleWhileRevalidate, maxAge: .seconds(10), fetch: server.fetch)
        #expect(old.response?.body == "answer 1" && old.isRefreshing)
        await cache.waitForBackgroundRefreshes()
        #expect(try await cache.cachedResponse(for: "q")?.body == "answer 2")
    }

    @Test(arguments: CacheEngine.all)
    func revalidatesWithTheCachedETag(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let cache = try await QueryCache(store: try await engine.open(folder.url))
        let server = Server { call, etag in
            etag == "\"v1\"" ? .notModified(serverTime: serverTime(call * 100)) : Self.fresh("body", etag: "\"v1\"")
        }
        _ = try await cache.read("q", fetch: server.fetch)
        try await cache.markStale("q")
        let revalidated = try await cache.read("q", fetch: server.fetch)
        #expect(server.etags == [nil, "\"v1\""])
        #expect(revalidated.response?.body == "body" && revalidated.response?.isStale == false)
        #expect(revalidated.response?.serverTime == serverTime(200), "a 304 moves the list to the new server time")
        #expect(revalidated.response?.etag == "\"v1\"")
    }

    @Test(arguments: CacheEngine.all)
    func fiftyConcurrentReadersOfAMissingQueryCauseOneFetch(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let cache = try await QueryCache(store: try await engine.open(folder.url))
        let server = Server { call, _ in Self.fresh("answer \(call)") }
        try await withThrowingTaskGroup(of: String?.self) { group in
            for _ in 0..<50 { group.addTask { try await cache.read("q", fetch: server.fetch).response?.body } }
            for try await body in group { #expect(body == "answer 1") }
        }
        #expect(server.count == 1)
    }

    @Test(.timeLimit(.minutes(10)), arguments: CacheEngine.all)
    func readersSharingAFetchAreAnsweredBeforeTheEvictionPassItStartedEnds(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let clock = TestClock()
        let cache = try await QueryCache(store: spy, size: .bytes(10_000), clock: clock.function)
        for index in 0..<4 { try await cache.put("q\(index)", body: body(2_000), serverTime: serverTime(index)) }
        try await cache.put("news", body: body(1_000), serverTime: serverTime(4))
        clock.advance(by: 61)  // "news" is past its maxAge: every reader needs the fetch
        // The pass is held at its first batch of deletes until the test lets it go.
        let (passReached, reached) = AsyncStream<Void>.makeStream()
        let (passRelease, release) = AsyncStream<Void>.makeStream()
        spy.holdEvictionBatches(reached: reached, until: passRelease)
        // One fetch, held until all 50 readers wait on it; its 4,096-byte answer calls for a check.
        let (fetchRelease, letFetchGo) = AsyncStream<Void>.makeStream()
        let fetches = Counter()
        let fresh = body(4_096, "fresh")
        let fetch: @Sendable (String?) async throws -> FetchResult = { _ in
            _ = fetches.increment()
            for await _ in fetchRelease {}
            return .response(body: fresh, serverTime: serverTime(5), etag: nil)
        }
        // Unstructured readers: if they waited for the held pass, the time limit would end the
        // wait below (a task group would wait for them forever) and the test would fail.
        let (answers, answered) = AsyncStream<String?>.makeStream()
        for _ in 0..<50 {
            Task { answered.yield(try? await cache.read("news", maxAge: .seconds(60), fetch: fetch).response?.body) }
        }
        while cache.flights.callerCount(for: CacheKeys.id(of: "news")) < 50 { await Task.yield() }
        letFetchGo.finish()
        var received: [String?] = []
        for await answer in answers {
            received.append(answer)
            if received.count == 50 { break }
        }
        #expect(received.count == 50 && received.allSatisfy { $0 == fresh }, "every reader has the fetched answer")
        for await _ in passReached { break }
        #expect(cache.evictionPasses.isEmpty, "the answers came while the pass was still running")
        release.finish()
        await cache.waitForBackgroundRefreshes()
        #expect(cache.evictionPasses.count == 1 && cache.evictionPasses.first?.evictedResponses == 2)
        #expect(try await cache.totalBytes == 2 * 2_000 + 4_096, "the same pass as before: the two oldest lists went")
        #expect(fetches.increment() == 2, "one fetch")
    }

    @Test(arguments: CacheEngine.all)
    func anyIdentityIsAcceptedAndNeverConfused(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let cache = try await QueryCache(store: store)
        let long = "/rest/v1/orders?select=*,items(*)&" + String(repeating: "status=in.(open,paid)&", count: 100)
        let precomposed = "/rest/v1/cafes?name=eq.caf\u{E9}"
        let decomposed = "/rest/v1/cafes?name=eq.cafe\u{301}"
        try await cache.put(long, body: "long", serverTime: serverTime(1))
        try await cache.put(precomposed, body: "precomposed", serverTime: serverTime(2))
        try await cache.put(decomposed, body: "decomposed", serverTime: serverTime(3))
        try await cache.put("", body: "empty identity", serverTime: serverTime(4))
        cache.memory.removeAll()
        #expect(try await cache.cachedResponse(for: long)?.body == "long")
        #expect(try await cache.cachedResponse(for: precomposed)?.body == "precomposed")
        #expect(try await cache.cachedResponse(for: decomposed)?.body == "decomposed")
        #expect(try await cache.cachedResponse(for: "")?.body == "empty identity")
        #expect(try await store.keys("sov:cache:").allSatisfy { $0.utf8.count <= StoreKey.maxUTF8Count })

        // An entry filed under a query's key but holding another identity (a hash collision)
        // is a miss, never the other query's data.
        let key = try #require(try await store.keys("sov:cache:l2:").first)
        let foreign = try #require(try await store.get(key)).replacingOccurrences(of: "/rest/v1/", with: "/rest/v2/")
        try await store.set(key, foreign)
        cache.memory.removeAll()
        var misses = 0
        for query in [long, precomposed, decomposed, ""] where try await cache.cachedResponse(for: query) == nil {
            misses += 1
        }
        #expect(misses == 1)
    }
}

@Suite(.sharedPostgresDatabase) struct QueryCacheRaceTests {
    /// A cache on `engine` holding "first" for "q" in the store only (marked stale if
    /// `markedStale`), whose next store read runs `write` once, between reading the value and
    /// returning it: a slow reader overtaken.
    func cacheWhoseNextReadIsOvertaken(
        on engine: CacheEngine, markedStale: Bool = false,
        by write: @escaping @Sendable (QueryCache) async throws -> Void
    ) async throws -> (cache: QueryCache, folder: TemporaryFolder) {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let cache = try await QueryCache(store: spy)
        try await cache.put("q", body: "first", serverTime: serverTime(1))
        if markedStale { try await cache.markStale("q") }
        cache.memory.removeAll()
        spy.afterGet.withLock { hook in
            hook = { _ in
                spy.afterGet.withLock { $0 = nil }
                try await write(cache)
            }
        }
        return (cache, folder)
    }

    @Test(arguments: CacheEngine.all)
    func aSlowReaderNeverPutsAnOlderAnswerBackInMemory(engine: CacheEngine) async throws {
        // While a reader holds "first" read from the store, a put stores "second".
        let (cache, folder) = try await cacheWhoseNextReadIsOvertaken(on: engine) { cache in
            try await cache.put("q", body: "second", serverTime: serverTime(2))
        }
        #expect(try await cache.cachedResponse(for: "q")?.body == "first", "the slow reader's own answer")
        #expect(try await cache.cachedResponse(for: "q")?.body == "second", "memory was not set back to first")
        try await cache.markStale("q")
        cache.memory.removeAll()
        let stale = try await cache.cachedResponse(for: "q")
        #expect(stale?.body == "second" && stale?.isStale == true)
        withExtendedLifetime(folder) {}
    }

    @Test(arguments: CacheEngine.all)
    func aSlowReaderNeverUndoesAStaleMarkInMemory(engine: CacheEngine) async throws {
        // While a reader holds "first" read from the store, a local write marks the list stale:
        // the same key, a new record.
        let (cache, folder) = try await cacheWhoseNextReadIsOvertaken(on: engine) { cache in
            try await cache.markStale("q")
        }
        #expect(try await cache.cachedResponse(for: "q")?.isStale == false, "the slow reader's own answer")
        #expect(try await cache.cachedResponse(for: "q")?.isStale == true, "memory keeps the stale mark")
        withExtendedLifetime(folder) {}
    }

    @Test(arguments: CacheEngine.all, [ReadPolicy.cacheFirstThenNetwork, .staleWhileRevalidate])
    func aReaderOvertakenByAWholeFetchSharesItsAnswer(engine: CacheEngine, policy: ReadPolicy) async throws {
        let server = QueryCacheReadingTests.Server { call, _ in
            QueryCacheReadingTests.fresh("answer \(call)", at: 10 + call)
        }
        // The slow reader has read the stale "first" from the store; before its look-up returns,
        // another reader's whole read runs: its fetch starts, stores "answer 1" and finishes.
        let (cache, folder) = try await cacheWhoseNextReadIsOvertaken(on: engine, markedStale: true) { cache in
            let other = try await cache.read("q", fetch: server.fetch)
            #expect(other.source == .network && other.response?.body == "answer 1")
        }
        let slow = try await cache.read("q", policy: policy, fetch: server.fetch)
        await cache.waitForBackgroundRefreshes()
        if policy == .staleWhileRevalidate {
            #expect(slow.response?.body == "first" && slow.isRefreshing, "the cached answer at once")
        } else {
            #expect(slow.response?.body == "answer 1" && slow.source == .network)
        }
        #expect(server.count == 1, "the slow reader shared the fetch that finished during its look-up")
        // Nothing is kept past the look-ups that needed it: the next stale read fetches anew.
        try await cache.markStale("q")
        let next = try await cache.read("q", fetch: server.fetch)
        #expect(next.response?.body == "answer 2" && server.count == 2)
        withExtendedLifetime(folder) {}
    }

    @Test(.timeLimit(.minutes(10)), arguments: CacheEngine.all)
    func aNetworkOnlyReadIsAnsweredByAFetchThatStartedAfterIt(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let cache = try await QueryCache(store: try await engine.open(folder.url))
        let (release, letFirstGo) = AsyncStream<Void>.makeStream()
        let calls = Counter()
        let fetch: @Sendable (String?) async throws -> FetchResult = { _ in
            let call = calls.increment()
            if call == 1 { for await _ in release {} }
            return .response(body: "answer \(call)", serverTime: serverTime(call), etag: nil)
        }
        let id = CacheKeys.id(of: "q")
        async let first = cache.read("q", fetch: fetch)
        while cache.flights.callerCount(for: id) < 1 { await Task.yield() }
        // Two network-only reads asked while the first fetch runs: they wait it out and share one
        // fetch of their own.
        async let second = cache.read("q", policy: .networkOnly, fetch: fetch)
        async let third = cache.read("q", policy: .networkOnly, fetch: fetch)
        while cache.flights.waitingCount(for: id) < 2 { await Task.yield() }
        letFirstGo.finish()
        let answers = try await [first, second, third].map { $0.response?.body }
        #expect(answers == ["answer 1", "answer 2", "answer 2"])
        #expect(calls.increment() == 3, "two fetches")
    }
}
