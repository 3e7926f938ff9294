import Foundation
import Sovaria
@_spi(Benchmarks) import SovariaCache

/// Section 5: the memory LRU layer against `NSCache` holding the same entries, and the query
/// cache's memory layer on each engine before and after a simulated memory warning.
struct MemoryCacheSection {
    let options: BenchOptions
    let progress: Progress

    final class Box {
        let value: String
        init(_ value: String) { self.value = value }
    }

    func run() async throws -> [Measurement] {
        progress.update("memory cache vs NSCache")
        let count = options.pick(quick: 2_000, standard: 5_000, full: 10_000)
        let keys = (0..<count).map { "/rest/v1/items?id=eq.\($0)" }
        let nsKeys = keys.map { NSString(string: $0) }
        var generator = SplitMix64(seed: 7)
        let order = (0..<100_000).map { _ in Int(generator.next() % UInt64(count)) }
        let stopwatch = Stopwatch(repeats: 1)
        let section = BenchSection.memoryCache.rawValue

        let memory = StringMemoryCache(countLimit: count, costLimit: .max)
        for key in keys { memory.set(key, forKey: key, cost: 1) }
        let nsCache = NSCache<NSString, Box>()
        nsCache.countLimit = count
        for (key, nsKey) in zip(keys, nsKeys) { nsCache.setObject(Box(key), forKey: nsKey) }

        // Alternate the two caches round by round, so a busy moment of the machine hits both.
        var memoryGets = Sample(perItemNanoseconds: [], callLatencies: [])
        var nsCacheGets = memoryGets
        var memorySets = memoryGets
        var nsCacheSets = memoryGets
        for _ in 0..<max(3, options.repeats) {
            memoryGets.append(
                try await stopwatch.measure(calls: 1, itemsPerCall: order.count) { _, _ in
                    for index in order where memory.value(forKey: keys[index]) == nil {
                        throw BenchError.failed("LRU missed")
                    }
                })
            nsCacheGets.append(
                try await stopwatch.measure(calls: 1, itemsPerCall: order.count) { _, _ in
                    for index in order where nsCache.object(forKey: nsKeys[index]) == nil {
                        throw BenchError.failed("NSCache missed")
                    }
                })
            memorySets.append(
                try await stopwatch.measure(calls: 1, itemsPerCall: order.count) { _, _ in
                    for index in order { memory.set(keys[index], forKey: keys[index], cost: 1) }
                })
            nsCacheSets.append(
                try await stopwatch.measure(calls: 1, itemsPerCall: order.count) { _, _ in
                    for index in order { nsCache.setObject(Box(keys[index]), forKey: nsKeys[index]) }
                })
        }
        var rows = [
            nsCacheGets.measurement(
                section: section, subject: "NSCache", variant: "\(count) entries", operation: "get"),
            memoryGets.measurement(
                section: section, subject: "MemoryCache", variant: "\(count) entries", operation: "get"),
            nsCacheSets.measurement(
                section: section, subject: "NSCache", variant: "\(count) entries", operation: "set"),
            memorySets.measurement(
                section: section, subject: "MemoryCache", variant: "\(count) entries", operation: "set"),
        ]
        rows[1].ratio = memoryGets.median / max(1, nsCacheGets.median)
        rows[1].baseline = "NSCache"
        rows[3].ratio = memorySets.median / max(1, nsCacheSets.median)
        rows[3].baseline = "NSCache"
        for engine in BenchEngines.plain where options.runs(engine: engine.name) {
            rows += try await memoryWarning(engine)
        }
        return rows
    }

    /// A query cache with 1,000 responses of 4 KiB in memory on `engine`: a read (memory hit),
    /// the shed a warning makes (``QueryCache/shedMemory(for:)`` through a manual source), and
    /// the first read of each shed response after it (a store hit), beside the memory hits.
    func memoryWarning(_ engine: BenchEngine) async throws -> [Measurement] {
        progress.update("memory warning: \(engine.name)")
        let section = BenchSection.memoryCache.rawValue
        let folder = options.folder.appendingPathComponent("pressure-\(engine.name)", isDirectory: true)
        try? FileManager.default.removeItem(at: folder)
        defer { try? FileManager.default.removeItem(at: folder) }
        let pressure = ManualMemoryPressureSource()
        var configuration = QueryCache.Configuration(memoryCountLimit: 1_000)
        configuration.memoryPressure = pressure
        let cache = try await QueryCache(store: try await engine.open(folder, .flushed), configuration: configuration)
        let body = String(repeating: "x", count: 4_096)
        let queries = (0..<1_000).map { "/rest/v1/items?page=\($0)" }
        for (index, query) in queries.enumerated() {
            try await cache.put(
                query, body: body, serverTime: Date(timeIntervalSince1970: 1_700_000_000 + Double(index)))
        }
        let before = (count: cache.memoryResponseCount, bytes: cache.memoryBytes)
        let read = { (query: String) async throws -> CacheRead.Source in
            try await cache.read(query, policy: .cacheOnly) { _ in throw BenchError.failed("a cache-only read fetched")
            }
            .source
        }
        let stopwatch = Stopwatch(repeats: 1)
        let hits = try await stopwatch.measure(calls: queries.count, warmUp: false) { _, call in
            guard try await read(queries[call]) == .memory else { throw BenchError.failed("expected a memory hit") }
        }
        var shed: MemoryShed?
        let shedTime = try await stopwatch.measure(calls: 1, warmUp: false) { _, _ in
            pressure.send(.warning)
            shed = cache.memorySheds.last
        }
        guard let shed, shed.removedResponses > 0 else { throw BenchError.failed("the warning shed nothing") }
        let gone = Array(queries.prefix(shed.removedResponses))
        let afterShed = try await stopwatch.measure(calls: gone.count, warmUp: false) { _, call in
            guard try await read(gone[call]) == .store else { throw BenchError.failed("expected a store hit") }
        }
        var hitRow = hits.measurement(
            section: section, subject: engine.name, variant: "query cache, 1000 × 4 KiB",
            operation: "read before the warning (memory hit)")
        hitRow.note = "layer \(before.count) responses, \(before.bytes / 1_000) kB"
        var shedRow = shedTime.measurement(
            section: section, subject: engine.name, variant: "query cache, 1000 × 4 KiB",
            operation: "memory warning (shed)")
        shedRow.note = "layer → \(shed.keptResponses) responses, \(shed.keptBytes / 1_000) kB"
        var firstRead = afterShed.measurement(
            section: section, subject: engine.name, variant: "query cache, 1000 × 4 KiB",
            operation: "first read of a shed response (store hit)")
        firstRead.ratio = firstRead.p50Nanoseconds / max(1, hitRow.p50Nanoseconds)
        firstRead.baseline = "memory hit"
        firstRead.note = "\(gone.count) reads; layer after: \(cache.memoryResponseCount) responses"
        return [hitRow, shedRow, firstRead]
    }
}
