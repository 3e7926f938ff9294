import Foundation
import Sovaria
import SovariaWorkloads

/// `sovaria-bench workload`: YCSB's core workloads (or your own mix) on any stores, the C library
/// on the same operation stream, and the stores ranked by what you care about.
struct WorkloadCommand {
    static let usage = """
        usage: sovaria-bench workload [WORKLOAD]... [--store URL]... [options]
          WORKLOAD          a … f: YCSB's core workloads (default: all six), or a workload file in
                            YCSB's properties format (readproportion=0.9, requestdistribution=latest, …)
          --store URL       a store to run on, repeatable (a store URL: sqlite:/tmp/x.sqlite?durability=flushed);
                            default: memory, file, sqlite, lmdb, leveldb and postgres (a throwaway
                            cluster), each fresh for every workload in --dir
          --durability D    synced (default) or flushed, for the default stores
          --records N       records loaded before the run (default 10000)
          --operations N    operations in the run phase (default 10000)
          --duration SECS   end the run phase after SECS seconds (without --operations: runs until then,
                            streamed, with no trace file and no C replay)
          --value-size N    bytes per value (default YCSB's 10 fields × 100 = 1000), or MIN-MAX (uniform)
          --distribution D  zipfian, scrambledzipfian, unscrambledzipfian, uniform, latest or hotspot (default:
                            the workload's)
          --mix LIST        your own operation mix, e.g. read=0.8,update=0.1,insert=0.1 (also scan,
                            readmodifywrite): a custom workload named "custom"
          --set KEY=VALUE   any YCSB property (recordcount, maxscanlength, insertorder, …), repeatable
          --tasks N         concurrent tasks calling the store (default 1; the C replay runs with 1 only)
          --read-api API    bytes (default): reads with withValue, scans with withEntries, the bytes copied
                            into one buffer as the C replay does; strings: get and entries, a String each
          --target OPS      open loop: issue OPS operations per second, latency counted from when each was
                            due (queueing included); default closed loop, as fast as the store goes
          --seed N          the operation stream's seed (default 1): the same stream on every store
          --rank-by M       p99, throughput (default) or disk: the order of the closing table
          --c-replay PATH   the C replayer (default: sovaria-c-replay beside --c-baseline, or
                            .build/sovaria-c-replay; `make c-baseline` builds it)
          --keep-traces     keep the trace files (in --dir/traces) to replay them later
          --json FILE, --markdown FILE, --svg FILE   write the results
          --dir FOLDER      where stores and traces are made (default: a temporary folder, removed after)
          --postgres CONNINFO   the PostgreSQL server for the default postgres store; --no-postgres: none
        """

    var workloads: [WorkloadSpec] = []
    var storeTexts: [String] = []
    var durability = Durability.synced
    var properties: [String: String] = [:]
    var seed: UInt64 = 1
    var tasks = 1
    var readAPI = WorkloadDriver.ReadAPI.bytes
    var targetRate: Double?
    var duration: Duration?
    var rankBy = WorkloadReport.Metric.throughput
    var cReplayPath: String?
    var keepTraces = false
    var output = BenchOutput()
    var folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-workload-\(getpid())")
    var postgres = PostgresChoice.throwaway

    /// The PostgreSQL server of the default stores.
    enum PostgresChoice {
        case throwaway, given(String), none
    }

    static func parse(_ arguments: [String]) throws -> WorkloadCommand {
        var command = WorkloadCommand()
        var arguments = BenchArguments(arguments, usage: usage)
        var names: [String] = []
        var mix: String?
        while let argument = arguments.next() {
            switch argument {
            case "--store": command.storeTexts.append(try arguments.value(argument))
            case "--durability": command.durability = try arguments.durability(argument)
            case "--records": command.properties["recordcount"] = "\(try arguments.count(argument))"
            case "--operations": command.properties["operationcount"] = "\(try arguments.count(argument))"
            case "--duration": command.duration = .seconds(try arguments.count(argument))
            case "--value-size":
                let text = try arguments.value(argument)
                let bounds = text.split(separator: "-").map { Int($0) }
                switch bounds.count {
                case 1 where bounds[0] != nil:
                    command.properties["fieldcount"] = "1"
                    command.properties["fieldlength"] = text
                case 2 where bounds[0] != nil && bounds[1] != nil:
                    command.properties["minvaluebytes"] = String(bounds[0]!)
                    command.properties["maxvaluebytes"] = String(bounds[1]!)
                default: throw BenchError.usage("--value-size takes BYTES or MIN-MAX, not \(text)")
                }
            case "--distribution": command.properties["requestdistribution"] = try arguments.value(argument)
            case "--mix": mix = try arguments.value(argument)
            case "--set":
                let pair = try arguments.value(argument).split(separator: "=", maxSplits: 1).map(String.init)
                guard pair.count == 2 else { throw BenchError.usage("--set takes KEY=VALUE") }
                command.properties[pair[0]] = pair[1]
            case "--tasks": command.tasks = try arguments.count(argument)
            case "--read-api": command.readAPI = try arguments.readAPI(argument)
            case "--target": command.targetRate = Double(try arguments.count(argument))
            case "--seed": command.seed = UInt64(try arguments.count(argument))
            case "--rank-by":
                let name = try arguments.value(argument)
                guard let metric = WorkloadReport.Metric(rawValue: name) else {
                    throw BenchError.usage("--rank-by takes p99, throughput or disk, not \(name)")
                }
                command.rankBy = metric
            case "--c-replay": command.cReplayPath = try arguments.value(argument)
            case "--keep-traces": command.keepTraces = true
            case "--dir": command.folder = URL(fileURLWithPath: try arguments.value(argument), isDirectory: true)
            case "--postgres": command.postgres = .given(try arguments.value(argument))
            case "--no-postgres": command.postgres = .none
            default:
                if try command.output.parse(argument, &arguments) { continue }
                guard !argument.hasPrefix("-") else { throw BenchError.usage("unknown option \(argument)\n") }
                names.append(argument)
            }
        }
        if command.duration != nil, command.properties["operationcount"] == nil {
            command.properties["operationcount"] = "0"
        }
        command.properties["recordcount"] = command.properties["recordcount"] ?? "10000"
        command.properties["operationcount"] = command.properties["operationcount"] ?? "10000"
        var bases: [WorkloadSpec] = []
        if let mix {
            // Only the shares the flag names: YCSB's default read share of 0.95 would stay otherwise.
            var properties = Dictionary(
                uniqueKeysWithValues: ["read", "update", "insert", "scan", "readmodifywrite"].map {
                    ($0 + "proportion", "0")
                })
            for pair in mix.split(separator: ",") {
                let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { throw BenchError.usage("--mix takes NAME=SHARE,…, not \(pair)") }
                properties[parts[0].lowercased() + "proportion"] = parts[1]
            }
            var custom = try Self.spec(WorkloadSpec().applying(properties))
            custom.name = "custom"
            bases.append(custom)
        }
        for name in names {
            if let core = WorkloadSpec.core(named: name) {
                bases.append(core)
            } else {
                guard let text = FileManager.default.contents(atPath: name).map({ String(decoding: $0, as: UTF8.self) })
                else {
                    throw BenchError.usage("\(name) is neither a core workload (a … f) nor a readable workload file\n")
                }
                let label = URL(fileURLWithPath: name).deletingPathExtension().lastPathComponent
                bases.append(try Self.spec(WorkloadSpec.parse(workloadFile: text, name: label)))
            }
        }
        if bases.isEmpty { bases = WorkloadSpec.core }
        command.workloads = try bases.map { base in
            var properties = command.properties
            // Each workload's keys under their own prefix, so runs on one store never meet.
            if properties["keyprefix"] == nil { properties["keyprefix"] = "sov:ycsb:\(base.name.lowercased()):user" }
            var spec = try Self.spec(base.applying(properties))
            spec.name = base.name
            return spec
        }
        return command
    }

    private static func spec(_ make: @autoclosure () throws(WorkloadSpecError) -> WorkloadSpec) throws -> WorkloadSpec {
        do {
            return try make()
        } catch {
            throw BenchError.usage("\(error)\n")
        }
    }

    func run() async throws {
        let progress = Progress()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder.appendingPathComponent("stores")) }
        var conninfo: String?
        if storeTexts.isEmpty || storeTexts.contains(where: { $0.contains("postgres:") }) {
            switch postgres {
            case .none: break
            case .given(let given): conninfo = given
            case .throwaway:
                if storeTexts.isEmpty {
                    var options = BenchOptions()
                    options.engines = ["postgres"]
                    try await BenchPostgres.start(options)
                    conninfo = try BenchPostgres.conninfo()
                }
            }
        }
        let rows: [Measurement]
        do {
            let stores = try WorkloadStore.selected(storeTexts, durability: durability, postgres: conninfo)
            rows = try await Self.measure(
                workloads, stores: stores, seed: seed, tasks: tasks, targetRate: targetRate, duration: duration,
                cReplay: cReplayPath, folder: folder, keepTraces: keepTraces, progress: progress, readAPI: readAPI)
        } catch {
            // The throwaway cluster is stopped before the error ends the process.
            await BenchPostgres.stop()
            throw error
        }
        progress.finish()
        await BenchPostgres.stop()
        var report = Report(machine: Machine.describe(options: BenchOptions()), measurements: rows)
        report.machine["workload"] = workloads.map(\.summary).joined(separator: "; ")
        report.machine["reads"] = readAPI.calls
        report.computeRatios()
        let rankings = WorkloadReport.rankings(report.measurements, by: rankBy, markdown: false)
        print(report.table())
        print(rankings.joined(separator: "\n"))
        try output.write(
            report, extraMarkdown: WorkloadReport.rankings(report.measurements, by: rankBy, markdown: true))
    }

    /// Every workload on every store (and the C library), each from one trace file written once.
    static func measure(
        _ workloads: [WorkloadSpec], stores: [WorkloadStore], seed: UInt64, tasks: Int, targetRate: Double?,
        duration: Duration?, cReplay cReplayPath: String?, folder: URL, keepTraces: Bool, progress: Progress,
        cBaseline: String? = nil, readAPI: WorkloadDriver.ReadAPI = .bytes
    ) async throws -> [Measurement] {
        let cReplay: CReplay?
        switch CReplay.locate(cReplayPath, cBaseline: cBaseline) {
        case .success(let found): cReplay = found
        case .failure(let why):
            cReplay = nil
            if stores.contains(where: { $0.cEngine != nil }) { FileHandle.standardError.write(Data("\(why)\n".utf8)) }
        }
        let traces = folder.appendingPathComponent("traces", isDirectory: true)
        try FileManager.default.createDirectory(at: traces, withIntermediateDirectories: true)
        defer { if !keepTraces { try? FileManager.default.removeItem(at: traces) } }
        let timing = targetRate.map { WorkloadTiming.openLoop(operationsPerSecond: $0) } ?? .closedLoop
        let runner = WorkloadRunner(
            stores: stores,
            driverOptions: WorkloadDriver.Options(
                concurrency: tasks, mode: targetRate == nil ? .closedLoop : .openLoop, maxRunDuration: duration,
                readAPI: readAPI),
            cReplay: cReplay, folder: folder.appendingPathComponent("stores", isDirectory: true), progress: progress)
        var rows: [Measurement] = []
        for spec in workloads {
            let stream = try spec.stream(seed: seed, timing: timing)
            guard stream.recordCount != nil else {
                rows += try await runner.run(stream: stream, name: spec.name, keyPrefix: spec.keys.prefix)
                continue
            }
            let trace = traces.appendingPathComponent("\(spec.name).sovtrace").path
            progress.update("workload \(spec.name): writing its trace")
            try TraceFiles.write(stream, to: trace)
            rows += try await runner.run(trace: trace, name: spec.name, keyPrefix: spec.keys.prefix)
            progress.update("workload \(spec.name): the driver alone and the recorder")
            rows += try await DriverCost.rows(trace: trace, name: spec.name, folder: traces, readAPI: readAPI)
        }
        return rows
    }
}

extension WorkloadSpec {
    /// The stream of this workload from `seed`, or a usage error.
    func stream(seed: UInt64, timing: WorkloadTiming) throws -> WorkloadStream {
        do {
            return try WorkloadStream(spec: self, seed: seed, timing: timing)
        } catch {
            throw BenchError.usage("\(error)\n")
        }
    }

    /// `A: 10000 records, 10000 operations, read 0.5 update 0.5, zipfian, 1000 B values`.
    var summary: String {
        let shares = zip(["read", "update", "insert", "scan", "read-modify-write"], mix.sharesInYCSBOrder)
            .filter { $0.1 > 0 }.map { "\($0.0) \($0.1)" }.joined(separator: " ")
        let operations = operationCount.map { "\($0) operations" } ?? "operations until the deadline"
        return "\(name): \(recordCount) records, \(operations), \(shares), \(requestDistribution.propertyValue), "
            + valueSizeSummary
    }

    private var valueSizeSummary: String {
        switch valueSize {
        case .fixed(let bytes): "values of \(bytes) B"
        case .uniform(let min, let max): "values of \(min)–\(max) B"
        }
    }
}
