import Foundation
import Sovaria
import SovariaWorkloads

/// The workload section of `make bench`: YCSB A–F, short, on every selected engine with
/// `.flushed` writes, and the C library on the same streams (`sovaria-bench workload` is the
/// full tool).
struct WorkloadSection {
    let options: BenchOptions
    let progress: Progress

    func run() async throws -> [Measurement] {
        let (records, operations) = options.pick(quick: (300, 300), standard: (2_000, 4_000), full: (20_000, 40_000))
        let workloads = try WorkloadSpec.core.map { core in
            var spec = try core.applying([
                "recordcount": "\(records)", "operationcount": "\(operations)",
                "keyprefix": "sov:ycsb:\(core.name.lowercased()):user",
            ])
            spec.name = core.name
            return spec
        }
        var stores = WorkloadStore.localEngines.filter { options.runs(engine: $0) }.map {
            WorkloadStore(url: StoreURL(engine: $0, durability: .flushed), isOwn: true)
        }
        if options.runs(engine: "postgres"), let conninfo = try? BenchPostgres.conninfo() {
            stores.append(
                WorkloadStore(url: StoreURL(engine: "postgres", location: conninfo, durability: .flushed), isOwn: true))
        }
        return try await WorkloadCommand.measure(
            workloads, stores: stores, seed: 1, tasks: 1, targetRate: nil, duration: nil, cReplay: nil,
            folder: options.folder.appendingPathComponent("workload", isDirectory: true), keepTraces: false,
            progress: progress, cBaseline: options.cBaselinePath)
    }
}
