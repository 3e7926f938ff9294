import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaWorkloads

/// A replay's results as the bench's rows: one per phase and operation kind, and one for all of
/// a phase's operations together (its throughput is the phase's wall-clock rate).
enum WorkloadRows {
    /// The operation name of a phase's row for all its operations.
    static let allOperations = "all operations"

    /// The variant of a row: the workload, the phase and the durability (`A run flushed`).
    static func variant(_ workload: String, phase: String, durability: Durability) -> String {
        "\(workload) \(phase) \(durability == .synced ? "synced" : "flushed")"
    }

    /// The workload a row's variant names: `A run flushed` and a tool's `A run` are both `A` (a
    /// workload file's name may hold spaces).
    static func workload(ofVariant variant: String) -> String {
        var words = variant.split(separator: " ", omittingEmptySubsequences: false)
        if let last = words.last, last == "synced" || last == "flushed" { words.removeLast() }
        if words.count > 1, let last = words.last, last == "run" || last == "load" { words.removeLast() }
        return words.joined(separator: " ")
    }

    /// The bench's name of an operation the C replayer names.
    static func operationName(fromC name: String) -> String {
        switch name {
        case "all": allOperations
        case "readModifyWrite": OperationKind.readModifyWrite.name
        default: name
        }
    }

    /// The rows of `result` for `subject`, the workload `workload`.
    static func rows(
        _ result: WorkloadResult, subject: String, workload: String, durability: Durability, diskBytes: Int?
    ) -> [Measurement] {
        var rows: [Measurement] = []
        for phase in result.phases {
            let phaseName = phase.phase == .load ? "load" : "run"
            let variant = variant(workload, phase: phaseName, durability: durability)
            let total = phase.total
            var all = row(total, subject: subject, variant: variant, operation: allOperations)
            all.opsPerSecond = phase.throughput
            all.nanosecondsPerOp = phase.throughput > 0 ? 1e9 / phase.throughput : 0
            all.diskBytes = phase.phase == .run || result.phases.count == 1 ? diskBytes : nil
            rows.append(all)
            for (kind, stats) in phase.operations.sorted(by: { $0.key < $1.key }) where stats.count > 0 {
                rows.append(row(stats, subject: subject, variant: variant, operation: kind.name))
            }
        }
        return rows
    }

    private static func row(
        _ stats: OperationStats, subject: String, variant: String, operation: String
    ) -> Measurement {
        let mean = stats.latency.mean
        var notes: [String] = []
        if stats.failures > 0 {
            notes.append("\(stats.failures) failed: \(stats.firstFailure.map { "\($0.error)" } ?? "")")
        }
        if stats.misses > 0 { notes.append("\(stats.misses) misses") }
        return Measurement(
            section: BenchSection.workload.rawValue, subject: subject, variant: variant, operation: operation,
            opsPerSecond: mean > 0 ? 1e9 / mean : 0, nanosecondsPerOp: mean, p50Nanoseconds: Double(stats.latency.p50),
            p99Nanoseconds: Double(stats.latency.p99), maxNanoseconds: Double(stats.latency.max), spreadPercent: 0,
            repeats: 1, note: notes.isEmpty ? nil : notes.joined(separator: "; "),
            p95Nanoseconds: Double(stats.latency.p95), p999Nanoseconds: Double(stats.latency.p999),
            operationCount: Int(stats.count))
    }
}
