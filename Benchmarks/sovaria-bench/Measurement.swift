/// One row of the benchmark's output.
struct Measurement: Codable, Sendable {
    var section: String
    var subject: String
    var variant: String
    var operation: String
    /// Items per second (entries read or written, or calls where an item is a call).
    var opsPerSecond: Double
    /// Median over the repeats of the time per item.
    var nanosecondsPerOp: Double
    /// Latency of one call, over every call of every repeat.
    var p50Nanoseconds: Double
    var p99Nanoseconds: Double
    var maxNanoseconds: Double
    /// (slowest − fastest repeat) / median, in percent.
    var spreadPercent: Double
    var repeats: Int
    /// This row's typical (p50) call time over its baseline's, when it has one: robust to the
    /// stalls another process on the machine causes, which the mean is not.
    var ratio: Double?
    /// The same ratio of the mean time per item.
    var meanRatio: Double?
    var baseline: String?
    /// This row's p50 over the C baseline's (Benchmarks/c-baseline) for the same engine, variant
    /// and operation, when the run had one: what the Swift side costs, which ``ratio`` against a
    /// Swift raw baseline cannot show.
    var cRatio: Double?
    /// The same ratio of the mean time per item.
    var cMeanRatio: Double?
    /// The C row (or sum of C rows) ``cRatio`` compares with, e.g. `C sqlite`.
    var cBaseline: String?
    var note: String?
    /// Workload rows (`sovaria-bench workload`, `replay`): the 95th and 99.9th percentiles, and
    /// the store's bytes on disk after the run.
    var p95Nanoseconds: Double?
    var p999Nanoseconds: Double?
    var diskBytes: Int?
    /// Workload rows: the operations the row's percentiles are taken over.
    var operationCount: Int?
}

/// Times calls: a warm-up repeat, then `repeats` timed ones; reports the median repeat and the
/// latency distribution of single calls.
struct Stopwatch {
    let repeats: Int

    static func now() -> UInt64 { monotonicNanoseconds() }

    /// Runs `prepare` (untimed) and then `calls` timed calls of `body` per repeat, each after
    /// an untimed `prepareCall`; both closures of a call get the repeat and the call's index.
    /// `itemsPerCall` turns a batch call into per-item figures.
    func measure(
        calls: Int,
        itemsPerCall: Int = 1,
        warmUp: Bool = true,
        prepare: (_ repeat: Int) async throws -> Void = { _ in },
        prepareCall: (_ repeat: Int, _ call: Int) async throws -> Void = { _, _ in },
        _ body: (_ repeat: Int, _ call: Int) async throws -> Void
    ) async throws -> Sample {
        var perItem: [Double] = []
        var latencies: [Double] = []
        latencies.reserveCapacity(calls * repeats)
        for round in (warmUp ? -1 : 0)..<repeats {
            try await prepare(round)
            var total: UInt64 = 0
            for call in 0..<calls {
                try await prepareCall(round, call)
                let start = Self.now()
                try await body(round, call)
                let elapsed = Self.now() - start
                total += elapsed
                if round >= 0 { latencies.append(Double(elapsed)) }
            }
            if round >= 0 { perItem.append(Double(total) / Double(max(1, calls * itemsPerCall))) }
        }
        return Sample(perItemNanoseconds: perItem, callLatencies: latencies)
    }
}

extension Stopwatch {
    /// Two bodies timed taking turns: per call, `prepareCall` (untimed), then `first`, then
    /// `second`, after a warm-up repeat, as ``measure(calls:itemsPerCall:warmUp:prepare:prepareCall:_:)``
    /// times one. A machine that slows down or speeds up between calls weighs on both alike, so
    /// the ratio of their medians holds where two loops run one after the other would not.
    func measureTakingTurns(
        calls: Int,
        prepareCall: (_ repeat: Int, _ call: Int) async throws -> Void = { _, _ in },
        _ first: (_ repeat: Int, _ call: Int) async throws -> Void,
        then second: (_ repeat: Int, _ call: Int) async throws -> Void
    ) async throws -> (first: Sample, second: Sample) {
        var samples = [Sample](repeating: Sample(perItemNanoseconds: [], callLatencies: []), count: 2)
        for round in -1..<repeats {
            var totals: [UInt64] = [0, 0]
            for call in 0..<calls {
                try await prepareCall(round, call)
                var start = Self.now()
                try await first(round, call)
                let firstElapsed = Self.now() - start
                start = Self.now()
                try await second(round, call)
                for (which, elapsed) in [firstElapsed, Self.now() - start].enumerated() {
                    totals[which] += elapsed
                    if round >= 0 { samples[which].callLatencies.append(Double(elapsed)) }
                }
            }
            guard round >= 0 else { continue }
            for which in 0..<2 {
                samples[which].perItemNanoseconds.append(Double(totals[which]) / Double(max(1, calls)))
            }
        }
        return (samples[0], samples[1])
    }

    /// The latencies of `calls` timed calls of `body`, after one untimed call: the first run of a
    /// path in the process is cold (code, caches and lazily built state), and a loop timed by hand
    /// must not count it. `body` gets the call's index (0 is the untimed one) and returns the
    /// nanoseconds it timed, so it can leave its own setup out.
    static func latenciesAfterWarmUp(
        calls: Int, _ body: (_ call: Int) async throws -> UInt64
    ) async rethrows -> [Double] {
        var latencies: [Double] = []
        latencies.reserveCapacity(calls)
        for call in 0...calls {
            let elapsed = try await body(call)
            if call > 0 { latencies.append(Double(elapsed)) }
        }
        return latencies
    }
}

/// The raw timings of one measured operation.
struct Sample {
    var perItemNanoseconds: [Double]
    var callLatencies: [Double]

    var median: Double { Self.percentile(perItemNanoseconds, 0.5) }

    /// Adds another sample's repeats and calls to this one.
    mutating func append(_ other: Sample) {
        perItemNanoseconds += other.perItemNanoseconds
        callLatencies += other.callLatencies
    }

    func measurement(section: String, subject: String, variant: String, operation: String) -> Measurement {
        let sortedLatencies = callLatencies.sorted()
        let spread = (perItemNanoseconds.max() ?? 0) - (perItemNanoseconds.min() ?? 0)
        return Measurement(
            section: section, subject: subject, variant: variant, operation: operation,
            opsPerSecond: median > 0 ? 1e9 / median : 0, nanosecondsPerOp: median,
            p50Nanoseconds: Self.percentile(sortedLatencies, 0.5, sorted: true),
            p99Nanoseconds: Self.percentile(sortedLatencies, 0.99, sorted: true),
            maxNanoseconds: sortedLatencies.last ?? 0,
            spreadPercent: median > 0 ? 100 * spread / median : 0, repeats: perItemNanoseconds.count)
    }

    static func percentile(_ values: [Double], _ fraction: Double, sorted: Bool = false) -> Double {
        guard !values.isEmpty else { return 0 }
        let ordered = sorted ? values : values.sorted()
        let index = Int((Double(ordered.count - 1) * fraction).rounded())
        return ordered[index]
    }
}
