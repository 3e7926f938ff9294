import Foundation
import Sovaria
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
    /// recording rows' note says what recording added per call over the memory store's rows in
    /// `memoryRows` (the same run).
    static func rows(trace: String, name: String, folder: URL, memoryRows: [Measurement]) async throws -> [Measurement]
    {
        let driver = await WorkloadDriver(store: NoOpStore()).run(try WorkloadRunner.reader(trace))
        var rows = WorkloadRows.rows(
            driver, subject: driverSubject, workload: name, durability: .synced, diskBytes: nil
        )
        .filter { $0.variant.contains(" run ") }
        let traceFile = folder.appendingPathComponent("recorded-\(name).sovtrace")
        let recorder = RecordingOfflineStore(wrapping: MemoryOfflineStore(), traceFile: traceFile)
        let recorded = await WorkloadDriver(store: recorder).run(try WorkloadRunner.reader(trace))
        recorder.stopRecording()
        try? FileManager.default.removeItem(at: traceFile)
        var recording = WorkloadRows.rows(
            recorded, subject: recordingSubject, workload: name, durability: .synced, diskBytes: nil)
        for index in recording.indices {
            let row = recording[index]
            guard
                let plain = memoryRows.first(where: {
                    $0.operation == row.operation
                        && $0.variant.hasPrefix("\(name) \(row.variant.split(separator: " ")[1]) ")
                })
            else { continue }
            let added = row.nanosecondsPerOp - plain.nanosecondsPerOp
            recording[index].note = String(format: "recording adds %@ a call (mean)", Report.duration(max(0, added)))
        }
        rows += recording
        return rows
    }
}

/// A store that keeps nothing and answers at once: under the driver, what the driver costs.
final class NoOpStore: OfflineStore {
    var capabilities: StoreCapabilities { [.atomicBatch] }
    var isPersistent: Bool { false }
    func get(_ key: String) async throws -> String? { nil }
    func set(_ key: String, _ value: String) async throws {}
    func delete(_ key: String) async throws {}
    func keys(_ prefix: String) async throws -> [String] { [] }
    func write(_ batch: [StoreWrite]) async throws {}
    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] { [] }
    func compact() async throws {}
}
