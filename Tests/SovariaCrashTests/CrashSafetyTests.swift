import Foundation
import Sovaria
import SovariaTestEngines
import Testing

@testable import sovaria_crash_writer

/// kill -9 at random moments loses no acknowledged write and never leaves half a batch.
///
/// A child process (`sovaria-crash-writer`) writes numbered entries and two-key batches and
/// prints an acknowledgement after each call returns; the test kills it with SIGKILL after a
/// random number of acknowledgements (so at a random point of a later call), reopens the store
/// and checks every acknowledged write, over several rounds on the same store.
@Suite(.serialized) struct CrashSafetyTests {
    static let rounds = 12

    @Test(arguments: TestEngine.onDisk)
    func acknowledgedWritesSurviveKill9(engine: String) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var generator = SystemRandomNumberGenerator()
        var acknowledged = Acknowledged()
        for round in 0..<Self.rounds {
            let durability = round.isMultiple(of: 2) ? "flushed" : "synced"
            let killAfter = Int.random(in: 1...300, using: &generator)
            // Every other pair of rounds, four writers at once: group commit joins their writes.
            let writers = round % 4 >= 2 ? "4" : "1"
            let acks = try await CrashChild.run(
                engine: engine, path: folder.path, durability: durability, first: round * 10_000_000,
                killAfterAcknowledgements: killAfter, environment: ["SOVARIA_CRASH_WRITERS": writers])
            acknowledged.formUnion(acks)
            #expect(acks.sets.count + acks.batches.count >= killAfter, "round \(round): child stopped early")
            try await verify(engine: engine, at: folder, acknowledged: acknowledged, round: round)
        }
    }

    /// Processes share one store: while one writes, others open the same folder, write and are
    /// killed, again and again. No process fails (a file store's open used to delete the temporary
    /// files of a process writing at that moment) and nothing any of them acknowledged is lost.
    // Not LevelDB: one process at a time holds it (`aSecondProcessOnALevelDBStoreGetsLocked`).
    @Test(arguments: TestEngine.onDisk.filter { $0 != "leveldb" })
    func processesShareAStore(engine: String) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sovaria-two-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        async let writer = CrashChild.run(
            engine: engine, path: folder.path, durability: "flushed", first: 0, killAfterAcknowledgements: 1_500)
        var acknowledged = Acknowledged()
        for round in 1...6 {
            let visitor = try await CrashChild.run(
                engine: engine, path: folder.path, durability: "flushed", first: round * 10_000_000,
                killAfterAcknowledgements: 40)
            #expect(visitor.sets.count + visitor.batches.count >= 40, "visitor \(round) stopped early")
            acknowledged.formUnion(visitor)
        }
        let long = try await writer
        #expect(long.sets.count + long.batches.count >= 1_500, "the writer stopped early")
        acknowledged.formUnion(long)
        try await verify(engine: engine, at: folder, acknowledged: acknowledged, round: 0)
    }

    private func verify(engine: String, at folder: URL, acknowledged: Acknowledged, round: Int) async throws {
        let store = try await CrashStores.open(engine, at: folder, durability: .synced)
        try await Self.verify(store, acknowledged: acknowledged, round: round)
    }

    /// Every acknowledged write of the crash writer is in `store`, whole, and no batch is half applied.
    static func verify(_ store: any OfflineStore, acknowledged: Acknowledged, round: Int) async throws {
        for index in acknowledged.sets {
            let value = try await store.get(CrashWorkload.singleKey(index))
            #expect(value == CrashWorkload.value(index), "round \(round): acknowledged set \(index) lost or torn")
        }
        for index in acknowledged.batches {
            let (a, b) = CrashWorkload.batchKeys(index)
            let expected = CrashWorkload.value(index + 1_000_000)
            let values = (try await store.get(a), try await store.get(b))
            #expect(values == (expected, expected), "round \(round): acknowledged batch \(index) lost or torn")
        }
        // The write in flight at the kill may or may not be there, but never torn or half applied.
        for entry in try await store.entries("sov:crash:n:", after: nil, limit: .max) {
            let index = Int(entry.key.dropFirst("sov:crash:n:".count)) ?? -1
            #expect(entry.value == CrashWorkload.value(index), "round \(round): \(entry.key) is torn")
        }
        var batchHalves: [Int: Int] = [:]
        for entry in try await store.entries("sov:crash:b:", after: nil, limit: .max) {
            let index = Int(entry.key.dropFirst("sov:crash:b:".count).prefix(9)) ?? -1
            #expect(entry.value == CrashWorkload.value(index + 1_000_000), "round \(round): \(entry.key) is torn")
            batchHalves[index, default: 0] += 1
        }
        for (index, halves) in batchHalves {
            #expect(halves == 2, "round \(round): batch \(index) is half applied")
        }
        try await CrashIntegrity.check(store)
    }
}

/// The indexes whose calls the child acknowledged.
struct Acknowledged: Sendable {
    var sets: Set<Int> = []
    var batches: Set<Int> = []
    /// The queue mode's lines, in order: announcements (`enqueuing`, `removing`) and
    /// acknowledgements (`queued` with its sequence, `removed`).
    var queue: [QueueEvent] = []
    /// How the child ended when it ended on its own after an interrupt (see ``CrashChild``), not by SIGKILL.
    var exitMessage: String?

    /// Calls acknowledged.
    var count: Int {
        sets.count + batches.count
            + queue.filter { ["queued", "sent", "removed", "downloaded", "evicted", "pulled"].contains($0.kind) }.count
    }

    mutating func formUnion(_ other: Acknowledged) {
        sets.formUnion(other.sets)
        batches.formUnion(other.batches)
        queue += other.queue
    }
}

/// One line of the crash writer's queue mode.
struct QueueEvent: Sendable {
    let kind: String
    let index: Int
    let sequence: UInt64?
}
