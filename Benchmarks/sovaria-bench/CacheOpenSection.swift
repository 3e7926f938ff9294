import Foundation
import Sovaria
import SovariaCache

#if canImport(Glibc)
    import Glibc
#endif

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
            var keeper: (any OfflineStore)? = try await engine.open(folder, .flushed)
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
                    _ = try await previous?.responseCount
                    previous = nil  // its index is freed here, not in the next timed call
                }
            ) { _, _ in
                let store = if let keeper { keeper } else { try await engine.open(folder, .flushed) }
                let cache = try await QueryCache(store: store, size: .unlimited)
                guard try await cache.cachedResponse(for: "/rest/v1/items?id=eq.7") != nil else {
                    throw BenchError.failed("\(engine.name): the first cached read missed")
                }
                previous = cache
            }
            _ = try await previous?.responseCount
            previous = nil
            let loaded = try await Stopwatch(repeats: options.repeats).measure(calls: 1) { _, _ in
                let store = if let keeper { keeper } else { try await engine.open(folder, .flushed) }
                _ = try await QueryCache(store: store, size: .unlimited).responseCount
            }
            // What the index load reads, both ways on the same store in the same run: the response
            // keys as Strings (keys(prefix), as the cache read them before issue 50) and as borrowed
            // bytes (one page of withKeys, as it reads them now).
            let store = if let keeper { keeper } else { try await engine.open(folder, .flushed) }
            let prefix = "sov:cache:l2:"  // CacheKeys.responsePrefix
            var listed = 0
            let asStrings = try await Stopwatch(repeats: options.repeats).measure(calls: 1) { _, _ in
                listed = try await store.keys(prefix).count
            }
            var visited = 0
            let asBytes = try await Stopwatch(repeats: options.repeats).measure(calls: 1) { _, _ in
                visited = try await store.withKeys(prefix, after: nil, limit: .max) { _ in true }.count
            }
            guard listed == lists, visited == lists else {
                throw BenchError.failed("\(engine.name): \(listed) keys listed, \(visited) visited, \(lists) lists")
            }
            for (sample, operation) in [
                (firstRead, "open + first read"), (loaded, "open + index loaded"),
                (asStrings, "index keys as Strings: keys(prefix)"), (asBytes, "index keys as bytes: withKeys"),
            ] {
                var row = sample.measurement(
                    section: BenchSection.cacheOpen.rawValue, subject: engine.name, variant: "flushed",
                    operation: operation)
                row.note = "\(lists) lists"
                rows.append(row)
            }
            keeper = nil
            try? FileManager.default.removeItem(at: folder)
        }
        if options.runs(engine: "file") { rows += try await measureFileStoreOpen() }
        return rows
    }

    /// The file store's open and first get after a clean close (no sweep of the folder), over
    /// the floor of the same read: POSIX open, read and close of one entry file.
    private func measureFileStoreOpen() async throws -> [Measurement] {
        let keys = options.pick(quick: 1_000, standard: 10_000, full: 10_000)
        progress.update("file store open: filling \(keys) keys")
        let folder = options.folder.appendingPathComponent("open-file-store", isDirectory: true)
        try? FileManager.default.removeItem(at: folder)
        defer { try? FileManager.default.removeItem(at: folder) }
        do {
            let store = FileOfflineStore(directory: folder, durability: .flushed)
            for start in stride(from: 0, to: keys, by: 1_000) {
                try await store.write(
                    (start..<min(keys, start + 1_000)).map { .set(key: "k\($0)", value: "value \($0)") })
            }
        }
        progress.update("file store open")
        let entry = try FileManager.default.contentsOfDirectory(atPath: folder.path).first { !$0.hasPrefix(".") }
        guard let entry else { throw BenchError.failed("the file store wrote no entry file") }
        let entryPath = folder.path + "/" + entry
        var previous: FileOfflineStore?
        let open = try await Stopwatch(repeats: options.repeats).measure(
            calls: 20, prepare: { _ in previous = nil }
        ) { _, _ in
            previous = nil  // its close (and clean mark) is not this call's
            let store = FileOfflineStore(directory: folder, durability: .flushed)
            guard try await store.get("k7") != nil else { throw BenchError.failed("file store: the first get missed") }
            previous = store
        }
        withExtendedLifetime(previous) {}
        previous = nil
        // The same open after an end that left no clean mark (a crash): the sweep lists the folder.
        let mark = folder.path + "/.clean"
        let afterCrash = try await Stopwatch(repeats: 10).measure(
            calls: 1,
            prepare: { _ in
                previous = nil
                unlink(mark)
            }
        ) { _, _ in
            let store = FileOfflineStore(directory: folder, durability: .flushed)
            guard try await store.get("k7") != nil else { throw BenchError.failed("file store: the first get missed") }
            previous = store
        }
        withExtendedLifetime(previous) {}
        previous = nil
        var buffer = [UInt8](repeating: 0, count: 64 * 1_024)
        let floor = try await Stopwatch(repeats: options.repeats).measure(calls: 20) { _, _ in
            let descriptor = SystemCall.openFile(entryPath, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw BenchError.failed("file store: cannot open \(entryPath)") }
            _ = buffer.withUnsafeMutableBytes { SystemCall.readFile(descriptor, into: $0) }
            SystemCall.closeFile(descriptor)
        }
        var openRow = open.measurement(
            section: BenchSection.cacheOpen.rawValue, subject: "file", variant: "\(keys) keys, after a clean close",
            operation: "store open + first get")
        let floorRow = floor.measurement(
            section: BenchSection.cacheOpen.rawValue, subject: "POSIX", variant: "one entry file",
            operation: "open + read + close")
        openRow.ratio = openRow.p50Nanoseconds / max(1, floorRow.p50Nanoseconds)
        openRow.baseline = "POSIX open + read + close of one entry file"
        var crashRow = afterCrash.measurement(
            section: BenchSection.cacheOpen.rawValue, subject: "file", variant: "\(keys) keys, after a crash",
            operation: "store open + first get")
        crashRow.ratio = crashRow.p50Nanoseconds / max(1, openRow.p50Nanoseconds)
        crashRow.baseline = "the same open after a clean close"
        return [openRow, crashRow, floorRow]
    }
}
