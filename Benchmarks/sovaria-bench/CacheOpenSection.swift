import Foundation
import Sovaria
import SovariaCache

/// Section 4: from opening the store to the first cached read, on a cache of 100k lists.
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
            let sample = try await Stopwatch(repeats: options.repeats).measure(calls: 1) { _, _ in
                let store = try keeper ?? engine.open(folder, .flushed)
                let cache = try await QueryCache(store: store, size: .unlimited)
                guard try await cache.cachedResponse(for: "/rest/v1/items?id=eq.7") != nil else {
                    throw BenchError.failed("\(engine.name): the first cached read missed")
                }
            }
            var row = sample.measurement(
                section: BenchSection.cacheOpen.rawValue, subject: engine.name, variant: "flushed",
                operation: "open + first read")
            row.note = "\(lists) lists"
            rows.append(row)
            keeper = nil
            try? FileManager.default.removeItem(at: folder)
        }
        return rows
    }
}
