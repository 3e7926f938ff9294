import Foundation
import Sovaria
import SovariaTestEngines
import SovariaTestServers
import Testing

@testable import sovaria_crash_writer

/// Two processes on one store at once (issue 16, item 5). SQLite, LMDB and the file store (whose
/// `.lock` file orders the writes of processes) share the store: two writers of disjoint keys,
/// both killed at random moments of their calls, round after round, lose nothing and leave no
/// half batch or journal. LevelDB refuses a second process with `.locked` at open.
///
/// ``CrashSafetyTests/processesShareAStore(engine:)`` has one long writer and visitors one after
/// another; here both writers start together and both die in a call.
@Suite struct SecondProcessTests {
    static let rounds = ProcessInfo.processInfo.environment["SOVARIA_RELIABILITY"] == "full" ? 20 : 2

    /// Two writers at once, both killed, round after round; then every acknowledged write is checked.
    // Not LevelDB: one process at a time holds it (`aSecondProcessOnALevelDBStoreGetsLocked`).
    @Test(arguments: TestEngine.onDisk.filter { $0 != "leveldb" })
    func twoWritersOfDisjointKeysBothKilledLoseNothing(engine: String) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-pair-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var acknowledged = Acknowledged()
        for round in 0..<Self.rounds {
            async let first = CrashChild.run(
                engine: engine, path: folder.path, durability: "flushed", first: (2 * round) * 10_000_000,
                killAfterAcknowledgements: Int.random(in: 20...200))
            async let second = CrashChild.run(
                engine: engine, path: folder.path, durability: "synced", first: (2 * round + 1) * 10_000_000,
                killAfterAcknowledgements: Int.random(in: 20...200))
            acknowledged.formUnion(try await first)
            acknowledged.formUnion(try await second)
            let store = try await CrashStores.open(engine, at: folder, durability: .synced)
            try await CrashSafetyTests.verify(store, acknowledged: acknowledged, round: round)
        }
        if engine == "file" {
            // Opening finished or rolled back every batch a kill interrupted.
            let names = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            #expect(!names.contains(".journal"), "a journal was left: \(names.filter { $0.hasPrefix(".") })")
        }
    }

    /// Issue 27: one process applies three-key batches (`x = y = z<i % 50> = i`) while this one
    /// pages through the store; every page shows whole batches only: `x == y`, and exactly the
    /// `z` keys and values that batches 1 … x made. SQLite is the reference (its readers see a
    /// snapshot); the file store's pages hold its folder's lock shared.
    @Test(arguments: [("file", "flushed"), ("file", "synced"), ("sqlite", "flushed")])
    func aReaderInAnotherProcessNeverSeesHalfABatch(engine: String, durability: String) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sovaria-batches-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await CrashStores.open(engine, at: folder, durability: .flushed)
        let batches = 2_000
        let writer = try ChildProcess(
            CrashChild.executable.path,
            [BatchWriterWorkload.enginePrefix + engine, folder.path, durability, "\(batches)"],
            environment: ["SWIFT_BACKTRACE": "enable=no"], captureOutput: false)
        var status: Int32 = 0
        var pages = 0
        var batchesSeen = Set<Int>()
        var problems: [String] = []
        // Pages until the writer has ended, then one more: its last batch is whole too.
        var ended = false
        while true {
            if !ended { ended = waitpid(writer.pid, &status, WNOHANG) == writer.pid }
            let page = try await store.entries("", after: nil, limit: 100)
            pages += 1
            if let problem = Self.halfBatch(in: page) {
                problems.append(problem)
                if problems.count >= 5 { break }
            }
            if let x = page.first(where: { $0.key == "x" }).flatMap({ Int($0.value) }) { batchesSeen.insert(x) }
            if ended { break }
        }
        if !ended { _ = waitpid(writer.pid, &status, 0) }
        #expect(ChildProcess.succeeded(status), "the writer ended with status \(status)")
        #expect(problems.isEmpty, "\(problems.count) pages of \(pages) showed half a batch: \(problems)")
        #expect(batchesSeen.contains(batches), "the last page shows the last batch")
        print("\(engine) (\(durability)): \(pages) pages saw \(batchesSeen.count) of \(batches) batches")
    }

    /// Issue 35: one process applies the same three-key batches while this one reads `get(first)`
    /// then `get(second)`, pair after pair. Values only grow, so the key read second is never older
    /// than the key read first, unless the first read saw part of a batch whose other half was not
    /// yet there. SQLite is the control (a get there is one transaction); the file store's `get`
    /// waits for a batch whose journal it finds. Each engine, durability and order is a case.
    ///
    /// The reader counts, not times: it reads until it has seen ``getPairsRead`` pairs with the
    /// writer at work and the writer ``getPairBatchesSpanned`` batches on, then stops the writer.
    @Test(arguments: [
        ("file", "flushed", "x"), ("file", "flushed", "y"), ("file", "synced", "x"), ("file", "synced", "y"),
        ("sqlite", "flushed", "x"), ("sqlite", "flushed", "y"), ("sqlite", "synced", "x"), ("sqlite", "synced", "y"),
    ])
    func getsInAnotherProcessNeverSeeHalfABatch(engine: String, durability: String, first: String) async throws {
        let second = first == "x" ? "y" : "x"
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sovaria-get-pairs-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = try await CrashStores.open(engine, at: folder, durability: .flushed)
        // More batches than the reader waits for: the writer is stopped once the reader is done.
        let writer = try ChildProcess(
            CrashChild.executable.path,
            [BatchWriterWorkload.enginePrefix + engine, folder.path, durability, "100000000"],
            environment: ["SWIFT_BACKTRACE": "enable=no"], captureOutput: false)
        var status: Int32 = 0
        var pairs = 0
        var firstBatchSeen: Int?
        var lastBatchSeen = 0
        var problems: [String] = []
        while pairs < Self.getPairsRead
            || lastBatchSeen - (firstBatchSeen ?? lastBatchSeen) < Self.getPairBatchesSpanned
        {
            guard waitpid(writer.pid, &status, WNOHANG) != writer.pid else {
                Issue.record("the writer ended early, with status \(status)")
                return
            }
            let earlier = try await store.get(first).flatMap { Int($0) } ?? 0
            let later = try await store.get(second).flatMap { Int($0) } ?? 0
            guard earlier > 0 else { continue }  // the writer has not written yet
            pairs += 1
            firstBatchSeen = firstBatchSeen ?? earlier
            lastBatchSeen = later
            if later < earlier {
                problems.append("get \(first)=\(earlier), then get \(second)=\(later)")
                if problems.count >= 5 { break }
            }
        }
        writer.send(SIGKILL)
        _ = try await writer.wait()
        #expect(problems.isEmpty, "\(problems.count) of \(pairs) get pairs went back: \(problems)")
        print(
            "\(engine) (\(durability), \(first) first): \(pairs) get pairs over batches \(firstBatchSeen ?? 0)…\(lastBatchSeen)"
        )
    }

    /// How many get pairs each case reads while the writer writes.
    static let getPairsRead = 3_000
    /// How many batches the writer must have applied while the pairs were read.
    static let getPairBatchesSpanned = 300

    /// What in `page` no whole number of batches explains, or `nil`.
    static func halfBatch(in page: [StoreEntry]) -> String? {
        let values = Dictionary(page.map { ($0.key, $0.value) }, uniquingKeysWith: { first, _ in first })
        guard let x = values["x"] else {
            return values.isEmpty ? nil : "no x, yet \(values.keys.sorted())"
        }
        guard let n = Int(x), values["y"] == x else { return "x = \(x), y = \(values["y"] ?? "missing")" }
        var expected: [String: String] = ["x": x, "y": x]
        for slot in 0..<50 {
            // The last batch up to n that wrote z<slot>: the largest i ≤ n with i % 50 == slot.
            let last = n - ((n - slot) % 50 + 50) % 50
            if last >= 1 { expected["z" + String(format: "%02d", slot)] = BatchWriterWorkload.value(last) }
        }
        guard values == expected else {
            let wrong = expected.keys.filter { values[$0] != expected[$0] }.sorted()
            let extra = values.keys.filter { expected[$0] == nil }.sorted()
            return "after batch \(n): wrong or missing \(wrong.prefix(3)), extra \(extra.prefix(3))"
        }
        return nil
    }

    /// While one process writes to a LevelDB store, a second process's open, and this process's,
    /// throw `.locked` naming the cause; once the writer is gone, the store opens with every write
    /// it acknowledged.
    @Test func aSecondProcessOnALevelDBStoreGetsLocked() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-lock-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let writer = try ChildProcess(
            CrashChild.executable.path, ["leveldb", folder.path, "synced", "0"],
            environment: ["SWIFT_BACKTRACE": "enable=no"], captureOutput: true)
        let output = try #require(writer.output)
        var lines = try await PostgresCluster.onThread { Self.readLines(output, until: { $0.hasPrefix("batch ") }) }
        #expect(lines.contains { $0.hasPrefix("batch ") }, "the writer wrote: \(lines)")

        let second = try await PostgresCluster.onThread {
            try ChildProcess.run(
                CrashChild.executable.path, [IOErrorWorkload.enginePrefix + "leveldb", folder.path, "synced", "0"],
                environment: ["SWIFT_BACKTRACE": "enable=no"])
        }
        #expect(second.split(separator: "\n").first == "open-failed locked", "the second process: \(second)")
        let error = try await #require(throws: OfflineStoreError.self) {
            try await CrashStores.open("leveldb", at: folder, durability: .synced)
        }
        #expect(error.code == .locked, "\(error)")
        #expect(error.message.contains("Another process"), "\(error)")

        writer.send(SIGKILL)
        lines += try await PostgresCluster.onThread { Self.readLines(output, until: { _ in false }) }
        #expect(ChildProcess.killed(try await writer.wait(), by: SIGKILL))
        var acknowledged = Acknowledged()
        for line in lines {
            let parts = line.split(separator: " ")
            guard parts.count == 2, let index = Int(parts[1]) else { continue }
            if parts[0] == "set" { acknowledged.sets.insert(index) }
            if parts[0] == "batch" { acknowledged.batches.insert(index) }
        }
        let store = try await CrashStores.open("leveldb", at: folder, durability: .synced)
        try await CrashSafetyTests.verify(store, acknowledged: acknowledged, round: 0)
    }

    /// Reads lines from `handle` until one satisfies `stop` or the output ends; blocks.
    private static func readLines(_ handle: FileHandle, until stop: (String) -> Bool) -> [String] {
        var lines: [String] = []
        var line = Data()
        while let byte = try? handle.read(upToCount: 1), let first = byte.first {
            guard first == UInt8(ascii: "\n") else {
                line.append(first)
                continue
            }
            lines.append(String(decoding: line, as: UTF8.self))
            line.removeAll()
            if stop(lines[lines.count - 1]) { break }
        }
        return lines
    }
}
