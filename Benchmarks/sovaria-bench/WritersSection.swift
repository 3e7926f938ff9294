import Dispatch
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
                let store = try await engine.open(folder, .synced)
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
            if engine.name == "file" { rows += try rawFileFloor(total: total, section: section) }
        }
        return rows
    }

    /// The file system's own floor for a file per key: `total` synced writes (temp file, fsync,
    /// rename, fsync of the folder), made by 1 thread and by 16 at once with plain system calls.
    /// Any group commit of a file store shares at most what the file system shares between
    /// concurrent fsyncs of different files.
    func rawFileFloor(total: Int, section: String) throws -> [Measurement] {
        var rows: [Measurement] = []
        var single: Double?
        for threads in [1, 16] {
            progress.update("raw POSIX files: \(threads) synced writer threads")
            let folder = options.folder.appendingPathComponent("writers-raw-\(threads)")
            try? FileManager.default.removeItem(at: folder)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let directory = open(folder.path, O_RDONLY | O_DIRECTORY)
            guard directory >= 0 else { throw BenchError.failed("raw POSIX: cannot open \(folder.path)") }
            defer { close(directory) }
            let value = [UInt8](repeating: UInt8(ascii: "v"), count: 256)
            let perThread = max(1, total / threads)
            let failures = Atomic(0)
            let start = Stopwatch.now()
            // Threads of their own (Dispatch's concurrentPerform would run two at a time on two
            // cores): each blocks in its fsync while the others write.
            let finished = DispatchGroup()
            for thread in 0..<threads {
                finished.enter()
                Thread {
                    defer { finished.leave() }
                    for index in 0..<perThread {
                        let temporary = ".tmp-\(thread)-\(index)"
                        let file = openat(directory, temporary, O_WRONLY | O_CREAT | O_EXCL, 0o600)
                        let ok =
                            file >= 0 && value.withUnsafeBytes { write(file, $0.baseAddress, $0.count) } == value.count
                            && fsync(file) == 0 && close(file) == 0
                            && renameat(directory, temporary, directory, "k\(thread)-\(index)") == 0
                            && fsync(directory) == 0
                        if !ok { failures.add(1, ordering: .relaxed) }
                    }
                }.start()
            }
            finished.wait()
            let elapsed = Double(Stopwatch.now() - start)
            guard failures.load(ordering: .relaxed) == 0 else { throw BenchError.failed("raw POSIX: a write failed") }
            let written = perThread * threads
            var row = Sample(
                perItemNanoseconds: [elapsed / Double(written)], callLatencies: [elapsed / Double(written)]
            )
            .measurement(
                section: section, subject: "raw POSIX files",
                variant: "synced, \(threads) thread\(threads == 1 ? "" : "s")",
                operation: "temp + fsync + rename + fsync folder, \(written) writes")
            let throughput = Double(written) / (elapsed / 1e9)
            if threads == 1 {
                single = throughput
            } else if let single {
                row.note = String(
                    format: "%.2fx the writes/s of one thread: the file system's floor", throughput / single)
            }
            rows.append(row)
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
