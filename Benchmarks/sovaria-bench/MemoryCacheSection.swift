import Foundation
import SovariaCache

/// Section 5: the memory LRU layer against `NSCache` holding the same entries.
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

        let memory = MemoryCache<String, String>(countLimit: count, costLimit: .max)
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
        return rows
    }
}
