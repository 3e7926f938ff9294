import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaWorkloads

/// `sovaria-bench eviction-curve`: the query cache on each store, fed one request stream at
/// several bounds below its working set: the hit ratio per bound (a miss-ratio curve, the same on
/// every engine) and what eviction costs each engine.
struct EvictionCurveCommand {
    static let usage = """
        usage: sovaria-bench eviction-curve [--store URL]... [options]
          The stream (default: YCSB's zipfian over --keys keys, --requests reads):
          --trace FILE      a trace instead (Sovaria's or libCacheSim's; each request for a key asks the
                            cache for it, a miss fetches a body of the request's size). A damaged trace (a
                            record cut short) stops the command, naming its byte offset. Objects
                            larger than 4 MiB (a point's largest body) are stored as 4 MiB: the working set
                            and the bounds count the stored bytes, and the report says how many requests
                            were capped (that curve is the capped trace's, not libCacheSim's on the trace)
        \(TraceSource.flags)
          --workload W      a … f or a workload file: its run phase's keys as the requests
          --distribution D  zipfian (default), scrambledzipfian, uniform, latest or hotspot
          --keys N          distinct keys (default 10000)   --requests N   requests (default 20000)
          --value-size N    each answer's bytes, or MIN-MAX (default 200-8000, fixed per key)
          --seed N          the stream's seed (default 1)
          The cache:
          --bounds LIST     bounds in percent of the working set (default 1,2,5,10,20,50,100); the hits
                            must be the same on every store (the curve is the policy's): when they are not,
                            the command prints the tables and exits with status 2
          --store URL       a store for the cache, repeatable; its location is the base of one fresh
                            store per bound (default: memory, file, sqlite, lmdb, leveldb in --dir)
          --durability D    flushed (default) or synced, for the default stores
          --json FILE, --markdown FILE, --svg FILE (the curve), --dir FOLDER
        """

    var source: TraceSource?
    var traceOptions = TraceSource(path: "")
    var workload: WorkloadSpec?
    var properties: [String: String] = ["recordcount": "10000", "operationcount": "20000"]
    var valueBytes = 200...8_000
    var seed: UInt64 = 1
    var boundPercents: [Double] = [1, 2, 5, 10, 20, 50, 100]
    var storeTexts: [String] = []
    var durability = Durability.flushed
    var output = BenchOutput()
    var folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-curve-\(getpid())")
    /// Opens the store of one point. A test hands in its own stores here (one that answers wrongly
    /// makes the stores' hits differ).
    var openStore: @Sendable (StoreURL) async throws -> any OfflineStore = {
        try await OfflineStores.open($0, using: WorkloadStore.schemes)
    }

    static func parse(_ arguments: [String]) throws -> EvictionCurveCommand {
        var command = EvictionCurveCommand()
        var arguments = BenchArguments(arguments, usage: usage)
        while let argument = arguments.next() {
            switch argument {
            case "--trace": command.traceOptions.path = try arguments.value(argument)
            case "--workload":
                let name = try arguments.value(argument)
                if let core = WorkloadSpec.core(named: name) {
                    command.workload = core
                } else {
                    guard let data = FileManager.default.contents(atPath: name) else {
                        throw BenchError.usage("--workload \(name): neither a … f nor a readable workload file\n")
                    }
                    command.workload = try Self.spec(
                        WorkloadSpec.parse(workloadFile: String(decoding: data, as: UTF8.self), name: "custom"))
                }
            case "--distribution": command.properties["requestdistribution"] = try arguments.value(argument)
            case "--keys": command.properties["recordcount"] = "\(try arguments.count(argument))"
            case "--requests": command.properties["operationcount"] = "\(try arguments.count(argument))"
            case "--value-size":
                let text = try arguments.value(argument)
                let bounds = text.split(separator: "-").compactMap { Int($0) }
                guard (1...2).contains(bounds.count), bounds.count == text.split(separator: "-").count,
                    bounds[0] > 0, bounds.last! >= bounds[0]
                else { throw BenchError.usage("--value-size takes BYTES or MIN-MAX, not \(text)\n") }
                command.valueBytes = bounds[0]...bounds.last!
            case "--seed": command.seed = UInt64(try arguments.count(argument))
            case "--bounds":
                let text = try arguments.value(argument)
                let percents = text.split(separator: ",").compactMap { Double($0) }
                guard !percents.isEmpty, percents.count == text.split(separator: ",").count,
                    percents.allSatisfy({ $0 > 0 })
                else { throw BenchError.usage("--bounds takes percents such as 5,10,50, not \(text)\n") }
                command.boundPercents = percents.sorted()
            case "--store": command.storeTexts.append(try arguments.value(argument))
            case "--durability": command.durability = try arguments.durability(argument)
            case "--dir": command.folder = URL(fileURLWithPath: try arguments.value(argument), isDirectory: true)
            default:
                if try command.output.parse(argument, &arguments) || command.traceOptions.parse(argument, &arguments) {
                    continue
                }
                throw BenchError.usage("unknown option \(argument)\n\(usage)")
            }
        }
        if !command.traceOptions.path.isEmpty { command.source = command.traceOptions }
        return command
    }

    private static func spec(_ make: @autoclosure () throws(WorkloadSpecError) -> WorkloadSpec) throws -> WorkloadSpec {
        do {
            return try make()
        } catch {
            throw BenchError.usage("\(error)\n")
        }
    }

    /// The request stream, made anew for each point (the same requests every time).
    func requests(_ failure: TraceFailure = TraceFailure()) throws -> CacheRequestStream<AnySequence<TraceRecord>> {
        let sizes = CacheRequestStream<AnySequence<TraceRecord>>.hashedSize(in: valueBytes)
        if let source { return CacheRequestStream(AnySequence(try source.records(failure)), sizeOf: sizes) }
        let spec = try Self.spec((workload ?? WorkloadSpec.c).applying(properties))
        let stream = try spec.stream(seed: seed, timing: .closedLoop)
        return CacheRequestStream(AnySequence(stream.lazy.filter(Self.isRun)), sizeOf: sizes)
    }

    /// Whether a record belongs to the run phase (the load phase's inserts are not requests).
    private static func isRun(_ record: TraceRecord) -> Bool {
        if case .insert = record.operation { return false }
        if case .phase = record.operation { return false }
        return true
    }

    func run() async throws {
        let progress = Progress()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        progress.update("eviction-curve: measuring the working set")
        // The bounds are percents of what the points store: a body over the cap is stored capped.
        var seen: Set<String> = []
        var cappedKeys: Set<String> = []
        var workingSet = 0
        var requestCount = 0
        var cappedRequests = 0
        let failure = TraceFailure()
        for request in try requests(failure) {
            requestCount += 1
            if request.bytes > EvictionCurve.maxBodyBytes {
                cappedRequests += 1
                cappedKeys.insert(request.key)
            }
            if seen.insert(request.key).inserted { workingSet += EvictionCurve.storedBytes(request.bytes) }
        }
        try failure.check(source?.path ?? "the stream")
        let bounds = boundPercents.map { max(4_096, Int(Double(workingSet) * $0 / 100)) }
        let stores = try WorkloadStore.selected(storeTexts, durability: durability, postgres: nil)
        var curve = EvictionCurveReport(
            machine: Machine.describe(options: BenchOptions()), requests: requestCount, keys: seen.count,
            workingSetBytes: workingSet, cappedRequests: cappedRequests, cappedKeys: cappedKeys.count, points: [])
        for store in stores {
            progress.update("eviction-curve: \(store.label), eviction off")
            let off = try await point(store, boundBytes: nil, run: "off")
            for (index, bound) in bounds.enumerated() {
                progress.update("eviction-curve: \(store.label), bound \(boundPercents[index])% (\(bound) B)")
                let on = try await point(store, boundBytes: bound, run: "b\(index)")
                curve.points.append(
                    EvictionCurveReport.Point(
                        store: store.label, boundPercent: boundPercents[index], point: on, unbounded: off))
            }
        }
        progress.finish()
        print(curve.table(markdown: false).joined(separator: "\n"))
        if let path = output.jsonPath {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(curve).write(to: URL(fileURLWithPath: path))
        }
        if let path = output.markdownPath {
            try curve.table(markdown: true).joined(separator: "\n").write(
                toFile: path, atomically: true, encoding: .utf8)
        }
        if let path = output.svgPath { try curve.svg().write(toFile: path, atomically: true, encoding: .utf8) }
        // The one check that the curve is the policy's: after the figures, so they can be looked at.
        guard curve.isEngineIndependent else { throw BenchError.hitsDiffer(boundPercents: curve.boundsWhereHitsDiffer) }
    }

    private func point(_ store: WorkloadStore, boundBytes: Int?, run: String) async throws -> EvictionCurvePoint {
        let url = store.url(forRun: "curve-\(run)", in: folder, freshForUser: true)
        let openStore = openStore
        let curve = EvictionCurve { try await openStore(url) }
        let point = try await curve.point(try requests(), boundBytes: boundBytes)
        if url.engine != "memory", url.engine != "postgres" {
            for suffix in WorkloadStore.sqliteFileSuffixes {
                try? FileManager.default.removeItem(atPath: url.location + suffix)
            }
        }
        return point
    }
}
