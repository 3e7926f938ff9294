import Foundation
import Sovaria
import SovariaWorkloads

/// `sovaria-bench replay TRACE`: an app's recorded calls (or a public cache trace) on any stores,
/// with the same report as a workload.
struct ReplayCommand {
    static let usage = """
        usage: sovaria-bench replay TRACE [--store URL]... [options]
          TRACE             a trace: one RecordingOfflineStore wrote (.sovtrace), or libCacheSim's
                            oracleGeneral or csv (each request a read, written on a miss: a cache)
        \(TraceSource.flags)
          --store URL       a store to replay on, repeatable (default: memory, file, sqlite, lmdb, leveldb,
                            each fresh in --dir); replaying on a store of yours changes it: use a copy
          --durability D    synced (default) or flushed, for the default stores
          --open-loop       keep the recorded timing: each call runs when it was made, latency counted from
                            then (queueing included: the honest figure); default closed loop, as fast as
                            the store goes
          --tasks N         concurrent tasks (default 1; the C replay runs with 1 only)
          --read-api API    bytes (default): reads with withValue, scans with withEntries, the bytes copied
                            into one buffer as the C replay does; strings: get and entries, a String each
          --rank-by M       p99, throughput (default) or disk
          --c-replay PATH   the C replayer (default .build/sovaria-c-replay)
          --json FILE, --markdown FILE, --svg FILE, --dir FOLDER
        """

    var source = TraceSource(path: "")
    var storeTexts: [String] = []
    var durability = Durability.synced
    var openLoop = false
    var tasks = 1
    var readAPI = WorkloadDriver.ReadAPI.bytes
    var rankBy = WorkloadReport.Metric.throughput
    var cReplayPath: String?
    var output = BenchOutput()
    var folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-replay-\(getpid())")

    static func parse(_ arguments: [String]) throws -> ReplayCommand {
        var command = ReplayCommand()
        var arguments = BenchArguments(arguments, usage: usage)
        var paths: [String] = []
        while let argument = arguments.next() {
            switch argument {
            case "--store": command.storeTexts.append(try arguments.value(argument))
            case "--durability": command.durability = try arguments.durability(argument)
            case "--open-loop": command.openLoop = true
            case "--tasks": command.tasks = try arguments.count(argument)
            case "--read-api": command.readAPI = try arguments.readAPI(argument)
            case "--rank-by":
                let name = try arguments.value(argument)
                guard let metric = WorkloadReport.Metric(rawValue: name) else {
                    throw BenchError.usage("--rank-by takes p99, throughput or disk, not \(name)\n\(usage)")
                }
                command.rankBy = metric
            case "--c-replay": command.cReplayPath = try arguments.value(argument)
            case "--dir": command.folder = URL(fileURLWithPath: try arguments.value(argument), isDirectory: true)
            default:
                if try command.output.parse(argument, &arguments) || command.source.parse(argument, &arguments) {
                    continue
                }
                guard !argument.hasPrefix("-") else { throw BenchError.usage("unknown option \(argument)\n\(usage)") }
                paths.append(argument)
            }
        }
        guard paths.count == 1 else { throw BenchError.usage("replay takes one trace file\n\(usage)") }
        command.source.path = paths[0]
        return command
    }

    func run() async throws {
        let progress = Progress()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        progress.update("replay: reading \(source.path)")
        let trace = try source.sovariaTrace(in: folder)
        let runner = WorkloadRunner(
            stores: try WorkloadStore.selected(storeTexts, durability: durability, postgres: nil),
            driverOptions: WorkloadDriver.Options(
                concurrency: tasks, mode: openLoop ? .openLoop : .closedLoop, readAPI: readAPI),
            cReplay: try? CReplay.locate(cReplayPath, cBaseline: nil).get(),
            folder: folder.appendingPathComponent("stores", isDirectory: true), progress: progress)
        let rows = try await runner.run(trace: trace, name: source.name, keyPrefix: nil)
        progress.finish()
        var report = Report(machine: Machine.describe(options: BenchOptions()), measurements: rows)
        report.machine["workload"] = "trace \(source.path)" + (source.limit.map { ", first \($0) records" } ?? "")
        report.machine["reads"] = readAPI.calls
        report.computeRatios()
        print(report.table())
        print(WorkloadReport.rankings(report.measurements, by: rankBy, markdown: false).joined(separator: "\n"))
        try output.write(
            report, extraMarkdown: WorkloadReport.rankings(report.measurements, by: rankBy, markdown: true))
    }
}
