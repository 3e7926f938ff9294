import Foundation
import Sovaria

/// Section 6: the same gets called from a plain task and from the main actor, an app's usual
/// caller. A method that hops to another executor pays the hop twice per call from the main
/// actor; one that runs on the caller's executor does not.
struct CallerSection {
    let options: BenchOptions
    let workload: Workload
    let progress: Progress

    func run() async throws -> [Measurement] {
        var rows: [Measurement] = []
        let stopwatch = Stopwatch(repeats: options.repeats)
        let gets = min(workload.count, 20_000)
        for engine in BenchEngines.plain where options.runs(engine: engine.name) {
            progress.update("caller: \(engine.name)")
            let folder = options.folder.appendingPathComponent("caller-\(engine.name)", isDirectory: true)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let store = try await engine.open(folder, .flushed)
            for batch in workload.batches {
                try await store.write(batch.map { .set(key: workload.keys[$0], value: workload.values[0]) })
            }
            let keys = workload.keys
            let order = workload.shuffled
            let fromTask = try await Task.detached {
                try await stopwatch.measure(calls: gets) { _, call in _ = try await store.get(keys[order[call]]) }
            }.value
            let fromMainActor = try await Self.measureOnMainActor(store, keys, order, gets, stopwatch)
            let section = BenchSection.caller.rawValue
            rows.append(fromTask.measurement(section: section, subject: engine.name, variant: "task", operation: "get"))
            var main = fromMainActor.measurement(
                section: section, subject: engine.name, variant: "main actor", operation: "get")
            main.ratio = main.p50Nanoseconds / max(1, rows[rows.count - 1].p50Nanoseconds)
            main.meanRatio = fromMainActor.median / max(1, fromTask.median)
            main.baseline = "task"
            rows.append(main)
            try? FileManager.default.removeItem(at: folder)
        }
        return rows
    }

    @MainActor
    private static func measureOnMainActor(
        _ store: any OfflineStore, _ keys: [String], _ order: [Int], _ gets: Int, _ stopwatch: Stopwatch
    ) async throws -> Sample {
        try await stopwatch.measure(calls: gets) { _, call in _ = try await store.get(keys[order[call]]) }
    }
}
