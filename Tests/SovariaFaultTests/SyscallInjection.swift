import Foundation
import Sovaria
import SovariaTestServers
import Testing

@testable import sovaria_crash_writer

/// How many trials a fault test runs: the long run of `make reliability`
/// (`SOVARIA_RELIABILITY=full`), or the short one of `make test`.
enum FaultTrials {
    /// Whether the long run was asked for.
    static let isFull = ProcessInfo.processInfo.environment["SOVARIA_RELIABILITY"] == "full"

    /// `full` in the long run, `short` otherwise.
    static func count(short: Int, full: Int) -> Int { isFull ? full : short }
}

/// One run of the crash writer's I/O-error mode (``IOErrorWorkload``) under
/// `strace -f -e inject=SYSCALL:error=EIO:when=N`: the `N`th call of `SYSCALL` in the child (and
/// its threads) fails with EIO, every other call runs as usual.
struct SyscallInjection: Sendable {
    /// The system call that fails, as strace names it (`fsync`, `pwrite64`, …).
    let syscall: String
    /// Which call of it fails, from 1; `nil` runs the child without a failure.
    let failingCall: Int?

    /// What the child printed and how it ended.
    struct Outcome: Sendable {
        var sets: Set<Int> = []
        var batches: Set<Int> = []
        /// `(call, code)` of each call that threw an ``OfflineStoreError``, in order; the call is
        /// `open`, `set N` or `batch N`.
        var failures: [(call: String, code: String)] = []
        /// The types of errors that were not ``OfflineStoreError``.
        var untyped: [String] = []
        var finished = false
        var status: Int32 = 0
        var errorOutput = ""
    }

    /// The strace binary, checked by the tests before they run.
    static let strace = "/usr/bin/strace"

    /// Runs the workload on `engine` at `folder` and waits for it, on a thread of its own.
    func run(engine: String, folder: URL) async throws -> Outcome {
        var arguments = ["-f", "-o", "/dev/null", "-e", "trace=\(syscall)"]
        if let failingCall { arguments += ["-e", "inject=\(syscall):error=EIO:when=\(failingCall)"] }
        arguments += [Self.writer.path, IOErrorWorkload.enginePrefix + engine, folder.path, "synced", "0"]
        var environment = ["SWIFT_BACKTRACE": "enable=no"]
        if syscall == "writev" { environment["SOVARIA_ACK_WITH_WRITE"] = "1" }
        let (child, variables) = (arguments, environment)
        return try await PostgresCluster.onThread { try Self.runBlocking(child, environment: variables) }
    }

    /// How many calls of `syscall` the workload makes on `engine` when nothing fails (strace's
    /// count, `-c`): the range the failing call is picked from.
    static func callCount(of syscall: String, engine: String, folder: URL) async throws -> Int {
        let summary = folder.deletingLastPathComponent().appendingPathComponent("strace-\(syscall).txt").path
        let arguments = [
            "-f", "-c", "-o", summary, "-e", "trace=\(syscall)", writer.path, IOErrorWorkload.enginePrefix + engine,
            folder.path, "synced", "0",
        ]
        // Acknowledged as in the injected runs, so the count holds the store's calls only.
        let environment = ["SWIFT_BACKTRACE": "enable=no", "SOVARIA_ACK_WITH_WRITE": syscall == "writev" ? "1" : "0"]
        let outcome = try await PostgresCluster.onThread { try runBlocking(arguments, environment: environment) }
        try #require(outcome.finished && outcome.failures.isEmpty, "the counting run failed: \(outcome.errorOutput)")
        // "% time  seconds  usecs/call  calls  errors  syscall": the calls column of the named row.
        let text = try String(contentsOfFile: summary, encoding: .utf8)
        for line in text.split(separator: "\n") {
            let columns = line.split(separator: " ")
            if columns.last.map(String.init) == syscall, columns.count >= 5, let calls = Int(columns[3]) {
                return calls
            }
        }
        return 0
    }

    /// The crash writer, built beside this test bundle.
    private static var writer: URL {
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("sovaria-crash-writer")
    }

    /// Runs strace with `arguments` to its end and parses the workload's lines; blocks.
    private static func runBlocking(_ arguments: [String], environment: [String: String]) throws -> Outcome {
        let errorFile = NSTemporaryDirectory() + "sovaria-inject-\(UUID().uuidString).err"
        defer { try? FileManager.default.removeItem(atPath: errorFile) }
        let child = try ChildProcess(
            strace, arguments, environment: environment, captureOutput: true, errorFile: errorFile)
        let output = child.output?.readDataToEndOfFile() ?? Data()
        var outcome = Outcome()
        outcome.status = child.waitBlocking()
        outcome.errorOutput = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
        for line in String(decoding: output, as: UTF8.self).split(separator: "\n") {
            let parts = line.split(separator: " ").map(String.init)
            switch (parts.first, parts.count) {
            case ("set", 2): outcome.sets.insert(Int(parts[1]) ?? -1)
            case ("batch", 2): outcome.batches.insert(Int(parts[1]) ?? -1)
            case ("failed", 4): outcome.failures.append((parts[1] + " " + parts[2], parts[3]))
            case ("open-failed", 2): outcome.failures.append(("open", parts[1]))
            case ("untyped", _): outcome.untyped.append(parts.dropFirst().joined(separator: " "))
            case ("done", _): outcome.finished = true
            default: break
            }
        }
        return outcome
    }
}

/// Checks a store against what the crash workload acknowledged.
enum AcknowledgedWrites {
    /// Every acknowledged set and batch is in `store`, whole; every entry of the workload that is
    /// there (acknowledged or not) is whole, and no batch is half applied.
    static func verify(_ store: any OfflineStore, sets: Set<Int>, batches: Set<Int>, _ trial: String) async throws {
        for index in sets {
            let value = try await store.get(CrashWorkload.singleKey(index))
            #expect(value == CrashWorkload.value(index), "\(trial): acknowledged set \(index) lost or torn")
        }
        for index in batches {
            let (a, b) = CrashWorkload.batchKeys(index)
            let expected = CrashWorkload.value(index + 1_000_000)
            let values = (try await store.get(a), try await store.get(b))
            #expect(values == (expected, expected), "\(trial): acknowledged batch \(index) lost or torn")
        }
        for entry in try await store.entries("sov:crash:n:", after: nil, limit: .max) {
            let index = Int(entry.key.dropFirst("sov:crash:n:".count)) ?? -1
            #expect(entry.value == CrashWorkload.value(index), "\(trial): \(entry.key) is torn")
        }
        var halves: [Int: Int] = [:]
        for entry in try await store.entries("sov:crash:b:", after: nil, limit: .max) {
            let index = Int(entry.key.dropFirst("sov:crash:b:".count).prefix(9)) ?? -1
            #expect(entry.value == CrashWorkload.value(index + 1_000_000), "\(trial): \(entry.key) is torn")
            halves[index, default: 0] += 1
        }
        for (index, count) in halves { #expect(count == 2, "\(trial): batch \(index) is half applied") }
    }
}
