import Foundation
import Sovaria
import SovariaCache

/// Section 4: from opening the store to the first cached read, on a cache of 100k lists, and
/// to the end of the index's load behind the open.
struct CacheOpenSection {
    let options: BenchOptions
    let progress: Progress

    func run() async throws -> [Measurement] {
        var rows: [Measurement] = []
        for engine in BenchEngines.plain where options.runs(engine: engine.name) {
            let lists =
                engine.maxKeys.map(options.limit) ?? options.pick(quick: 2_000, standard: 10_000, full: 100_000)
            progress.update("cache open: \(engine.name), filling \(lists) lists")
            let folder = options.folder.appendingPathComponent("open-\(engine.name)", isDirectory: true)
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // Kept alive only for the memory engine, which has nothing to reopen.
            var keeper: (any OfflineStore)? = try engine.open(folder, .flushed)
            if let store = keeper {
                let cache = try await QueryCache(store: store, size: .unlimited)
                for list in 0..<lists {
                    try await cache.put("/rest/v1/items?id=eq.\(list)", body: "[{\"id\":\(list)}]", serverTime: Date())
                }
            }
            if engine.persistent { keeper = nil }
            progress.update("cache open: \(engine.name)")
            // The index loads behind the open: each repeat waits for the previous one's load and
            // frees it (untimed), so neither runs under the next measurement.
            var previous: QueryCache?
            let firstRead = try await Stopwatch(repeats: options.repeats).measure(
                calls: 1,
                prepare: { _ in
                    _ = try await previous?.listCount
                    previous = nil  // its index is freed here, not in the next timed call
                }
            ) { _, _ in
                let store = try keeper ?? engine.open(folder, .flushed)
                let cache = try await QueryCache(store: store, size: .unlimited)
                guard try await cache.cachedResponse(for: "/rest/v1/items?id=eq.7") != nil else {
                    throw BenchError.failed("\(engine.name): the first cached read missed")
                }
                previous = cache
            }
            _ = try await previous?.listCount
            previous = nil
            let loaded = try await Stopwatch(repeats: options.repeats).measure(calls: 1) { _, _ in
                let store = try keeper ?? engine.open(folder, .flushed)
                _ = try await QueryCache(store: store, size: .unlimited).listCount
            }
            for (sample, operation) in [(firstRead, "open + first read"), (loaded, "open + index loaded")] {
                var row = sample.measurement(
                    section: BenchSection.cacheOpen.rawValue, subject: engine.name, variant: "flushed",
                    operation: operation)
                row.note = "\(lists) lists"
                rows.append(row)
            }
            keeper = nil
            try? FileManager.default.removeItem(at: folder)
        }
        return rows
    }
}
