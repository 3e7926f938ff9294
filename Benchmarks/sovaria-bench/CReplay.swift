import Foundation

/// The C library on the same operation stream: `sovaria-c-replay` (Benchmarks/c-baseline,
/// `make c-baseline`) replays a trace file on raw SQLite, LMDB or LevelDB with the settings the
/// Sovaria engine uses, so every workload row has a ratio to the engine itself.
struct CReplay {
    /// One line of the program's output (its top comment documents them).
    struct Line: Decodable {
        let line: String
        let engine: String
        let durability: String
        let phase: String?
        let operation: String?
        let count: Int?
        let failures: Int?
        let p50Nanoseconds: Double?
        let p95Nanoseconds: Double?
        let p99Nanoseconds: Double?
        let p999Nanoseconds: Double?
        let maxNanoseconds: Double?
        let elapsedNanoseconds: Double?
        let opsPerSecond: Double?
    }

    let path: String

    /// The program: `--c-replay PATH`, else `SOVARIA_C_REPLAY`, else `sovaria-c-replay` beside
    /// the C baseline `make bench` built; `nil` (with why) when none can run.
    static func locate(_ given: String?, cBaseline: String?) -> Result<CReplay, BenchError> {
        let environment = ProcessInfo.processInfo.environment["SOVARIA_C_REPLAY"].flatMap { $0.isEmpty ? nil : $0 }
        let beside = cBaseline.map {
            URL(fileURLWithPath: $0).deletingLastPathComponent().appendingPathComponent("sovaria-c-replay").path
        }
        guard let path = given ?? environment ?? beside ?? Optional(".build/sovaria-c-replay") else {
            return .failure(.failed("workload: no C replayer"))
        }
        guard FileManager.default.isExecutableFile(atPath: path) else {
            return .failure(
                .failed(
                    "workload: the C replayer \(path) is missing (`make c-baseline` builds it; --c-replay PATH): "
                        + "no ratios to the C library"))
        }
        return .success(CReplay(path: path))
    }

    /// Replays `trace` on `engine` in a fresh `folder` and returns its rows as the bench's, with
    /// subject `C <engine>` and `variant`, plus the folder's bytes on disk after the run.
    func run(
        engine: String, durability: String, trace: String, folder: URL, variant: (_ phase: String) -> String
    ) throws -> [Measurement] {
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let output = try CBaseline.execute(
            path, [engine, folder.path, trace, "--durability", durability], environment: [:])
        let lines = try output.split(separator: "\n").filter { !$0.isEmpty }.map { line in
            do {
                return try JSONDecoder().decode(Line.self, from: Data(line.utf8))
            } catch {
                throw BenchError.failed("the C replayer printed a line that is not a result: \(line.prefix(200))")
            }
        }
        let disk = WorkloadStore.folderBytes(folder.path)
        return lines.compactMap { line -> Measurement? in
            guard line.line == "operation", let phase = line.phase, let operation = line.operation,
                let count = line.count, count > 0, let opsPerSecond = line.opsPerSecond
            else { return nil }
            return Measurement(
                section: BenchSection.workload.rawValue, subject: "C \(engine)", variant: variant(phase),
                operation: WorkloadRows.operationName(fromC: operation), opsPerSecond: opsPerSecond,
                nanosecondsPerOp: opsPerSecond > 0 ? 1e9 / opsPerSecond : 0, p50Nanoseconds: line.p50Nanoseconds ?? 0,
                p99Nanoseconds: line.p99Nanoseconds ?? 0, maxNanoseconds: line.maxNanoseconds ?? 0, spreadPercent: 0,
                repeats: 1, note: (line.failures ?? 0) > 0 ? "\(line.failures ?? 0) failed" : nil,
                p95Nanoseconds: line.p95Nanoseconds, p999Nanoseconds: line.p999Nanoseconds,
                diskBytes: operation == "all" ? disk : nil, operationCount: count)
        }
    }
}
