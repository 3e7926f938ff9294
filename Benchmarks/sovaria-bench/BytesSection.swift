import Foundation
import Sovaria

/// Byte values against the ways to store bytes without them, per engine and value size, in one
/// run: (a) `set(_:data:)` and `data(_:)` of random bytes; (b) `set(_:_:)` and `get(_:)` of an
/// ASCII string of the same length (what a byte value must not cost more than); (c) the bytes as
/// base64 in a string (`base64EncodedString()` + `set`, `get` + `Data(base64Encoded:)`), what an
/// app did before byte values. Rows (b) and (c) carry their p50 over (a)'s: b/a ≥ 1 means bytes
/// cost at most the string path; c/a is what byte values save over base64.
struct BytesSection {
    let options: BenchOptions
    let progress: Progress

    /// The engines measured: every plain one but PostgreSQL (a round trip hides the value's cost),
    /// and the encrypted wrapper over SQLite.
    static let engines: [BenchEngine] =
        BenchEngines.plain.filter { $0.name != "postgres" }
        + BenchEngines.plain.filter { $0.name == "sqlite" }.map(BenchEngines.encrypted)

    /// The value sizes and how many keys each writes and reads per repeat (full, standard, quick).
    static let sizes: [(name: String, bytes: Int, calls: (full: Int, standard: Int, quick: Int))] = [
        ("1 KiB", 1_024, (full: 5_000, standard: 1_000, quick: 200)),
        ("64 KiB", 64 << 10, (full: 1_000, standard: 200, quick: 40)),
    ]

    /// The three ways to store a value, each under a key prefix of its own.
    private enum Path: CaseIterable {
        case bytes, string, base64

        var prefix: String {
            switch self {
            case .bytes: "b:"
            case .string: "s:"
            case .base64: "c:"
            }
        }

        var operations: (set: String, get: String) {
            switch self {
            case .bytes: ("set(data:)", "data()")
            case .string: ("set(String)", "get()")
            case .base64: ("base64 + set", "get + base64 decode")
            }
        }
    }

    func run() async throws -> [Measurement] {
        var rows: [Measurement] = []
        let stopwatch = Stopwatch(repeats: options.repeats)
        for engine in Self.engines where options.runs(engine: engine.name) {
            for size in Self.sizes {
                progress.update("bytes: \(engine.name), \(size.name)")
                rows += try await measure(
                    engine, size: (size.name, size.bytes), calls: options.limit(size.calls), stopwatch: stopwatch)
            }
        }
        return rows
    }

    /// Runs `body` on a fresh store of `engine` in a folder of its own, removed after: each path
    /// starts from an empty store, so none inherits another's grown map or compacted files.
    private func withFreshStore<Result>(
        _ engine: BenchEngine, _ body: (any OfflineStore) async throws -> Result
    ) async throws -> Result {
        let folder = options.folder.appendingPathComponent("bytes-\(engine.name)", isDirectory: true)
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        return try await body(try await engine.open(folder, .flushed))
    }

    /// Six rows for one engine and size: set and get on each path, (b) and (c) with their ratio to (a).
    private func measure(
        _ engine: BenchEngine, size: (name: String, bytes: Int), calls: Int, stopwatch: Stopwatch
    ) async throws -> [Measurement] {
        var generator = SplitMix(seed: UInt64(size.bytes))
        // A few distinct values, so no engine sees one value written over and over.
        let values = (0..<8).map { _ in Data((0..<size.bytes).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
        }
        let letters = Array("abcdefghijklmnopqrstuvwxyz0123456789".utf8)
        let strings = (0..<8).map { _ in
            String(
                decoding: (0..<size.bytes).map { _ in letters[Int(generator.next() % UInt64(letters.count))] },
                as: UTF8.self)
        }
        let order = (0..<calls).shuffled(using: &generator)
        let section = BenchSection.bytes.rawValue
        var rows: [Measurement] = []
        var baseline: (set: Measurement, get: Measurement)?
        for path in Path.allCases {
            let keys = (0..<calls).map { path.prefix + String($0) }
            let (set, get) = try await withFreshStore(engine) { store -> (Sample, Sample) in
                let set: Sample
                let get: Sample
                switch path {
                case .bytes:
                    set = try await stopwatch.measure(calls: calls) { _, call in
                        try await store.set(keys[call], data: values[call % values.count])
                    }
                    get = try await stopwatch.measure(calls: calls) { _, call in
                        _ = try await store.data(keys[order[call]])
                    }
                case .string:
                    set = try await stopwatch.measure(calls: calls) { _, call in
                        try await store.set(keys[call], strings[call % strings.count])
                    }
                    get = try await stopwatch.measure(calls: calls) { _, call in
                        _ = try await store.get(keys[order[call]])
                    }
                case .base64:
                    set = try await stopwatch.measure(calls: calls) { _, call in
                        try await store.set(keys[call], values[call % values.count].base64EncodedString())
                    }
                    get = try await stopwatch.measure(calls: calls) { _, call in
                        _ = try await store.get(keys[order[call]]).flatMap { Data(base64Encoded: $0) }
                    }
                }
                return (set, get)
            }
            var setRow = set.measurement(
                section: section, subject: engine.name, variant: size.name, operation: path.operations.set)
            var getRow = get.measurement(
                section: section, subject: engine.name, variant: size.name, operation: path.operations.get)
            if let baseline {
                Self.compare(&setRow, with: baseline.set)
                Self.compare(&getRow, with: baseline.get)
            } else {
                baseline = (setRow, getRow)
            }
            rows += [setRow, getRow]
        }
        return rows
    }

    /// Sets `row`'s ratios over the bytes path's row of the same operation kind.
    private static func compare(_ row: inout Measurement, with base: Measurement) {
        row.ratio = row.p50Nanoseconds / max(1, base.p50Nanoseconds)
        row.meanRatio = row.nanosecondsPerOp / max(1, base.nanosecondsPerOp)
        row.baseline = base.operation
    }
}

/// SplitMix64: the section's values and order are the same in every run.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = (state ^ (state >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
