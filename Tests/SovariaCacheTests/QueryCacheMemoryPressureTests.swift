import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaCache

/// The memory layer answers memory pressure (seed 004): a warning sheds it to a quarter of its
/// limits, a critical event empties it, and every read after it still answers, from the store.
@Suite(.sharedPostgresDatabase) struct QueryCacheMemoryPressureTests {
    static let count = 40

    static func query(_ index: Int) -> String { "/rest/v1/items?page=\(index)" }
    static func body(_ index: Int) -> String { String(repeating: "\(index % 10)", count: 1_000 + index) }

    /// A cache of `count` responses, all in memory (limits 40 responses, 1 MB), on `pressure`.
    static func filledCache(
        _ engine: CacheEngine, folder: TemporaryFolder, pressure: ManualMemoryPressureSource
    ) async throws -> QueryCache {
        var configuration = QueryCache.Configuration(memoryCountLimit: count, memoryCostLimitBytes: 1_000_000)
        configuration.memoryPressure = pressure
        let cache = try await QueryCache(store: try await engine.open(folder.url), configuration: configuration)
        for index in 0..<count {
            try await cache.put(
                query(index), body: body(index), serverTime: Date(timeIntervalSince1970: 1_800_000_000 + Double(index)))
        }
        #expect(cache.memoryResponseCount == count)
        return cache
    }

    /// Every response, read without fetching: the source of each, and the bodies checked.
    static func readAll(_ cache: QueryCache) async throws -> [CacheRead.Source] {
        var sources: [CacheRead.Source] = []
        for index in 0..<count {
            let read = try await cache.read(query(index), policy: .cacheOnly) { _ in
                throw CacheTestError.unexpectedFetch
            }
            #expect(read.response?.body == body(index), "response \(index) after the shed")
            sources.append(read.source)
        }
        return sources
    }

    @Test(arguments: CacheEngine.all)
    func aWarningShedsToAQuarterAndTheShedOnesAreReadFromTheStore(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let pressure = ManualMemoryPressureSource()
        let cache = try await Self.filledCache(engine, folder: folder, pressure: pressure)
        let bytesBefore = cache.memoryBytes
        let diskBefore = try await cache.totalBytes
        #expect(bytesBefore == (0..<Self.count).reduce(0) { $0 + Self.body($1).utf8.count })

        pressure.send(.warning)

        // A quarter of the count limit stays: the 10 most recently put.
        #expect(cache.memoryResponseCount == Self.count / 4)
        let kept = (Self.count - Self.count / 4..<Self.count).reduce(0) { $0 + Self.body($1).utf8.count }
        #expect(cache.memoryBytes == kept)
        let shed = try #require(cache.memorySheds.last)
        #expect(shed.level == .warning && shed.removedResponses == Self.count - Self.count / 4)
        #expect(shed.removedBytes == bytesBefore - kept && shed.keptBytes == kept)
        #expect(try await cache.totalBytes == diskBefore, "the store keeps every response")

        let sources = try await Self.readAll(cache)
        #expect(sources[..<(Self.count - Self.count / 4)].allSatisfy { $0 == .store })
        #expect(sources[(Self.count - Self.count / 4)...].allSatisfy { $0 == .memory })
        // Read from the store, each is copied up again (the limits stayed).
        #expect(cache.memoryResponseCount == Self.count && cache.memoryBytes == bytesBefore)
    }

    @Test(arguments: CacheEngine.all)
    func aCriticalEventEmptiesTheLayerAndEveryReadIsAStoreHit(engine: CacheEngine) async throws {
        let folder = try TemporaryFolder()
        let pressure = ManualMemoryPressureSource()
        let cache = try await Self.filledCache(engine, folder: folder, pressure: pressure)
        let bytesBefore = cache.memoryBytes
        let reader = cache.startReading(Self.query(3))

        pressure.send(.critical)

        #expect(cache.memoryResponseCount == 0 && cache.memoryBytes == 0)
        #expect(
            cache.memorySheds.last
                == MemoryShed(
                    level: .critical, removedResponses: Self.count, removedBytes: bytesBefore, keptResponses: 0,
                    keptBytes: 0))
        #expect(try await Self.readAll(cache).allSatisfy { $0 == .store })
        #expect(cache.memoryResponseCount == Self.count && cache.memoryBytes == bytesBefore)
        withExtendedLifetime(reader) {}
    }

    @Test func aWarningKeepsTheSmallResponsesALiveReaderShows() async throws {
        let folder = try TemporaryFolder()
        let pressure = ManualMemoryPressureSource()
        let cache = try await Self.filledCache(CacheEngine.all[0], folder: folder, pressure: pressure)
        // Least recently used first: 0 and 1 (shown), 2 (shown, but larger than the 64 KiB
        // kept), then 3 … 39.
        try await cache.put(
            Self.query(2), body: String(repeating: "x", count: QueryCache.keptLiveResponseBytes + 1),
            serverTime: Date(timeIntervalSince1970: 1_800_000_002))
        for index in 3..<Self.count { _ = try await cache.cachedResponse(for: Self.query(index)) }
        let readers = [0, 1, 2].map { cache.startReading(Self.query($0)) }

        pressure.send(.warning)

        let kept = Set(cache.memory.keysByRecency)
        #expect(kept.contains(CacheKeys.id(of: Self.query(0))) && kept.contains(CacheKeys.id(of: Self.query(1))))
        #expect(!kept.contains(CacheKeys.id(of: Self.query(2))), "a large shown response is shed")
        let newest = (Self.count - 8..<Self.count).map { CacheKeys.id(of: Self.query($0)) }
        #expect(kept == Set(newest).union([0, 1].map { CacheKeys.id(of: Self.query($0)) }))
        #expect(cache.memoryResponseCount == Self.count / 4)
        withExtendedLifetime(readers) {}
    }

    @Test func aCacheStopsObservingWhenItGoesAndCanBeShedByHand() async throws {
        let folder = try TemporaryFolder()
        let pressure = ManualMemoryPressureSource()
        var cache: QueryCache? = try await Self.filledCache(CacheEngine.all[0], folder: folder, pressure: pressure)
        #expect(pressure.observerCount == 1)
        let shed = try #require(cache).shedMemory(for: .critical)
        #expect(shed.removedResponses == Self.count && cache?.memoryResponseCount == 0)
        await cache?.waitForBackgroundRefreshes()
        cache = nil
        #expect(pressure.observerCount == 0)
        pressure.send(.critical)  // nobody left to call
    }

    @Test func noSourceMeansNoObservationAndNoReason() async throws {
        var configuration = QueryCache.Configuration()
        configuration.memoryPressure = nil
        let cache = try await QueryCache(store: MemoryOfflineStore(), configuration: configuration)
        #expect(cache.memoryPressureUnavailable == nil)
    }

    @Test func aSourceThatIsUnavailableIsReportedAndTheCacheStillWorks() async throws {
        struct Unavailable: MemoryPressureSource {
            func observe(
                _ handler: @escaping @Sendable (MemoryPressure) -> Void
            ) throws(MemoryPressureUnavailable)
                -> MemoryPressureObservation
            {
                throw MemoryPressureUnavailable(reason: "not here")
            }
        }
        var configuration = QueryCache.Configuration()
        configuration.memoryPressure = Unavailable()
        let cache = try await QueryCache(store: MemoryOfflineStore(), configuration: configuration)
        #expect(cache.memoryPressureUnavailable?.reason == "not here")
        try await cache.put("q", body: "b", serverTime: Date(timeIntervalSince1970: 1_800_000_000))
        #expect(try await cache.cachedResponse(for: "q")?.body == "b")
    }
}

enum CacheTestError: Error { case unexpectedFetch }
