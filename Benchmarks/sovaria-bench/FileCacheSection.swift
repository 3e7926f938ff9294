import Foundation
import Sovaria
import SovariaFiles
import Synchronization

/// Section 8: the file cache (`SovariaFiles`) with its metadata in every engine (flushed):
/// download throughput from 1 KiB to 4 MiB bodies (each download fsyncs its file and the folder),
/// one eviction pass over a cache of 10,000 files, opening a cache of 100,000 files (key names
/// and file names listed, nothing read), and the latency of downloads while passes run, beside
/// the same downloads with eviction off and, when it is installed, python-diskcache.
struct FileCacheSection {
    let options: BenchOptions
    let progress: Progress

    /// Body sizes and downloads per repeat.
    var downloadSizes: [(bytes: Int, calls: Int)] {
        options.pick(
            quick: [(1_024, 20), (65_536, 10), (1 << 20, 4), (4 << 20, 2)],
            standard: [(1_024, 40), (65_536, 20), (1 << 20, 6), (4 << 20, 3)],
            full: [(1_024, 300), (65_536, 150), (1 << 20, 40), (4 << 20, 12)])
    }
    var passFiles: Int { options.pick(quick: 1_000, standard: 1_000, full: 10_000) }
    var openFiles: Int { options.pick(quick: 2_000, standard: 5_000, full: 100_000) }
    /// The latency workload: 64 KiB downloads into a cache bounded at `latencyBoundBytes`.
    var latencyDownloads: Int { options.pick(quick: 150, standard: 250, full: 1_500) }
    var latencyBoundBytes: Int { options.pick(quick: 2 << 20, standard: 4 << 20, full: 16 << 20) }
    static let latencyBodyBytes = 65_536

    func run() async throws -> [Measurement] {
        var rows: [Measurement] = []
        let engines = BenchEngines.plain.filter { options.runs(engine: $0.name) }
        let section = options.folder.appendingPathComponent("file-cache", isDirectory: true)
        try? FileManager.default.removeItem(at: section)
        defer { try? FileManager.default.removeItem(at: section) }
        let openFolder = section.appendingPathComponent("open-files")
        let passFolder = section.appendingPathComponent("pass-files")
        progress.update("file cache: writing \(openFiles) and \(passFiles) files to adopt")
        try Self.writeFiles(count: openFiles, into: openFolder)
        try Self.writeFiles(count: passFiles, into: passFolder)
        for engine in engines {
            let folder = section.appendingPathComponent(engine.name, isDirectory: true)
            rows += try await measureDownloads(engine, folder: folder.appendingPathComponent("downloads"))
            rows.append(try await measureOpen(engine, cacheFolder: openFolder, folder: folder))
            rows.append(try await measurePass(engine, cacheFolder: passFolder, folder: folder))
            rows += try await measureLatency(engine, folder: folder.appendingPathComponent("latency"))
            try? FileManager.default.removeItem(at: folder)
        }
        rows += try await DiskCacheBaseline(options: options, progress: progress).run(
            downloads: latencyDownloads, bodyBytes: Self.latencyBodyBytes, boundBytes: latencyBoundBytes,
            folder: section.appendingPathComponent("diskcache"))
        return rows
    }

    /// Downloads of each size into an unbounded cache: what one atomic download costs.
    private func measureDownloads(_ engine: BenchEngine, folder: URL) async throws -> [Measurement] {
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let cache = try await FileCache(
            directory: folder.appendingPathComponent("cache"),
            metadata: try await engine.open(folder.appendingPathComponent("meta"), .flushed), size: .unlimited)
        var rows: [Measurement] = []
        for (bytes, calls) in downloadSizes {
            progress.update("file cache: \(engine.name), \(calls) downloads of \(Self.describe(bytes))")
            let body = Data((0..<bytes).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            let sample = try await Stopwatch(repeats: options.repeats).measure(calls: calls) { round, call in
                try await cache.store("https://example.com/\(bytes)/\(round)/\(call)", data: body)
            }
            var row = sample.measurement(
                section: BenchSection.fileCache.rawValue, subject: engine.name, variant: "flushed",
                operation: "download \(Self.describe(bytes))")
            let megabytesPerSecond = Double(bytes) / max(1, sample.median) * 1e9 / 1e6
            row.note = String(format: "%.1f MB/s; file + folder fsynced per download", megabytesPerSecond)
            rows.append(row)
        }
        return rows
    }

    /// Opening a cache of ``openFiles`` files: the first open adopts them all (a rebuild from the
    /// folder, untimed), then each open lists key names and file names only.
    private func measureOpen(_ engine: BenchEngine, cacheFolder: URL, folder: URL) async throws -> Measurement {
        progress.update("file cache: \(engine.name), adopting \(openFiles) files")
        let metadataFolder = folder.appendingPathComponent("open-meta")
        let keeper = try await engine.open(metadataFolder, .flushed)
        let adopted = try await FileCache(directory: cacheFolder, metadata: keeper, size: .unlimited)
        guard adopted.fileCount == openFiles else { throw BenchError.failed("\(engine.name): adopted too few") }
        _ = consume adopted
        progress.update("file cache: \(engine.name), opening \(openFiles) files")
        let sample = try await Stopwatch(repeats: options.repeats).measure(calls: 1) { _, _ in
            let store = engine.persistent ? try await engine.open(metadataFolder, .flushed) : keeper
            let cache = try await FileCache(directory: cacheFolder, metadata: store, size: .unlimited)
            guard cache.fileCount == openFiles else { throw BenchError.failed("\(engine.name): open miscounted") }
        }
        var row = sample.measurement(
            section: BenchSection.fileCache.rawValue, subject: engine.name, variant: "flushed",
            operation: "open, \(openFiles) files")
        row.note = "key names + folder listing, no value or file read"
        try? FileManager.default.removeItem(at: metadataFolder)
        return row
    }

    /// One pass over ``passFiles`` files whose total is just over the bound: it evicts a tenth.
    private func measurePass(_ engine: BenchEngine, cacheFolder: URL, folder: URL) async throws -> Measurement {
        progress.update("file cache: \(engine.name), one pass over \(passFiles) files")
        let clock = Mutex(Date())
        let metadataFolder = folder.appendingPathComponent("pass-meta")
        let store = try await engine.open(metadataFolder, .flushed)
        var bound = 0
        do {
            let adopted = try await FileCache(directory: cacheFolder, metadata: store, size: .unlimited)
            bound = adopted.totalBytes - 1
        }
        clock.withLock { $0 += 60 }  // past the 30 s every adopted file is protected for
        let cache = try await FileCache(
            directory: cacheFolder, metadata: store, size: .bytes(bound), clock: { clock.withLock { $0 } })
        let start = Stopwatch.now()
        try await cache.evictIfOverBound()
        let elapsed = Double(Stopwatch.now() - start)
        let evicted = cache.statistics.evictions
        var row = Sample(perItemNanoseconds: [elapsed / Double(max(1, evicted))], callLatencies: [elapsed])
            .measurement(
                section: BenchSection.fileCache.rawValue, subject: engine.name, variant: "flushed",
                operation: "pass over \(passFiles) files, per evicted file")
        row.note = String(format: "%d files evicted in %.1f ms", evicted, elapsed / 1e6)
        // Put the evicted files back for the next engine: the folder is shared.
        try Self.writeFiles(count: passFiles, into: cacheFolder)
        try? FileManager.default.removeItem(at: metadataFolder)
        return row
    }

    /// 64 KiB downloads into a bounded cache whose clock moves a second per download, so that
    /// passes run behind the downloads all along; the same downloads with eviction off are the
    /// baseline.
    private func measureLatency(_ engine: BenchEngine, folder: URL) async throws -> [Measurement] {
        var samples: [FileCacheSize: Sample] = [:]
        var passes = 0
        var evicted = 0
        for size in [FileCacheSize.unlimited, .bytes(latencyBoundBytes)] {
            progress.update("file cache: \(engine.name), \(latencyDownloads) downloads, bound \(size)")
            let run = folder.appendingPathComponent(size == .unlimited ? "off" : "on")
            try FileManager.default.createDirectory(at: run, withIntermediateDirectories: true)
            let step = Mutex(0)
            let cache = try await FileCache(
                directory: run.appendingPathComponent("cache"),
                metadata: try await engine.open(run.appendingPathComponent("meta"), .flushed), size: size,
                clock: { Date(timeIntervalSince1970: 1_800_000_000 + Double(step.withLock { $0 })) })
            let body = Data((0..<Self.latencyBodyBytes).map { UInt8(truncatingIfNeeded: $0 &* 7) })
            samples[size] = try await Stopwatch(repeats: 1).measure(calls: latencyDownloads, warmUp: false) { _, call in
                step.withLock { $0 = call }
                try await cache.store("https://example.com/photo/\(call).jpg", data: body)
            }
            await cache.waitForPendingWork()
            passes = cache.statistics.passes
            evicted = cache.statistics.evictions
            try? FileManager.default.removeItem(at: run)
        }
        let section = BenchSection.fileCache.rawValue
        var off = samples[.unlimited]!.measurement(
            section: section, subject: engine.name, variant: "flushed", operation: "download 64 KiB, eviction off")
        off.note = "\(latencyDownloads) downloads"
        var on = samples[.bytes(latencyBoundBytes)]!.measurement(
            section: section, subject: engine.name, variant: "flushed",
            operation: "download 64 KiB while passes run")
        on.note = "bound \(Self.describe(latencyBoundBytes)): \(passes) passes, \(evicted) files evicted"
        on.ratio = on.p50Nanoseconds / max(1, off.p50Nanoseconds)
        on.meanRatio = on.nanosecondsPerOp / max(1, off.nanosecondsPerOp)
        on.baseline = "eviction off"
        return [off, on]
    }

    /// Writes `count` files of 1 KiB named like cache files into `<folder>/files`, without
    /// fsync (they are the input of an adoption, not downloads), skipping those already there.
    static func writeFiles(count: Int, into folder: URL) throws {
        let files = folder.appendingPathComponent("files")
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let body = Data(repeating: 0x2a, count: 1_024)
        for number in 0..<count {
            var name = String(UInt64(number) &* 0x9E37_79B9_7F4A_7C15, radix: 16)
            name = String(repeating: "0", count: 16 - name.utf8.count) + name
            let path = files.appendingPathComponent(name + name).path
            if !FileManager.default.fileExists(atPath: path) {
                guard FileManager.default.createFile(atPath: path, contents: body) else {
                    throw BenchError.failed("cannot write \(path)")
                }
            }
        }
    }

    static func describe(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(bytes >> 20) MiB" : bytes >= 1_024 ? "\(bytes >> 10) KiB" : "\(bytes) B"
    }
}
