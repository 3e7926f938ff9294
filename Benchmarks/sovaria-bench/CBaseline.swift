import Foundation

/// The C baseline (Benchmarks/c-baseline/sovaria_c_baseline.c): the store section's operations in
/// plain C against the engines' C APIs, on the same workload, run as a child process next to each
/// engine so both are measured under the same load.
///
/// The Swift raw baselines call the same C APIs from Swift, so they pay the Swift-side costs the
/// adapters pay too; the C rows show them. Its rows are subjects `C file`, `C sqlite`, `C lmdb`,
/// `C leveldb`, `C postgres` (libpq on the bench's server) and `C libsodium` (one value's
/// XChaCha20-Poly1305, what the encryption wrapper adds).
/// When the program is not given or cannot run, the bench says so once and goes on without it.
struct CBaseline {
    /// The engines the program measures, by the bench's engine names: every persistent one.
    static let engines = Set(BenchEngines.plain.filter(\.persistent).map(\.name))
    /// The subject of the C rows of `engine`.
    static func subject(_ engine: String) -> String { "C " + engine }
    /// The subject of the encryption rows.
    static let sodiumSubject = "C libsodium"

    /// One line of the program's output.
    struct Row: Decodable {
        let engine: String
        let variant: String
        let count: Int
        /// FNV-1a of the workload the program rebuilt (``Workload/fingerprint``); a recorded or fake
        /// output may leave it out, and then nothing is checked.
        let fingerprint: String?
        let operation: String
        let opsPerSecond: Double
        let nanosecondsPerOp: Double
        let p50Nanoseconds: Double
        let p99Nanoseconds: Double
        let maxNanoseconds: Double
        let spreadPercent: Double
        let repeats: Int
    }

    let path: String
    let options: BenchOptions

    /// The program `options` name, or why there is none (printed once, before the table).
    static func locate(_ options: BenchOptions) -> Result<CBaseline, BenchError> {
        guard let path = options.cBaselinePath else {
            return .failure(
                .failed(
                    "store: no C baseline given (--c-baseline PROGRAM or SOVARIA_C_BASELINE; `make bench` builds "
                        + "and passes it): ratios against the Swift raw baselines only"))
        }
        guard FileManager.default.isExecutableFile(atPath: path) else {
            return .failure(
                .failed(
                    "store: the C baseline \(path) is missing or not executable (`make bench` builds it with cc): "
                        + "ratios against the Swift raw baselines only"))
        }
        return .success(CBaseline(path: path, options: options))
    }

    /// Runs the program on `engine` in `durability` over `workload` in `folder`, and returns its rows
    /// in the store section; throws when it fails or ran another workload.
    func run(engine: String, variant: String, workload: Workload, singleSets: Int, folder: URL) throws -> [Measurement]
    {
        var arguments = [
            "--engine", engine, "--count", "\(workload.count)", "--value-size", "\(workload.valueBytes[0].count)",
            "--repeats", "\(options.repeats)", "--single-sets", "\(singleSets)", "--dir", folder.path,
        ]
        if !variant.isEmpty { arguments += ["--durability", variant] }
        // The server's conninfo goes in the environment, where `ps` does not show it.
        let environment = engine == "postgres" ? ["SOVARIA_C_BASELINE_CONNINFO": try BenchPostgres.conninfo()] : [:]
        let output = try Self.execute(path, arguments, environment: environment)
        let rows = try output.split(separator: "\n").filter { !$0.isEmpty }.map { line in
            do {
                return try JSONDecoder().decode(Row.self, from: Data(line.utf8))
            } catch {
                throw BenchError.failed("the C baseline printed a line that is not a result: \(line.prefix(200))")
            }
        }
        let mine = rows.filter { $0.engine == engine && $0.variant == variant && $0.count == workload.count }
        guard !mine.isEmpty else {
            throw BenchError.failed(
                "the C baseline printed no result for \(engine) \(variant) with \(workload.count) keys")
        }
        if let other = mine.first(where: { $0.fingerprint != nil && $0.fingerprint != workload.fingerprint }) {
            throw BenchError.failed(
                "the C baseline ran another workload than this bench (fingerprint \(other.fingerprint ?? "") vs "
                    + "\(workload.fingerprint)): Workload.swift and sovaria_c_baseline.c differ")
        }
        let subject = engine == "sodium" ? Self.sodiumSubject : Self.subject(engine)
        return mine.map { row in
            var measurement = Measurement(
                section: BenchSection.store.rawValue, subject: subject, variant: row.variant,
                operation: row.operation, opsPerSecond: row.opsPerSecond, nanosecondsPerOp: row.nanosecondsPerOp,
                p50Nanoseconds: row.p50Nanoseconds, p99Nanoseconds: row.p99Nanoseconds,
                maxNanoseconds: row.maxNanoseconds, spreadPercent: row.spreadPercent, repeats: row.repeats)
            if row.fingerprint == nil { measurement.note = "workload not checked (no fingerprint)" }
            return measurement
        }
    }

    /// The standard output of `program`, run with this process's environment plus `environment`;
    /// throws with the end of its standard error when it fails.
    static func execute(
        _ program: String, _ arguments: [String], environment: [String: String]
    ) throws
        -> String
    {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: program)
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, given in given }
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        // The program prints a line per operation and little on standard error: reading one pipe to
        // its end while the other fills cannot block it.
        let data = output.fileHandleForReading.readDataToEndOfFile()
        let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else {
            let reason = message.split(separator: "\n").last.map(String.init) ?? "no message"
            throw BenchError.failed(
                "\(URL(fileURLWithPath: program).lastPathComponent) failed (status \(process.terminationStatus)): \(reason)"
            )
        }
        return String(decoding: data, as: UTF8.self)
    }
}
