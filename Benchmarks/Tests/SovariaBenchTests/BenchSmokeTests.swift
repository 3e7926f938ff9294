import Foundation
import SovariaTestServers
import Testing

@testable import sovaria_bench

/// Runs `sovaria-bench --quick` (smaller still) so the benchmark cannot rot: every section must
/// produce rows, the raw and encrypted baselines must yield ratios, and every output file must
/// be written.
@Suite struct BenchSmokeTests {
    /// The `sovaria-bench` built beside this test binary.
    static var executable: URL {
        #if os(Linux)
            let folder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        #else
            // Apple platforms: the test bundle (`….xctest`) sits in the products folder.
            let bundle = Bundle.allBundles.first { $0.bundlePath.hasSuffix(".xctest") } ?? Bundle.main
            let folder = bundle.bundleURL.deletingLastPathComponent()
        #endif
        return folder.appendingPathComponent("sovaria-bench")
    }

    /// Runs the bench with `arguments`; returns its table and its exit status (0: success). The
    /// bench runs for tens of seconds: it is waited for on a thread of its own, not on one of the
    /// few cooperative threads every other test needs meanwhile.
    static func runBench(_ arguments: [String]) async throws -> (table: String, status: Int32) {
        try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        let process = try ChildProcess(Self.executable.path, arguments, captureOutput: true)
                        let table = String(decoding: process.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
                        let status = process.waitBlocking()
                        return (table, ChildProcess.succeeded(status) ? 0 : status)
                    })
            }.start()
        }
    }

    @Test func quickRunCoversEverySectionAndWritesEveryFormat() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let arguments = [
            "--quick", "--count", "300", "--repeats", "1", "--dir", folder.appendingPathComponent("stores").path,
            "--json", folder.appendingPathComponent("bench.json").path,
            "--markdown", folder.appendingPathComponent("bench.md").path,
            "--svg", folder.appendingPathComponent("bench.svg").path,
        ]
        let (table, status) = try await Self.runBench(arguments)
        #expect(status == 0)

        let report = try JSONDecoder().decode(
            Report.self, from: Data(contentsOf: folder.appendingPathComponent("bench.json")))
        let sections = Set(report.measurements.map(\.section))
        #expect(
            sections == [
                "store", "eviction", "cache-open", "memory-cache", "caller", "queue", "file-cache", "local-first",
                "concurrent-writers", "objects", "workload", "bytes", "change-feed", "feed-writes", "standbys",
                "accounts",
            ])
        // Issue 51's rows: 16 readers on the primary alone and by each read policy, each saying
        // where the reads went; the LSN check against a plain store on the standby; remote_apply.
        let standbys = report.measurements.filter { $0.section == "standbys" }
        for variant in [
            "16 readers, primary only", "16 readers, standbyIfCaughtUp, 2 standbys",
            "16 readers, anyStandby, 2 standbys",
        ] {
            #expect(
                standbys.contains { $0.variant == variant && $0.note?.contains("standby 2") == true }, "\(variant)")
        }
        #expect(standbys.contains { $0.operation.contains("LSN check") && $0.note?.contains("the LSN check") == true })
        #expect(standbys.contains { $0.operation.contains("remote_apply") && $0.note != nil })
        // Issue 59's row: reads/s before and after a failover, in one run.
        #expect(
            standbys.contains {
                $0.variant.hasSuffix("failover") && $0.note?.contains("reads/s before") == true
                    && $0.note?.contains("after") == true
            })
        // Issue 50's rows: borrowed pages against C's page, the adapter's get against the raw call
        // in blocks that take turns, the floor of keys(prefix), the index keys read both ways.
        let store = report.measurements.filter { $0.section == "store" }
        for engine in ["sqlite", "lmdb", "leveldb"] {
            #expect(store.contains { $0.subject == engine && $0.operation.hasPrefix("withEntries page of") })
            #expect(
                store.contains {
                    $0.subject == engine && $0.operation == "get, withValue, interleaved with raw" && $0.ratio != nil
                }, "\(engine): the interleaved get")
        }
        #expect(store.contains { $0.subject == "Swift" && $0.operation.hasPrefix("keys(prefix) of 100: its floor") })
        #expect(
            report.measurements.contains {
                $0.section == "cache-open" && $0.subject == "lmdb" && $0.operation == "index keys as bytes: withKeys"
            })
        let workloads = report.measurements.filter { $0.section == "workload" && $0.operation == "all operations" }
        for letter in ["A", "B", "C", "D", "E", "F"] {
            for subject in ["memory", "file", "sqlite", "lmdb", "leveldb"] {
                #expect(
                    workloads.contains { $0.subject == subject && $0.variant == "\(letter) run flushed" },
                    "workload \(letter) on \(subject)")
            }
        }
        let writers = report.measurements.filter { $0.section == "concurrent-writers" }
        #expect(writers.contains { $0.subject == "sqlite" && $0.variant.contains("16 writers") && $0.note != nil })
        let localFirst = report.measurements.filter { $0.section == "local-first" }
        #expect(
            localFirst.contains {
                $0.operation == "read (repeated)" && $0.variant.contains("100 pending") && $0.ratio != nil
            })
        #expect(localFirst.contains { $0.operation.hasPrefix("observe") })
        for rows in ["1,000 rows", "10,000 rows"] {
            for operation in ["parse (the overlay's parser)", "parse (JSONSerialization)", "SQLite SELECT of the rows"]
            {
                #expect(
                    localFirst.contains { $0.variant == rows && $0.operation.hasPrefix(operation) },
                    "\(rows): \(operation)")
            }
            #expect(
                localFirst.contains {
                    $0.variant == "\(rows), 100 pending" && $0.operation == "first answer after a write"
                        && $0.note?.contains("a session holds per row") == true
                }, "\(rows): the first answer after a write, and the bytes a session holds")
        }
        #expect(AccountsSectionTests.missingRows(report) == [], "accounts")
        let bytes = report.measurements.filter { $0.section == "bytes" }
        for subject in ["memory", "file", "sqlite", "lmdb", "leveldb", "encrypted(sqlite)"] {
            #expect(
                bytes.contains {
                    $0.subject == subject && $0.variant == "64 KiB" && $0.operation == "get()" && $0.ratio != nil
                },
                "bytes: \(subject)")
        }
        #expect(report.measurements.allSatisfy { $0.nanosecondsPerOp > 0 })
        #expect(report.machine["cores"] != nil && report.machine["engines"]?.contains("SQLite") == true)
        let subjects = Set(report.measurements.filter { $0.section == "store" }.map(\.subject))
        #expect(subjects.isSuperset(of: ["memory", "file", "sqlite", "leveldb", "raw sqlite", "raw leveldb"]))
        #expect(subjects.contains("encrypted(sqlite)"))
        let ratios = report.measurements.filter { $0.ratio != nil }.map(\.subject)
        #expect(ratios.contains("sqlite") && ratios.contains("encrypted(sqlite)"))
        let queueRows = report.measurements.filter { $0.section == "queue" }
        #expect(Set(queueRows.map(\.operation)).contains("enqueue"))
        #expect(queueRows.contains { $0.operation == "pending() of 1000" && $0.subject == "leveldb" })
        #expect(queueRows.contains { $0.subject == "encrypted(sqlite)" && $0.variant == "synced" && $0.ratio != nil })
        #expect(table.contains("Store operations") && table.contains("ratio"))
        let markdown = try String(contentsOf: folder.appendingPathComponent("bench.md"), encoding: .utf8)
        #expect(markdown.contains("| subject | variant | operation |"))
        let svg = try String(contentsOf: folder.appendingPathComponent("bench.svg"), encoding: .utf8)
        #expect(svg.hasPrefix("<svg") && svg.contains("time per operation"))
    }
}
