import Foundation
import Sovaria

/// Section 1 and 2: every engine through `OfflineStore`, in both durabilities, next to its raw
/// C API doing the same operations with the same schema and flags: called from Swift (`raw …`)
/// and, when the run has the C baseline program, from C (`C …`, see ``CBaseline``).
struct StoreSection {
    let options: BenchOptions
    let workload: Workload
    let stopwatch: Stopwatch
    let progress: Progress

    func run() async throws -> [Measurement] {
        var rows: [Measurement] = []
        var cBaseline: CBaseline?
        switch CBaseline.locate(options) {
        case .success(let program): cBaseline = program
        case .failure(let reason): print(reason)
        }
        for engine in BenchEngines.all where options.runs(engine: engine.name) {
            let limit = engine.maxKeys.map(options.limit) ?? workload.count
            let workload = limit < workload.count ? Workload(count: limit, valueBytes: options.valueBytes) : workload
            for durability in engine.persistent ? [Durability.synced, .flushed] : [.flushed] {
                let variant = engine.persistent ? "\(durability)" : ""
                let operations = StoreOperations(
                    workload: workload, stopwatch: stopwatch,
                    singleSets: durability == .synced && engine.persistent
                        ? options.pick(quick: 50, standard: 100, full: 500)
                        : options.pick(quick: 20_000, standard: 1_000, full: 20_000),
                    progress: progress)
                do {
                    let folder = try freshFolder("\(engine.name)-\(durability)")
                    let store = try engine.open(folder, durability)
                    var measured = try await operations.run(
                        StoreSubject(store, workload), name: engine.name, variant: variant)
                    if workload !== self.workload {
                        for index in measured.indices { measured[index].note = "\(workload.count) keys" }
                    }
                    rows += measured
                }
                if let raw = engine.raw {
                    let subject = try raw(try freshFolder("raw-\(engine.name)-\(durability)"), durability, workload)
                    rows += try await operations.run(subject, name: "raw \(engine.name)", variant: variant)
                }
                if let cBaseline, CBaseline.engines.contains(engine.name) {
                    progress.update("C \(engine.name) \(variant)")
                    var measured = runC {
                        try cBaseline.run(
                            engine: engine.name, variant: variant, workload: workload,
                            singleSets: operations.singleSets, folder: try freshFolder("c-\(engine.name)-\(durability)")
                        )
                    }
                    if workload !== self.workload {
                        for index in measured.indices { measured[index].note = "\(workload.count) keys" }
                    }
                    rows += measured
                }
            }
        }
        // What the encryption wrapper adds to a get, in C: one value's decrypt (and encrypt).
        if let cBaseline, rows.contains(where: { $0.subject.hasPrefix("encrypted(") }) {
            progress.update("C libsodium")
            rows += runC {
                try cBaseline.run(
                    engine: "sodium", variant: "", workload: workload, singleSets: 1,
                    folder: try freshFolder("c-sodium"))
            }
        }
        return rows
    }

    /// The rows of one run of the C baseline; none, with a line saying why, when it fails: the
    /// bench goes on with the Swift baselines.
    private func runC(_ body: () throws -> [Measurement]) -> [Measurement] {
        do {
            return try body()
        } catch {
            print("store: \(error); no C column for it in this run")
            return []
        }
    }

    private func freshFolder(_ name: String) throws -> URL {
        let folder = options.folder.appendingPathComponent(name, isDirectory: true)
        try? FileManager.default.removeItem(at: folder)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }
}
