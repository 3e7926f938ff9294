import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaWorkloads

/// What the tools themselves cost, measured on the same trace as the stores: the replay driver
/// on a store that does nothing (the floor under every row), and ``RecordingOfflineStore`` around
/// the memory store (what recording an app's calls adds to each).
enum DriverCost {
    /// The subject of the driver's own rows.
    static let driverSubject = "driver (no-op store)"
    /// The subject of the recorder's rows.
    static let recordingSubject = "recording(memory)"

    /// The run phase of `trace` on a no-op store and on a recording memory store, as rows; the
    /// recording rows' note says what recording added per call over the plain memory store on the
    /// same trace, run just before.
    static func rows(
        trace: String, name: String, folder: URL, readAPI: WorkloadDriver.ReadAPI
    ) async throws -> [Measurement] {
        let options = WorkloadDriver.Options(readAPI: readAPI)
        let driver = await WorkloadDriver(store: NoOpStore(), options: options).run(try WorkloadRunner.reader(trace))
        var rows = WorkloadRows.rows(
            driver, subject: driverSubject, workload: name, durability: .synced, diskBytes: nil
        )
        .filter { $0.variant.contains(" run ") }
        let plain = WorkloadRows.rows(
            await WorkloadDriver(store: MemoryOfflineStore(), options: options).run(try WorkloadRunner.reader(trace)),
            subject: "memory",
            workload: name, durability: .synced, diskBytes: nil)
        let traceFile = folder.appendingPathComponent("recorded-\(name).sovtrace")
        let recorder = RecordingOfflineStore(wrapping: MemoryOfflineStore(), traceFile: traceFile)
        let recorded = await WorkloadDriver(store: recorder, options: options).run(try WorkloadRunner.reader(trace))
        recorder.stopRecording()
        // The recorder rotates at 64 MiB: remove its older files too.
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        for file in files where file.hasPrefix("recorded-\(name).") {
            try? FileManager.default.removeItem(at: folder.appendingPathComponent(file))
        }
        var recording = WorkloadRows.rows(
            recorded, subject: recordingSubject, workload: name, durability: .synced, diskBytes: nil
        ).filter { $0.variant.contains(" run ") }
        for index in recording.indices {
            let row = recording[index]
            guard let base = plain.first(where: { $0.operation == row.operation && $0.variant == row.variant })
            else { continue }
            let added = max(0, row.nanosecondsPerOp - base.nanosecondsPerOp)
            recording[index].note = "recording adds \(Report.duration(added)) a call (mean, over the memory store)"
        }
        rows += recording
        // The tools' rows belong to no durability: their variant is the workload and phase only.
        for index in rows.indices { rows[index].variant = "\(name) run" }
        // A run reading bytes makes no String per entry: the Strings' floor is for a String run.
        if readAPI == .strings, let floor = try scanFloor(trace: trace, name: name) { rows.append(floor) }
        return rows
    }

    /// The subject of the row that shows what a scan's Strings cost alone.
    static let stringFloorSubject = "floor: a scan's Strings"

    /// What making the Strings of a scan's entries costs by itself, where `trace` scans: the mean
    /// page (scan limits, and the sizes its inserts and updates wrote) times the time of
    /// `UTF8BytesFloor.string(_:)` (the UTF-8 check and copy every engine's read makes, and the C
    /// library's does not) on a key and a value of those sizes, measured here.
    static func scanFloor(trace: String, name: String) throws -> Measurement? {
        var scans = 0
        var scanned = 0
        var writes = 0
        var written = 0
        var keyBytes = 0
        for record in try WorkloadRunner.reader(trace) {
            switch record.operation {
            case .scan(_, _, let limit):
                scans += 1
                scanned += limit
            case .insert(let key, let bytes), .update(let key, let bytes):
                writes += 1
                written += bytes
                keyBytes += key.utf8.count
            default: continue
            }
        }
        guard scans > 0, writes > 0 else { return nil }
        let valueBytes = written / writes
        let key = [UInt8](repeating: UInt8(ascii: "k"), count: keyBytes / writes)
        let value = TraceValue.bytes(count: valueBytes, index: 0)
        let rounds = 20_000
        var kept = 0
        let start = Stopwatch.now()
        for _ in 0..<rounds {
            key.withUnsafeBufferPointer { kept &+= UTF8BytesFloor.string($0)?.utf8.count ?? 0 }
            value.withUnsafeBufferPointer { kept &+= UTF8BytesFloor.string($0)?.utf8.count ?? 0 }
        }
        let perEntry = Double(Stopwatch.now() - start) / Double(rounds)
        precondition(kept > 0)
        let perScan = perEntry * Double(scanned) / Double(scans)
        return Measurement(
            section: BenchSection.workload.rawValue, subject: stringFloorSubject, variant: "\(name) run",
            operation: "scan", opsPerSecond: 1e9 / perScan, nanosecondsPerOp: perScan, p50Nanoseconds: perScan,
            p99Nanoseconds: perScan, maxNanoseconds: perScan, spreadPercent: 0, repeats: 1,
            note: String(
                format: "%.0f entries of %d B on average, %@ an entry: the C library copies bytes instead",
                Double(scanned) / Double(scans), valueBytes, Report.duration(perEntry)))
    }
}

/// A store that keeps nothing and answers at once: under the driver, what the driver costs.
final class NoOpStore: OfflineStore {
    var capabilities: StoreCapabilities { [.atomicBatch] }
    func get(_ key: String) async throws -> String? { nil }
    func set(_ key: String, _ value: String) async throws {}
    func delete(_ key: String) async throws {}
    func keys(_ prefix: String) async throws -> [String] { [] }
    func write(_ batch: [StoreWrite]) async throws {}
    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] { [] }
    func withValue<Result>(
        _ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) async throws -> Result? { nil }
    func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage { .empty }
    func compact() async throws {}
}
