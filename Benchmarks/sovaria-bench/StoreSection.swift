import Foundation
import Sovaria

/// Section 1 and 2: every engine through `OfflineStore`, in both durabilities, next to its raw
/// C API doing the same operations with the same schema and flags: called from Swift (`raw …`)
/// and, when the run has the C baseline program, from C (`C …`, see ``CBaseline``).
struct StoreSection {
    let options: BenchOptions
    let workload: Workload
    let stopwatch: Stopwatch
    let progress: Progress

    func run() async throws -> [Measurement] {
        var rows: [Measurement] = []
        var cBaseline: CBaseline?
        switch CBaseline.locate(options) {
        case .success(let program): cBaseline = program
        case .failure(let reason): print(reason)
        }
        for engine in BenchEngines.all where options.runs(engine: engine.name) {
            let limit = engine.maxKeys.map(options.limit) ?? workload.count
            let workload = limit < workload.count ? Workload(count: limit, valueBytes: options.valueBytes) : workload
            for durability in engine.persistent ? [Durability.synced, .flushed] : [.flushed] {
                let variant = engine.persistent ? "\(durability)" : ""
                let operations = StoreOperations(
                    workload: workload, stopwatch: stopwatch,
                    singleSets: durability == .synced && engine.persistent
                        ? options.pick(quick: 50, standard: 100, full: 500)
                        : options.pick(quick: 20_000, standard: 1_000, full: 20_000),
                    progress: progress)
                let adapter: StoreSubject
                do {
                    let folder = try freshFolder("\(engine.name)-\(durability)")
                    let store = try await engine.open(folder, durability)
                    adapter = StoreSubject(store, workload)
                    var measured = try await operations.run(adapter, name: engine.name, variant: variant)
                    if workload !== self.workload {
                        for index in measured.indices { measured[index].note = "\(workload.count) keys" }
                    }
                    rows += measured
                    if engine.name == "file", let get = measured.first(where: { $0.operation == "get (random hit)" }) {
                        rows.append(try await measureJournalCheck(in: folder, against: get, variant: variant))
                    }
                }
                if let raw = engine.raw {
                    let subject = try raw(try freshFolder("raw-\(engine.name)-\(durability)"), durability, workload)
                    rows += try await operations.run(subject, name: "raw \(engine.name)", variant: variant)
                    rows += try await measureInterleavedGets(
                        adapter, subject, engine: engine.name, variant: variant, workload: workload)
                }
                if let cBaseline, CBaseline.engines.contains(engine.name) {
                    progress.update("C \(engine.name) \(variant)")
                    var measured = runC {
                        try cBaseline.run(
                            engine: engine.name, variant: variant, workload: workload,
                            singleSets: operations.singleSets, folder: try freshFolder("c-\(engine.name)-\(durability)")
                        )
                    }
                    if workload !== self.workload {
                        for index in measured.indices { measured[index].note = "\(workload.count) keys" }
                    }
                    rows += measured
                }
            }
        }
        rows.append(try await measureStringFloor())
        // What the encryption wrapper adds to a get, in C: one value's decrypt (and encrypt).
        if let cBaseline, rows.contains(where: { $0.subject.hasPrefix("encrypted(") }) {
            progress.update("C libsodium")
            rows += runC {
                try cBaseline.run(
                    engine: "sodium", variant: "", workload: workload, singleSets: 1,
                    folder: try freshFolder("c-sodium"))
            }
        }
        return rows
    }

    /// What a file store `get` pays to see another process's batch whole (issue 35): the one
    /// `faccessat` of the folder's journal it makes before reading, timed alone in the same run,
    /// its ratio over the store's get p50 the share of a get it costs.
    private func measureJournalCheck(
        in folder: URL, against get: Measurement, variant: String
    ) async throws
        -> Measurement
    {
        let descriptor = SystemCall.openFile(folder.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw BenchError.failed("file store: cannot open \(folder.path)") }
        defer { SystemCall.closeFile(descriptor) }
        let sample = try await stopwatch.measure(calls: 20_000) { _, _ in
            guard faccessat(descriptor, ".journal", F_OK, 0) != 0 else {
                throw BenchError.failed("file store: a journal is left in \(folder.path)")
            }
        }
        var row = sample.measurement(
            section: BenchSection.store.rawValue, subject: "POSIX", variant: variant,
            operation: "faccessat of the file store's journal")
        row.ratio = row.p50Nanoseconds / max(1, get.p50Nanoseconds)
        row.baseline = "the file store's get (random hit) p50: the share of a get the journal check costs"
        return row
    }

    /// The adapter's get and `withValue` against the raw Swift call on the same engine, in blocks
    /// of 500 calls that take turns (each subject first in every third round): the machine's
    /// speed moves 2–4x between rows measured one after the other, and blocks that take turns see
    /// the same moments. Each row's time per call is the median block's; its ratio is over the raw
    /// call's, the adapter's overhead.
    private func measureInterleavedGets(
        _ adapter: StoreSubject, _ raw: any BenchSubject, engine: String, variant: String, workload: Workload
    ) async throws -> [Measurement] {
        progress.update("\(engine) \(variant): get, interleaved with raw")
        // The operations ended with deletes: both stores get every key back first.
        for batch in workload.batches {
            try await adapter.setBatch(batch, variant: 0)
            try await raw.setBatch(batch, variant: 0)
        }
        let calls: [(name: String, read: (Int) async throws -> Bool)] = [
            ("raw \(engine)", { try await raw.get($0) }),
            (engine, { try await adapter.get($0) }),
            ("\(engine) withValue", { try await adapter.getBytes($0) == true }),
        ]
        let block = 500
        let rounds = options.pick(quick: 6, standard: 60, full: 200)
        var perCall = [[Double]](repeating: [], count: calls.count)
        for round in -1..<rounds {
            for turn in calls.indices {
                let which = (turn + max(round, 0)) % calls.count
                let start = Stopwatch.now()
                for call in 0..<block {
                    let index = workload.shuffled[(max(round, 0) * block + call) % workload.count]
                    guard try await calls[which].read(index) else {
                        throw BenchError.failed("\(calls[which].name): interleaved get missed")
                    }
                }
                // Round -1 warms every path up, untimed.
                if round >= 0 { perCall[which].append(Double(Stopwatch.now() - start) / Double(block)) }
            }
        }
        let rawMedian = Sample.percentile(perCall[0], 0.5)
        return calls.indices.map { which in
            let median = Sample.percentile(perCall[which], 0.5)
            let sorted = perCall[which].sorted()
            var row = Measurement(
                section: BenchSection.store.rawValue, subject: which == 0 ? "raw \(engine)" : engine,
                variant: variant,
                operation: which == 2 ? "get, withValue, interleaved with raw" : "get, interleaved with raw",
                opsPerSecond: median > 0 ? 1e9 / median : 0, nanosecondsPerOp: median, p50Nanoseconds: median,
                p99Nanoseconds: Sample.percentile(sorted, 0.99, sorted: true), maxNanoseconds: sorted.last ?? 0,
                spreadPercent: median > 0 ? 100 * ((sorted.last ?? 0) - (sorted.first ?? 0)) / median : 0,
                repeats: sorted.count)
            row.note = "median of \(rounds) blocks of \(block) gets taking turns; percentiles are of blocks"
            if which > 0, rawMedian > 0 {
                row.ratio = median / rawMedian
                row.meanRatio = row.ratio
                row.baseline = "raw \(engine), interleaved"
            }
            return row
        }
    }

    /// The floor of `keys(prefix)` of 100 in Swift: its answer is 100 `String`s, and making them from
    /// key bytes already in memory (no engine at all) is what no store can go below. Timed in the
    /// same run as the stores and C, so `keys(prefix)`'s ratio over C can be read against it.
    private func measureStringFloor() async throws -> Measurement {
        let keys = Array(workload.keyBytes.prefix(100))
        var kept: [String] = []
        let sample = try await stopwatch.measure(calls: min(workload.prefixes.count, 1_000)) { _, _ in
            var strings: [String] = []
            strings.reserveCapacity(keys.count)
            for key in keys { strings.append(String(decoding: key, as: UTF8.self)) }
            kept = strings
        }
        guard kept.count == keys.count else { throw BenchError.failed("string floor: \(kept.count) strings") }
        var row = sample.measurement(
            section: BenchSection.store.rawValue, subject: "Swift", variant: "",
            operation: "keys(prefix) of 100: its floor, 100 Strings from bytes in memory")
        row.note = "no engine: what an answer of Strings costs at least"
        return row
    }

    /// The rows of one run of the C baseline; none, with a line saying why, when it fails: the
    /// bench goes on with the Swift baselines.
    private func runC(_ body: () throws -> [Measurement]) -> [Measurement] {
        do {
            return try body()
        } catch {
            print("store: \(error); no C column for it in this run")
            return []
        }
    }

    private func freshFolder(_ name: String) throws -> URL {
        let folder = options.folder.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
