import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaWorkloads
import Synchronization

/// Runs one trace file on every store, and on the C library of each plain SQLite, LMDB and
/// LevelDB store: the same operations, record for record.
struct WorkloadRunner {
    let stores: [WorkloadStore]
    let driverOptions: WorkloadDriver.Options
    let cReplay: CReplay?
    /// Where the bench's own stores and the C replayer's folders are made.
    let folder: URL
    let progress: Progress

    /// Runs `trace` (the workload `name`) everywhere; `keyPrefix` is the prefix of every key the
    /// trace writes, cleared from a store the user named before the run.
    func run(trace: String, name: String, keyPrefix: String?) async throws -> [Measurement] {
        var rows: [Measurement] = []
        var cDone: Set<String> = []
        for store in stores {
            let url = store.url(forRun: name, in: folder)
            progress.update("workload \(name): \(store.label) \(Self.durabilityName(url.durability))")
            let opened = try await OfflineStores.open(url, using: WorkloadStore.schemes)
            if !store.isOwn, let keyPrefix { try await WorkloadStore.clear(opened, prefix: keyPrefix) }
            let failure = TraceFailure()
            let result = await WorkloadDriver(store: opened, options: driverOptions)
                .run(CheckedTrace(reader: try Self.reader(trace), failure: failure))
            try failure.check(trace)
            rows += WorkloadRows.rows(
                result, subject: store.label, workload: name, durability: url.durability,
                diskBytes: WorkloadStore.diskBytes(url))
            if store.isOwn, url.engine != "memory", url.engine != "postgres" {
                for suffix in WorkloadStore.sqliteFileSuffixes {
                    try? FileManager.default.removeItem(atPath: url.location + suffix)
                }
            }
            // The C replay runs one task, closed loop, the whole trace: it is compared with runs
            // like that only (a deadline would stop the Swift side part of the way).
            guard let cReplay, let engine = store.cEngine, driverOptions.concurrency == 1,
                driverOptions.mode == .closedLoop, driverOptions.maxRunDuration == nil
            else { continue }
            let durability = Self.durabilityName(url.durability)
            guard cDone.insert("\(engine) \(durability)").inserted else { continue }
            progress.update("workload \(name): C \(engine) \(durability)")
            let cFolder = folder.appendingPathComponent("c-\(name)-\(engine)", isDirectory: true)
            rows += try cReplay.run(engine: engine, durability: durability, trace: trace, folder: cFolder) { phase in
                WorkloadRows.variant(name, phase: phase, durability: url.durability)
            }
            try? FileManager.default.removeItem(at: cFolder)
        }
        return rows
    }

    /// Runs `stream` (a run without an operation bound: no trace file, so no C replay) on every
    /// store.
    func run(stream: WorkloadStream, name: String, keyPrefix: String?) async throws -> [Measurement] {
        var rows: [Measurement] = []
        for store in stores {
            let url = store.url(forRun: name, in: folder)
            progress.update("workload \(name): \(store.label) \(Self.durabilityName(url.durability))")
            let opened = try await OfflineStores.open(url, using: WorkloadStore.schemes)
            if !store.isOwn, let keyPrefix { try await WorkloadStore.clear(opened, prefix: keyPrefix) }
            let result = await WorkloadDriver(store: opened, options: driverOptions).run(stream)
            rows += WorkloadRows.rows(
                result, subject: store.label, workload: name, durability: url.durability,
                diskBytes: WorkloadStore.diskBytes(url))
        }
        return rows
    }

    static func reader(_ trace: String) throws -> TraceReader {
        do {
            return try TraceReader(path: trace)
        } catch {
            throw BenchError.failed("\(error)")
        }
    }

    static func durabilityName(_ durability: Durability) -> String { durability == .synced ? "synced" : "flushed" }
}

/// Where a trace read by the driver leaves the error that ended it, if one did.
final class TraceFailure: Sendable {
    let message = Mutex<String?>(nil)

    /// Throws the error that ended the trace, if one did.
    func check(_ trace: String) throws {
        if let message = message.withLock({ $0 }) { throw BenchError.failed("\(trace): \(message)") }
    }
}

/// A reader of trace records that keeps the error that ended its iteration.
protocol TraceRecordSource: AnyObject, IteratorProtocol where Element == TraceRecord {
    /// The error that ended the iteration, if one did.
    var failureDescription: String? { get }
}

extension TraceReader: TraceRecordSource {
    var failureDescription: String? { failure.map { "\($0)" } }
}

extension LibCacheSimTraceReader: TraceRecordSource {
    var failureDescription: String? { failure.map { "\($0)" } }
}

/// A trace's records (the first `limit`, when given); at their end, the reader's failure (if any)
/// goes to `failure`, so a damaged trace stops the run instead of ending it early unseen.
struct CheckedTrace: Sequence {
    let reader: any TraceRecordSource
    let failure: TraceFailure
    var limit: Int?

    struct Iterator: IteratorProtocol {
        var reader: any TraceRecordSource
        let failure: TraceFailure
        var remaining: Int?

        mutating func next() -> TraceRecord? {
            if let remaining {
                guard remaining > 0 else { return nil }
                self.remaining = remaining - 1
            }
            if let record = reader.next() { return record }
            if let error = reader.failureDescription { failure.message.withLock { $0 = error } }
            return nil
        }
    }

    func makeIterator() -> Iterator { Iterator(reader: reader, failure: failure, remaining: limit) }
}
