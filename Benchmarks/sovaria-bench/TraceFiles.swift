import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaWorkloads

/// Trace files the bench writes: a workload's stream, written once, replayed by every store and
/// by the C library.
enum TraceFiles {
    /// Writes `records` to a new trace file at `path`, streaming (never all of them in memory).
    static func write(_ records: some Sequence<TraceRecord>, to path: String) throws {
        do {
            let writer = try TraceWriter(path: path)
            for record in records { try writer.append(record) }
            try writer.close()
        } catch {
            throw BenchError.failed("cannot write the trace \(path): \(error)")
        }
    }
}

/// A trace to replay: Sovaria's own format, or one of libCacheSim's (`--format`, `--csv`), and how
/// much of it (`--limit`).
struct TraceSource {
    enum Format: String {
        case sovtrace
        case oracleGeneral = "oraclegeneral"
        case csv
    }

    var path: String
    var format: Format?
    /// libCacheSim's csv options (`obj-id-col=2,time-col=1,obj-size-col=3,has-header=true`).
    var csvOptions: String?
    /// Only the first `limit` records.
    var limit: Int?

    static let flags = """
          --format F        sovtrace (Sovaria's, what RecordingOfflineStore writes), oraclegeneral or csv
                            (libCacheSim's; a .zst file is read through zstd -dc); default: from the name
          --csv OPTIONS     for csv: libCacheSim's options, e.g. "time-col=1,obj-id-col=2,obj-size-col=3,has-header=true"
          --limit N         only the first N records (public traces are large)
        """

    /// Reads `argument` if it is one of the trace flags; `false` if it is not.
    mutating func parse(_ argument: String, _ arguments: inout BenchArguments) throws -> Bool {
        switch argument {
        case "--format":
            let name = try arguments.value(argument).lowercased()
            guard let format = Format(rawValue: name) else {
                throw BenchError.usage("--format takes sovtrace, oraclegeneral or csv, not \(name)\n")
            }
            self.format = format
        case "--csv": csvOptions = try arguments.value(argument)
        case "--limit": limit = try arguments.count(argument)
        default: return false
        }
        return true
    }

    /// The format named, or the one the file's name says (`….oracleGeneral.zst`, `….csv`).
    var resolvedFormat: Format {
        if let format { return format }
        let name = path.lowercased()
        if name.contains("oraclegeneral") { return .oracleGeneral }
        if name.hasSuffix(".csv") || name.hasSuffix(".csv.zst") || csvOptions != nil { return .csv }
        return .sovtrace
    }

    /// The name rows carry: the file's, without its extensions.
    var name: String {
        URL(fileURLWithPath: path).lastPathComponent.split(separator: ".").first.map(String.init) ?? "trace"
    }

    /// Sovaria's trace of this source: the file itself, or (a libCacheSim trace, or a limit) one
    /// written from it under `folder`, streaming, so every store and the C replayer read the same.
    func sovariaTrace(in folder: URL) throws -> String {
        if resolvedFormat == .sovtrace, limit == nil { return path }
        let converted = folder.appendingPathComponent("\(name).sovtrace").path
        let failure = TraceFailure()
        try TraceFiles.write(records(failure), to: converted)
        try failure.check(path)
        return converted
    }

    /// The records, streamed; an error that ends them goes to `failure` (check it after).
    func records(_ failure: TraceFailure) throws -> CheckedTrace {
        let reader: any TraceRecordSource
        do {
            switch resolvedFormat {
            case .sovtrace: reader = try TraceReader(path: path)
            case .oracleGeneral: reader = try LibCacheSimTraceReader(path: path, format: .oracleGeneral)
            case .csv:
                let options = try LibCacheSimCSVOptions(libCacheSimParameters: csvOptions ?? "obj-id-col=1")
                reader = try LibCacheSimTraceReader(path: path, format: .csv(options))
            }
        } catch {
            throw BenchError.failed("cannot read the trace \(path): \(error)")
        }
        return CheckedTrace(reader: reader, failure: failure, limit: limit)
    }
}
