import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import sovaria_bench

/// `sovaria-bench workload`, `replay` and `eviction-curve` run as a user runs them (issue 36): on
/// store URLs, with the C library on the same trace when it is built, writing every format, and
/// `--help` naming every flag.
@Suite struct WorkloadCommandTests {
    /// Runs `sovaria-bench` with `arguments` on a thread of its own; its standard output and status.
    static func bench(_ arguments: [String]) async throws -> (output: String, status: Int32) {
        let (output, _, status) = try await benchWithErrors(arguments)
        return (output, status)
    }

    /// Runs `sovaria-bench` with `arguments` on a thread of its own; its standard output, its
    /// standard error and its status.
    static func benchWithErrors(_ arguments: [String]) async throws -> (output: String, errors: String, status: Int32) {
        let errorFile = FileManager.default.temporaryDirectory.appendingPathComponent("bench-\(UUID().uuidString).err")
        defer { try? FileManager.default.removeItem(at: errorFile) }
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(
                    with: Result {
                        let process = try ChildProcess(
                            BenchSmokeTests.executable.path, arguments, captureOutput: true, errorFile: errorFile.path)
                        let output = String(decoding: process.output?.readDataToEndOfFile() ?? Data(), as: UTF8.self)
                        let status = process.waitBlocking()
                        let errors = (try? String(contentsOf: errorFile, encoding: .utf8)) ?? ""
                        return (output, errors, ChildProcess.succeeded(status) ? 0 : status)
                    })
            }.start()
        }
    }

    /// The C trace replayer `make test` builds (`make c-baseline`) before the tests run, in the
    /// library's `.build` (this file is Benchmarks/Tests/SovariaBenchTests/ under it).
    static func cReplay() throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let path = root.appendingPathComponent(".build/sovaria-c-replay").path
        try #require(
            FileManager.default.isExecutableFile(atPath: path),
            "\(path) is missing: `make test` builds it with `make c-baseline` (a C compiler and the -dev packages)")
        return path
    }

    @Test func workloadsRunOnStoreURLsAndRankThem() async throws {
        let folder = try TemporaryFolder()
        let (output, status) = try await Self.bench([
            "workload", "a", "e", "--c-replay", try Self.cReplay(), "--records", "200", "--operations", "300",
            "--store", "memory:",
            "--store", "sqlite:\(folder.url.path)/w.sqlite?durability=flushed", "--store",
            "lmdb:\(folder.url.path)/lmdb",
            "--rank-by", "p99", "--dir", folder.child("work").path, "--json", folder.child("w.json").path,
            "--markdown", folder.child("w.md").path, "--svg", folder.child("w.svg").path,
        ])
        #expect(status == 0, "\(output)")
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: folder.child("w.json")))
        for workload in ["A", "E"] {
            for (subject, durability) in [("memory", "synced"), ("sqlite", "flushed"), ("lmdb", "synced")] {
                let run = report.measurements.filter {
                    $0.subject == subject && $0.variant == "\(workload) run \(durability)"
                }
                #expect(
                    run.contains { $0.operation == "all operations" && $0.opsPerSecond > 0 }, "\(workload) \(subject)")
                #expect(
                    run.allSatisfy { ($0.p95Nanoseconds ?? 0) > 0 && ($0.p999Nanoseconds ?? 0) >= $0.p50Nanoseconds })
                #expect(
                    report.measurements.contains {
                        $0.subject == subject && $0.variant == "\(workload) load \(durability)"
                    })
            }
            #expect(output.contains("Workload \(workload), "), "a ranking per workload")
        }
        let scans = report.measurements.filter { $0.variant.hasPrefix("E run") && $0.operation == "scan" }
        #expect(scans.count >= 3)
        #expect(report.measurements.contains { $0.subject == "sqlite" && ($0.diskBytes ?? 0) > 0 })
        #expect(report.machine["command"]?.contains("workload a e") == true)
        // The plain SQLite and LMDB stores have C rows on the same trace, and their rows a ratio.
        #expect(report.measurements.contains { $0.subject == "C sqlite" && $0.variant == "A run flushed" })
        #expect(report.measurements.contains { $0.subject == "lmdb" && $0.cRatio != nil })
        let markdown = try String(contentsOf: folder.child("w.md"), encoding: .utf8)
        #expect(markdown.contains("ranked by p99"))
        #expect(try String(contentsOf: folder.child("w.svg"), encoding: .utf8).hasPrefix("<svg"))
    }

    @Test func aRecordedTraceReplaysOnEveryStoreNamed() async throws {
        let folder = try TemporaryFolder()
        let trace = folder.child("app.sovtrace")
        let recorder = RecordingOfflineStore(wrapping: MemoryOfflineStore(), traceFile: trace)
        for index in 0..<50 { try await recorder.set("sov:cache:\(index)", "value \(index)") }
        for index in 0..<50 { _ = try await recorder.get("sov:cache:\(index * 2)") }
        recorder.stopRecording()
        let (output, status) = try await Self.bench([
            "replay", trace.path, "--store", "memory:", "--store", "leveldb:\(folder.url.path)/ldb",
            "--dir", folder.child("work").path, "--json", folder.child("r.json").path,
        ])
        #expect(status == 0, "\(output)")
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: folder.child("r.json")))
        for subject in ["memory", "leveldb"] {
            #expect(report.measurements.contains { $0.subject == subject && $0.operation == "update" })
            #expect(report.measurements.contains { $0.subject == subject && $0.operation == "read" })
        }
    }

    @Test(arguments: [("bytes", "reads withValue, scans withEntries"), ("strings", "reads get, scans entries")])
    func aReplayReadsWithTheAPIItIsGivenAndSaysWhichOne(api: String, calls: String) async throws {
        let folder = try TemporaryFolder()
        let trace = folder.child("app.sovtrace")
        let recorder = RecordingOfflineStore(wrapping: MemoryOfflineStore(), traceFile: trace)
        for index in 0..<20 { try await recorder.set("sov:cache:\(index)", "value \(index)") }
        for index in 0..<20 { _ = try await recorder.get("sov:cache:\(index)") }
        _ = try await recorder.entries("sov:cache:", after: nil, limit: 5)
        recorder.stopRecording()
        let (output, status) = try await Self.bench([
            "replay", trace.path, "--store", "memory:", "--read-api", api, "--dir", folder.child("work").path,
            "--json", folder.child("r.json").path,
        ])
        #expect(status == 0, "\(output)")
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: folder.child("r.json")))
        #expect(report.machine["reads"]?.hasPrefix(calls) == true, "\(report.machine)")
        let read = report.measurements.first { $0.subject == "memory" && $0.operation == "read" }
        #expect(read?.note?.contains("misses") != true, "every read of a stored key hits: \(String(describing: read))")
        let (_, errors, badStatus) = try await Self.benchWithErrors(["replay", trace.path, "--read-api", "views"])
        #expect(badStatus != 0 && errors.contains("--read-api takes bytes or strings, not views"), "\(errors)")
    }

    @Test func aLibCacheSimCSVTraceDrawsOneCurveForEveryStore() async throws {
        let folder = try TemporaryFolder()
        var lines = ["time,id,size"]
        var random = SplitMix(seed: 5)
        for second in 0..<600 {
            let id = Int(random.next() % 100) * Int(random.next() % 3 == 0 ? 1 : 0) + Int(random.next() % 10)
            lines.append("\(second),\(id),\(300 + id * 7)")
        }
        try lines.joined(separator: "\n").write(to: folder.child("t.csv"), atomically: true, encoding: .utf8)
        let (output, status) = try await Self.bench([
            "eviction-curve", "--trace", folder.child("t.csv").path,
            "--csv", "time-col=1,obj-id-col=2,obj-size-col=3,has-header=true", "--bounds", "10,50",
            "--store", "memory:", "--store", "sqlite:\(folder.url.path)/c.sqlite", "--dir", folder.child("work").path,
            "--svg", folder.child("c.svg").path,
        ])
        #expect(status == 0, "\(output)")
        #expect(output.contains("Every store had the same hits at every bound."), "\(output)")
        #expect(try String(contentsOf: folder.child("c.svg"), encoding: .utf8).contains("polyline"))
    }

    /// A trace that breaks part of the way stops the command with its error: never a run on the
    /// requests before the damage, reported as if it were the whole trace.
    @Test func aDamagedTraceStopsTheCommandWithItsError() async throws {
        let folder = try TemporaryFolder()
        try "time,id,size\n1,1,100\n2,2,100\n3,x,100\n4,3,100\n".write(
            to: folder.child("bad.csv"), atomically: true, encoding: .utf8)
        for command in ["eviction-curve", "replay"] {
            let arguments =
                command == "replay"
                ? ["replay", folder.child("bad.csv").path]
                : ["eviction-curve", "--trace", folder.child("bad.csv").path]
            let (output, status) = try await Self.bench(
                arguments + [
                    "--csv", "time-col=1,obj-id-col=2,obj-size-col=3,has-header=true", "--store", "memory:", "--dir",
                    folder.child("work-\(command)").path,
                ])
            #expect(status != 0, "\(command) ran on a damaged trace: \(output)")
        }
    }

    /// libCacheSim's oracleGeneral records (24 bytes, little-endian: time, id, size, next access)
    /// for `(time, id, size)`.
    static func oracleGeneral(_ requests: [(UInt32, UInt64, UInt32)]) -> Data {
        var bytes: [UInt8] = []
        func little<T: FixedWidthInteger>(_ value: T) {
            for shift in stride(from: 0, to: T.bitWidth, by: 8) {
                bytes.append(UInt8(truncatingIfNeeded: value >> shift))
            }
        }
        for (time, id, size) in requests {
            little(time)
            little(id)
            little(size)
            little(Int64(-1))
        }
        return Data(bytes)
    }

    /// An oracleGeneral trace whose last record is cut short (plain, and compressed with zstd)
    /// stops both commands with an error naming the byte where the cut record starts.
    @Test(arguments: ["plain", "zst"])
    func aTruncatedOracleGeneralTraceStopsBothCommandsNamingTheOffset(form: String) async throws {
        let folder = try TemporaryFolder()
        let requests = (0..<40).map { (UInt32(100 + $0), UInt64($0 % 7), UInt32(500)) }
        let plain = folder.child("cut.oracleGeneral")
        try (Self.oracleGeneral(requests) + Data(repeating: 1, count: 13)).write(to: plain)
        var trace = plain.path
        if form == "zst" {
            let zstd = Process()
            zstd.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            zstd.arguments = ["zstd", "-q", plain.path, "-o", plain.path + ".zst"]
            try zstd.run()
            zstd.waitUntilExit()
            try #require(zstd.terminationStatus == 0, "zstd must be installed: apt-get install zstd")
            trace += ".zst"
        }
        let offset = requests.count * 24
        for command in ["eviction-curve", "replay"] {
            let arguments = command == "replay" ? ["replay", trace] : ["eviction-curve", "--trace", trace]
            let (output, errors, status) = try await Self.benchWithErrors(
                arguments + ["--store", "memory:", "--dir", folder.child("work-\(command)").path])
            #expect(status != 0, "\(command) ran on a truncated trace: \(output)")
            #expect(errors.contains("byte \(offset)"), "\(command): \(errors)")
        }
    }

    /// A trace with objects larger than a point's largest body (4 MiB) stores them capped: the
    /// working set and the bounds count what is stored, and the report says how many requests were
    /// capped, so the curve is never read as the uncapped trace's.
    @Test func objectsOverTheBodyCapAreCountedAsStoredAndFlagged() async throws {
        let folder = try TemporaryFolder()
        let cap = 4 << 20
        var lines: [String] = []
        for second in 0..<40 {
            let id = second % 8
            lines.append("\(second),\(id),\(id < 2 ? cap + 3_000_000 : 1_000 + id)")
        }
        try lines.joined(separator: "\n").write(to: folder.child("big.csv"), atomically: true, encoding: .utf8)
        let (output, status) = try await Self.bench([
            "eviction-curve", "--trace", folder.child("big.csv").path, "--csv",
            "time-col=1,obj-id-col=2,obj-size-col=3",
            "--bounds", "50", "--store", "memory:", "--dir", folder.child("work").path, "--json",
            folder.child("c.json").path,
        ])
        #expect(status == 0, "\(output)")
        struct Curve: Decodable {
            struct Point: Decodable { let boundBytes: Int }
            let workingSetBytes: Int
            let cappedRequests: Int
            let cappedKeys: Int
            let points: [Point]
        }
        let curve = try JSONDecoder().decode(Curve.self, from: Data(contentsOf: folder.child("c.json")))
        let stored = 2 * cap + (2..<8).reduce(0) { $0 + 1_000 + $1 }
        #expect(curve.workingSetBytes == stored)
        #expect(curve.points.map(\.boundBytes) == [stored / 2])
        #expect(curve.cappedRequests == 10 && curve.cappedKeys == 2)
        #expect(output.contains("10 requests for 2 objects larger than 4 MiB"), "\(output)")
        let (help, _) = try await Self.bench(["eviction-curve", "--help"])
        #expect(help.contains("larger than 4 MiB"), "\(help)")
    }

    /// After the per-workload rankings, one answer across the workloads that ran: the store to
    /// pick for this mix by the metric asked, with its durability, under a title naming the
    /// workloads; and a warning where a percentile rests on too few operations.
    @Test func workloadRunsCloseWithARecommendationAndWarnAboutFewOperations() async throws {
        let folder = try TemporaryFolder()
        let (output, status) = try await Self.bench([
            "workload", "a", "c", "--records", "100", "--operations", "60", "--store", "memory:", "--store",
            "sqlite:\(folder.url.path)/w.sqlite?durability=flushed", "--store",
            "lmdb:\(folder.url.path)/lmdb?durability=flushed", "--rank-by", "p99", "--c-replay", "/nonexistent",
            "--dir", folder.child("work").path, "--markdown", folder.child("w.md").path,
        ])
        #expect(status == 0, "\(output)")
        #expect(output.contains("## Workloads A, C: "), "the section is titled by the workloads that ran")
        #expect(output.contains("Which engine for workloads A, C"), "\(output)")
        let recommendation = output.split(separator: "\n").first {
            $0.hasPrefix("Recommended for A + C, flushed writes, by p99: ")
        }
        #expect(
            recommendation.map { $0.contains("sqlite") || $0.contains("lmdb") } == true,
            "a persistent store recommended: \(output)")
        #expect(recommendation?.contains("memory") == false, "memory keeps nothing: never the recommendation")
        #expect(output.contains("The memory store keeps nothing across launches"), "\(output)")
        #expect(output.contains("p99 rests on fewer than 100 operations"), "\(output)")
        #expect(output.contains("A run flushed: all operations 60"), "\(output)")
        let markdown = try String(contentsOf: folder.child("w.md"), encoding: .utf8)
        #expect(markdown.contains("## Which engine for workloads A, C"))
        #expect(markdown.contains("Recommended for A + C, flushed writes, by p99: "))
    }

    @Test(arguments: [
        (
            "workload",
            [
                "--store", "--durability", "--records", "--operations", "--duration", "--value-size",
                "--distribution", "--mix", "--set", "--tasks", "--read-api", "--target", "--seed", "--rank-by",
                "--c-replay",
                "--keep-traces", "--json", "--markdown", "--svg", "--dir", "--postgres", "--no-postgres",
            ]
        ),
        (
            "replay",
            [
                "--format", "--csv", "--limit", "--store", "--durability", "--open-loop", "--tasks", "--read-api",
                "--rank-by", "--c-replay", "--json", "--markdown", "--svg", "--dir",
            ]
        ),
        (
            "eviction-curve",
            [
                "--trace", "--format", "--csv", "--limit", "--workload", "--distribution", "--keys",
                "--requests", "--value-size", "--seed", "--bounds", "--store", "--durability", "--json", "--markdown",
                "--svg", "--dir",
            ]
        ),
    ])
    func helpNamesEveryFlag(command: String, flags: [String]) async throws {
        let (output, status) = try await Self.bench([command, "--help"])
        #expect(status == 0)
        for flag in flags { #expect(output.contains(flag), "\(command) --help does not name \(flag)") }
        let (bad, badStatus) = try await Self.bench([command, "--no-such-flag"])
        #expect(badStatus != 0, "\(bad)")
    }
}
