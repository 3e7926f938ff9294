import Foundation
import Sovaria
import SovariaCache

/// Section 3: a query cache filled to twice its bound on every engine, with response sizes
/// from a fixed-seed log-normal between 200 B and 256 KiB; the same bodies written with plain
/// `set` as the baseline of a put.
struct EvictionSection {
    let options: BenchOptions
    let progress: Progress

    var boundBytes: Int { options.pick(quick: 1_000_000, standard: 4 << 20, full: 64 << 20) }

    /// Response sizes: log-normal around 4 KiB (σ = 1.5), clamped to 200 B … 256 KiB, until
    /// they add up to `total`.
    static func responseSizes(total: Int, seed: UInt64 = 42) -> [Int] {
        var generator = SplitMix64(seed: seed)
        var sizes: [Int] = []
        var sum = 0
        while sum < total {
            let u1 = max(Double(generator.next() >> 11) / Double(1 << 53), .leastNonzeroMagnitude)
            let u2 = Double(generator.next() >> 11) / Double(1 << 53)
            let normal = (-2 * log(u1)).squareRoot() * cos(2 * .pi * u2)
            let size = min(262_144, max(200, Int(exp(log(4_096.0) + 1.5 * normal))))
            sizes.append(size)
            sum += size
        }
        return sizes
    }

    func run() async throws -> [Measurement] {
        var rows: [Measurement] = []
        let sizes = Self.responseSizes(total: 2 * boundBytes)
        let largest = sizes.max() ?? 0
        // Random text, so LevelDB's compression does not shrink the bodies to nothing.
        let filler = Workload(count: 0, valueBytes: largest, seed: 99).values[0]
        let section = BenchSection.eviction.rawValue
        for engine in BenchEngines.plain where options.runs(engine: engine.name) {
            progress.update("eviction: \(engine.name), \(sizes.count) responses")
            let folder = options.folder.appendingPathComponent("evict-\(engine.name)", isDirectory: true)
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let store = try await engine.open(folder.appendingPathComponent("cache"), .flushed)
            let cache = try await QueryCache(store: store, size: .bytes(boundBytes), memoryCountLimit: 0)
            let puts = try await Stopwatch(repeats: 1).measure(calls: sizes.count, warmUp: false) { _, call in
                try await cache.put(
                    "/rest/v1/items?page=\(call)", body: String(filler.utf8.prefix(sizes[call]))!,
                    serverTime: Date(timeIntervalSince1970: 1_700_000_000 + Double(call)))
            }
            // Passes run behind the puts that start them: the last may still be running.
            await cache.waitForBackgroundRefreshes()
            // The same puts into a cache without a bound: what eviction costs the puts it runs behind.
            let unbounded = try await QueryCache(
                store: try await engine.open(folder.appendingPathComponent("unbounded"), .flushed), size: .unlimited,
                memoryCountLimit: 0)
            let putsWithoutEviction = try await Stopwatch(repeats: 1).measure(calls: sizes.count, warmUp: false) {
                _, call in
                try await unbounded.put(
                    "/rest/v1/items?page=\(call)", body: String(filler.utf8.prefix(sizes[call]))!,
                    serverTime: Date(timeIntervalSince1970: 1_700_000_000 + Double(call)))
            }
            let plainStore = try await engine.open(folder.appendingPathComponent("plain"), .flushed)
            let plainSets = try await Stopwatch(repeats: 1).measure(calls: sizes.count, warmUp: false) { _, call in
                try await plainStore.set(Self.plainKey(call), String(filler.utf8.prefix(sizes[call]))!)
            }
            // What a put that carries a pass's batch writes: its list and ten deletes, one commit.
            let carriedWrites = try await Stopwatch(repeats: 1).measure(calls: sizes.count / 10, warmUp: false) {
                _, call in
                let value = String(filler.utf8.prefix(sizes[call]))!
                try await plainStore.write(
                    [.set(key: Self.plainKey(sizes.count + call), value: value)]
                        + (0..<10).map { .delete(key: Self.plainKey(call * 10 + $0)) })
            }
            var putRow = puts.measurement(
                section: section, subject: engine.name, variant: "flushed", operation: "put, eviction on")
            var setRow = plainSets.measurement(
                section: section, subject: engine.name, variant: "flushed",
                operation: "plain set, same values and key length")
            putRow.ratio = putRow.p50Nanoseconds / max(1, setRow.p50Nanoseconds)
            putRow.meanRatio = puts.median / max(1, plainSets.median)  // passes included: the amortized cost
            putRow.baseline = "plain set"
            let passes = cache.evictionPasses
            let evictedResponses = passes.reduce(0) { $0 + $1.evictedResponses }
            let evictedBytes = passes.reduce(0) { $0 + $1.evictedBytes }
            let durations = passes.map {
                Double($0.duration.components.attoseconds) / 1e9 + Double($0.duration.components.seconds) * 1e9
            }
            let before = Self.diskBytes(folder.appendingPathComponent("cache"))
            try await store.compact()
            let after = Self.diskBytes(folder.appendingPathComponent("cache"))
            let carried = passes.reduce(0) { $0 + $1.batchesCarriedByPuts }
            let own = passes.reduce(0) { $0 + $1.ownBatches }
            putRow.note =
                "\(passes.count) passes, \(evictedResponses) responses / \(evictedBytes / 1_000_000) MB evicted, "
                + "\(carried) batches carried by puts, \(own) the passes' own"
            var offRow = putsWithoutEviction.measurement(
                section: section, subject: engine.name, variant: "flushed", operation: "put, eviction off")
            offRow.note = String(
                format: "eviction on over off: p99 %.2fx, throughput %.2fx",
                putRow.p99Nanoseconds / max(1, offRow.p99Nanoseconds), putRow.opsPerSecond / max(1, offRow.opsPerSecond)
            )
            setRow.note = "disk \(before / 1_000_000) MB → \(after / 1_000_000) MB after compact()"
            var carriedRow = carriedWrites.measurement(
                section: section, subject: engine.name, variant: "flushed", operation: "set + ten deletes, one write")
            carriedRow.note = String(
                format: "over a plain set: p50 %.2fx, p99 %.2fx (a put carrying a pass's batch)",
                carriedRow.p50Nanoseconds / max(1, setRow.p50Nanoseconds),
                carriedRow.p99Nanoseconds / max(1, setRow.p99Nanoseconds))
            rows += [putRow, offRow, setRow, carriedRow]
            if !durations.isEmpty {
                var pass = Sample(perItemNanoseconds: [Sample.percentile(durations, 0.5)], callLatencies: durations)
                    .measurement(section: section, subject: engine.name, variant: "flushed", operation: "eviction pass")
                pass.note = "\(passes.count) passes"
                let perResponse = durations.reduce(0, +) / Double(max(1, evictedResponses))
                var perResponseRow = Sample(perItemNanoseconds: [perResponse], callLatencies: [perResponse])
                    .measurement(
                        section: section, subject: engine.name, variant: "flushed",
                        operation: "eviction, per evicted response")
                perResponseRow.note = "\(evictedResponses) responses"
                rows += [pass, perResponseRow]
            }
            for readers in [1, 50] {
                progress.update("eviction: \(engine.name), reads that miss, \(readers) reader(s) per query")
                rows.append(
                    try await readMisses(
                        engine: engine, folder: folder.appendingPathComponent("reads-\(readers)"), readers: readers,
                        sizes: sizes, filler: filler))
            }
            try? FileManager.default.removeItem(at: folder)
        }
        return rows
    }

    /// The same responses, each brought in by `readers` concurrent reads of a query not cached
    /// yet, which share one fetch (answering at once): a call lasts until the last reader has its
    /// answer, so it includes whatever the shared fetch waits for (the store, a pass).
    func readMisses(
        engine: BenchEngine, folder: URL, readers: Int, sizes: [Int], filler: String
    ) async throws -> Measurement {
        let cache = try await QueryCache(store: try await engine.open(folder, .flushed), size: .bytes(boundBytes))
        let reads = try await Stopwatch(repeats: 1).measure(calls: sizes.count, warmUp: false) { _, call in
            let query = "/rest/v1/items?select=id,title,body,updated_at&order=updated_at.desc&page=\(call)"
            let answer = FetchResult.response(
                body: String(filler.utf8.prefix(sizes[call]))!,
                serverTime: Date(timeIntervalSince1970: 1_700_000_000 + Double(call)), etag: nil)
            try await withThrowingTaskGroup(of: Void.self) { group in
                for _ in 0..<readers {
                    group.addTask {
                        guard try await cache.read(query, fetch: { _ in answer }).response != nil else {
                            throw BenchError.failed("\(engine.name): a read that fetched has no answer")
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        await cache.waitForBackgroundRefreshes()
        let passes = cache.evictionPasses
        var row = reads.measurement(
            section: BenchSection.eviction.rawValue, subject: engine.name, variant: "flushed",
            operation: readers == 1 ? "read miss (fetch + put)" : "read miss, \(readers) readers share one fetch")
        row.note = "\(passes.count) passes, \(passes.reduce(0) { $0 + $1.evictedResponses }) responses evicted"
        return row
    }

    /// A key as long as the cache's list keys (72 bytes): the file store pays for long names
    /// (its names are the key in hex), and the baseline should not be spared that.
    static func plainKey(_ index: Int) -> String {
        let digits = String(index)
        return "sov:plain:" + String(repeating: "0", count: 62 - digits.count) + digits
    }

    /// The disk space the files under `folder` take (allocated blocks, as `du` counts them).
    static func diskBytes(_ folder: URL) -> Int {
        guard let walker = FileManager.default.enumerator(atPath: folder.path) else { return 0 }
        var total = 0
        for case let path as String in walker {
            var info = stat()
            if lstat(folder.path + "/" + path, &info) == 0, info.st_mode & S_IFMT == S_IFREG {
                total += Int(info.st_blocks) * 512
            }
        }
        return total
    }
}
