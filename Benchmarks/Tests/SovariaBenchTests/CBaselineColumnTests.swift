import Foundation
import SovariaTestServers
import Testing

@testable import sovaria_bench

/// The store section's C column (issue 15): `sovaria-bench --c-baseline PROGRAM` runs the program
/// next to each engine and prints every adapter's ratio against it before the ratio against the
/// Swift raw baseline; without the program it says so and goes on. Times are never asserted: a
/// fake program prints fixed times, and the ratios must be the row's own p50 over them.
@Suite struct CBaselineColumnTests {
    /// The p50 every line of the fake program reports, in nanoseconds.
    static let fakeP50 = 1_000.0

    /// A stand-in for sovaria_c_baseline: for the engine and durability it is asked for, one line
    /// per operation with fixed times and no fingerprint (so the workload is not checked); for
    /// `sodium`, the decrypt line.
    static let fakeProgram = """
        #!/bin/sh
        engine=""; variant=""; count=0
        while [ $# -gt 1 ]; do
            case "$1" in --engine) engine=$2 ;; --durability) variant=$2 ;; --count) count=$2 ;; esac
            shift 2
        done
        if [ "$engine" = sodium ]; then
            set -- "decrypt (XChaCha20-Poly1305, 1024 B)"
        else
            set -- "set (batch of 1000)" "get (random hit)" "get (miss)" "keys(prefix) of 100" \\
                "entries page of 1000, per entry" "set (single)" "delete (batch of 1000)"
        fi
        for operation in "$@"; do
            printf '{"engine":"%s","variant":"%s","count":%s,"operation":"%s","opsPerSecond":1000000,' \\
                "$engine" "$variant" "$count" "$operation"
            printf '"nanosecondsPerOp":1000,"p50Nanoseconds":1000,"p99Nanoseconds":2000,"maxNanoseconds":3000,'
            printf '"spreadPercent":0,"repeats":1}\\n'
        done
        """

    @Test func printsEachAdaptersRatioAgainstTheCProgramNextToTheSwiftBaseline() async throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let program = folder.appendingPathComponent("fake-c-baseline").path
        // Close-on-exec: a child another test spawns meanwhile must not keep the script open for
        // writing, or running it fails with ETXTBSY.
        let descriptor = open(program, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        try #require(descriptor >= 0)
        let script = Array(Self.fakeProgram.utf8)
        let written = write(descriptor, script, script.count)
        close(descriptor)
        try #require(written == script.count)

        let (table, report) = try await Self.runBench(
            ["--engine", "sqlite", "--engine", "encrypted(sqlite)", "--c-baseline", program], in: folder)

        #expect(table.contains("vs C (p50)"))
        #expect(table.contains("C sqlite") && table.contains("raw sqlite"))
        let get = try #require(
            report.measurements.first { $0.subject == "sqlite" && $0.operation == "get (random hit)" })
        #expect(get.cBaseline == "C sqlite")
        #expect(get.cRatio == get.p50Nanoseconds / Self.fakeP50)
        // The Swift raw baseline stays, as the second column.
        #expect(get.baseline == "raw sqlite" && get.ratio != nil)
        let rawGet = report.measurements.first { $0.subject == "raw sqlite" && $0.operation == "get (random hit)" }
        #expect(rawGet?.cRatio == rawGet.map { $0.p50Nanoseconds / Self.fakeP50 })
        let cRows = report.measurements.filter { $0.subject == "C sqlite" }
        #expect(Set(cRows.map(\.variant)) == ["synced", "flushed"])
        #expect(cRows.allSatisfy { $0.note?.contains("not checked") == true })
        // An encrypted get against C's get plus one C decrypt.
        let encrypted = report.measurements.first {
            $0.subject == "encrypted(sqlite)" && $0.variant == "flushed" && $0.operation == "get (random hit)"
        }
        #expect(encrypted?.cBaseline == "C sqlite get + decrypt")
        #expect(encrypted?.cRatio == encrypted.map { $0.p50Nanoseconds / (2 * Self.fakeP50) })
        // Every row of every adapter the C program covers has its C ratio, but the gets timed in
        // turns with the raw Swift call, which are held against that call alone.
        let sqliteRows = report.measurements.filter { $0.subject == "sqlite" }
        let interleaved = sqliteRows.filter { $0.operation.contains("interleaved with raw") }
        #expect(interleaved.count == 4 && interleaved.allSatisfy { $0.cRatio == nil && $0.ratio != nil })
        #expect(sqliteRows.filter { !$0.operation.contains("interleaved with raw") }.allSatisfy { $0.cRatio != nil })
    }

    @Test func saysTheCProgramIsMissingAndGoesOn() async throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let missing = folder.appendingPathComponent("no-such-program").path

        let (table, report) = try await Self.runBench(["--engine", "lmdb", "--c-baseline", missing], in: folder)

        #expect(table.contains("C baseline \(missing) is missing"))
        #expect(!table.contains("vs C (p50)"))
        #expect(report.measurements.contains { $0.subject == "lmdb" && $0.ratio != nil })
        #expect(report.measurements.allSatisfy { $0.cRatio == nil && !$0.subject.hasPrefix("C ") })
    }

    /// The real program, built with the system C compiler as `make bench` builds it: it must rebuild
    /// the bench's workload bit for bit (the bench checks its fingerprint and drops the C rows of
    /// another workload, saying so).
    @Test func theCProgramRunsTheBenchsWorkload() async throws {
        let folder = try Self.makeFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let program = folder.appendingPathComponent("sovaria-c-baseline").path
        let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("c-baseline/sovaria_c_baseline.c").path
        _ = try await PostgresCluster.onThread {
            try ChildProcess.run(
                "/usr/bin/env",
                [
                    "cc", "-O2", "-std=c11", "-I/usr/include/postgresql", "-o", program, source, "-lsqlite3", "-llmdb",
                    "-lsodium", "-lleveldb", "-lpq", "-lm",
                ])
        }

        let (table, report) = try await Self.runBench(
            ["--engine", "lmdb", "--engine", "file", "--engine", "postgres", "--c-baseline", program], in: folder)

        #expect(!table.contains("another workload"))
        for engine in ["lmdb", "file", "postgres"] {
            let rows = report.measurements.filter { $0.subject == "C \(engine)" }
            #expect(rows.count == 14, "\(engine): 7 operations in 2 durabilities")
            #expect(rows.allSatisfy { $0.note == nil || $0.note?.hasSuffix("keys") == true })
            // Every row has its C ratio but the gets timed in turns with the raw Swift call.
            #expect(
                report.measurements.filter { $0.subject == engine && !$0.operation.contains("interleaved with raw") }
                    .allSatisfy { $0.cRatio != nil })
        }
    }

    // MARK: - Running the bench

    private static func makeFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-cbase-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Runs a small store section of `sovaria-bench` with `arguments`; its table and JSON report.
    private static func runBench(_ arguments: [String], in folder: URL) async throws -> (String, Report) {
        let json = folder.appendingPathComponent("bench.json").path
        let all =
            ["--quick", "--count", "300", "--repeats", "1", "--section", "store", "--json", json]
            + ["--dir", folder.appendingPathComponent("stores").path] + arguments
        // Blocks until the bench ends: on a thread of its own, not a cooperative one.
        let table = try await PostgresCluster.onThread {
            try ChildProcess.run(BenchSmokeTests.executable.path, all)
        }
        return (table, try JSONDecoder().decode(Report.self, from: Data(contentsOf: URL(fileURLWithPath: json))))
    }
}
