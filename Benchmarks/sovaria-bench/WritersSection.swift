import Foundation
import Sovaria
import Synchronization

/// Section 9: concurrent `.synced` writers on one store. 1, 4, 16 and 64 tasks each making
/// single `set`s; with group commit, writes that arrive while a commit runs share the next one
/// (one sync for the group), so writes per second grow with the writers. The ratio is the
/// throughput over one writer's in the same run.
struct WritersSection {
    let options: BenchOptions
    let progress: Progress

    static let writerCounts = [1, 4, 16, 64]

    func run() async throws -> [Measurement] {
        let section = BenchSection.writers.rawValue
        let total = options.pick(quick: 128, standard: 256, full: 1_024)
        var rows: [Measurement] = []
        for engine in BenchEngines.plain where engine.persistent && engine.name != "postgres" {
            guard options.runs(engine: engine.name) else { continue }
            var single: Double?
            for writers in Self.writerCounts {
                progress.update("\(engine.name): \(writers) synced writers")
                let folder = options.folder.appendingPathComponent("writers-\(engine.name)-\(writers)")
                try? FileManager.default.removeItem(at: folder)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: folder) }
                let store = try engine.open(folder, .synced)
                let value = String(repeating: "v", count: 256)
                let latencies = Latencies()
                let perWriter = max(1, total / writers)
                let start = Stopwatch.now()
                try await withThrowingTaskGroup(of: Void.self) { group in
                    for writer in 0..<writers {
                        group.addTask {
                            for index in 0..<perWriter {
                                let callStart = Stopwatch.now()
                                try await store.set("w\(writer):\(index)", value)
                                let elapsed = Double(Stopwatch.now() - callStart)
                                latencies.append(elapsed)
                            }
                        }
                    }
                    try await group.waitForAll()
                }
                let elapsed = Double(Stopwatch.now() - start)
                let written = perWriter * writers
                let calls = latencies.all
                let sample = Sample(perItemNanoseconds: [elapsed / Double(written)], callLatencies: calls)
                var row = sample.measurement(
                    section: section, subject: engine.name,
                    variant: "synced, \(writers) writer\(writers == 1 ? "" : "s")",
                    operation: "single set, \(written) writes")
                let throughput = Double(written) / (elapsed / 1e9)
                if writers == 1 {
                    single = throughput
                } else if let single {
                    row.note = String(format: "%.2fx the writes/s of one writer", throughput / single)
                }
                rows.append(row)
            }
        }
        return rows
    }
}

/// Call latencies appended from the writers' tasks.
final class Latencies: Sendable {
    private let values = Mutex<[Double]>([])
    func append(_ value: Double) { values.withLock { $0.append(value) } }
    var all: [Double] { values.withLock { $0 } }
}
