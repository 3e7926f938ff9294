import Foundation
import Sovaria

/// `sovaria-bench`: measures every engine on this machine, in one run, against the raw C API
/// of the same engines. See `--help`.
@main
enum SovariaBench {
    static func main() async {
        do {
            let arguments = Array(CommandLine.arguments.dropFirst())
            let rest = Array(arguments.dropFirst())
            switch arguments.first {
            case "workload":
                let command = try WorkloadCommand.parse(rest)
                try await Task.detached { try await command.run() }.value
            case "replay":
                let command = try ReplayCommand.parse(rest)
                try await Task.detached { try await command.run() }.value
            case "eviction-curve":
                let command = try EvictionCurveCommand.parse(rest)
                try await Task.detached { try await command.run() }.value
            default:
                let options = try BenchOptions.parse(arguments)
                // Off the main actor: the store section measures the calls of a plain task; the
                // caller section compares that with the main actor explicitly.
                do {
                    try await Task.detached { try await run(options) }.value
                } catch {
                    await BenchPostgres.stop()  // a failed section leaves no server running
                    throw error
                }
            }
        } catch let error as BenchError {
            if case .help(let usage) = error {
                print(usage)
                exit(0)
            }
            FileHandle.standardError.write(Data("\(error)\n".utf8))
            exit(2)
        } catch {
            FileHandle.standardError.write(Data("sovaria-bench failed: \(error)\n".utf8))
            exit(1)
        }
    }

    static func run(_ options: BenchOptions) async throws {
        let progress = Progress()
        let workload = Workload(count: options.keyCount, valueBytes: options.valueBytes)
        let stopwatch = Stopwatch(repeats: options.repeats)
        try FileManager.default.createDirectory(at: options.folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: options.folder) }
        var report = Report(machine: Machine.describe(options: options), measurements: [])
        if BenchPostgres.isNeeded(options) { try await BenchPostgres.start(options) }

        if options.runs(.store) {
            report.measurements += try await StoreSection(
                options: options, workload: workload, stopwatch: stopwatch, progress: progress
            ).run()
        }
        if options.runs(.eviction) {
            report.measurements += try await EvictionSection(options: options, progress: progress).run()
        }
        if options.runs(.cacheOpen) {
            report.measurements += try await CacheOpenSection(options: options, progress: progress).run()
        }
        if options.runs(.memoryCache) {
            report.measurements += try await MemoryCacheSection(options: options, progress: progress).run()
        }
        if options.runs(.caller) {
            report.measurements += try await CallerSection(options: options, workload: workload, progress: progress)
                .run()
        }
        if options.runs(.queue) {
            report.measurements += try await QueueSection(options: options, progress: progress).run()
        }
        if options.runs(.fileCache) {
            report.measurements += try await FileCacheSection(options: options, progress: progress).run()
        }
        if options.runs(.localFirst) {
            report.measurements += try await LocalFirstSection(options: options, progress: progress).run()
        }
        if options.runs(.writers) {
            report.measurements += try await WritersSection(options: options, progress: progress).run()
        }
        if options.runs(.objects) {
            report.measurements += try await ObjectsSection(options: options, progress: progress).run()
        }
        if options.runs(.workload) {
            report.measurements += try await WorkloadSection(options: options, progress: progress).run()
        }
        if options.runs(.bytes) {
            report.measurements += try await BytesSection(options: options, progress: progress).run()
        }
        if options.runs(.changeFeed) {
            report.measurements += try await ChangeFeedSection(options: options, progress: progress).run()
        }
        if options.runs(.feedWrites) {
            report.measurements += try await FeedWritesSection(options: options, progress: progress).run()
        }
        if options.runs(.standbys) {
            report.measurements += try await StandbysSection(options: options, progress: progress).run()
        }
        if options.runs(.accounts) {
            report.measurements += try await AccountsSection(options: options, workload: workload, progress: progress)
                .run()
        }
        progress.finish()
        await BenchPostgres.stop()
        report.computeRatios()

        print(report.table())
        if options.runs(.workload) {
            print(
                WorkloadReport.rankings(report.measurements, by: .throughput, markdown: false).joined(separator: "\n"))
        }
        if let path = options.jsonPath {
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
            try encoder.encode(report).write(to: URL(fileURLWithPath: path))
        }
        if let path = options.markdownPath {
            let rankings =
                options.runs(.workload)
                ? WorkloadReport.rankings(report.measurements, by: .throughput, markdown: true) : []
            try (report.markdown() + "\n" + rankings.joined(separator: "\n"))
                .write(toFile: path, atomically: true, encoding: .utf8)
        }
        if let path = options.svgPath {
            try SVGChart.render(report).write(toFile: path, atomically: true, encoding: .utf8)
        }
    }
}
