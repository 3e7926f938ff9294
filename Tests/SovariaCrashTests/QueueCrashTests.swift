import Foundation
import Sovaria
import SovariaQueue
import SovariaTestEngines
import Testing

@testable import sovaria_crash_writer

/// kill -9 at random moments of enqueues and removals loses no acknowledged enqueue, brings
/// back no acknowledged removal, duplicates nothing, and sequences keep growing.
///
/// The crash writer's queue mode (``QueueCrashWorkload``) announces each call and acknowledges
/// it when it returns; the test kills it inside a random call, reopens the queue and compares
/// it with what was acknowledged, allowing only the one call in flight to have happened or not.
@Suite(.serialized) struct QueueCrashTests {
    static let rounds = 10

    @Test(arguments: TestEngine.onDisk)
    func acknowledgedEnqueuesSurviveKill9InOrderAndOnce(engine: String) async throws {
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("sovaria-queue-crash-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        var verified: [Int] = []  // the queue's numbers after the last round, oldest first
        var highestSequence: UInt64 = 0
        for round in 0..<Self.rounds {
            let killAfter = Int.random(in: 1...250)
            let acks = try await CrashChild.run(
                engine: QueueCrashWorkload.enginePrefix + engine, path: folder.path,
                durability: round.isMultiple(of: 2) ? "flushed" : "synced", first: round * 10_000_000,
                killAfterAcknowledgements: killAfter)
            #expect(acks.count >= killAfter, "round \(round): child stopped early")

            // What the queue must hold: the last state plus what this round acknowledged.
            var expected = verified
            var enqueueInFlight: Int?
            var removalInFlight: Int?
            for event in acks.queue {
                switch event.kind {
                case "enqueuing": enqueueInFlight = event.index
                case "queued":
                    expected.append(event.index)
                    enqueueInFlight = nil
                    let sequence = event.sequence ?? 0
                    #expect(sequence > highestSequence, "round \(round): sequence \(sequence) did not grow")
                    highestSequence = max(highestSequence, sequence)
                case "removing": removalInFlight = event.index
                case "removed":
                    #expect(expected.first == event.index, "round \(round): removed \(event.index), not the head")
                    expected.removeAll { $0 == event.index }
                    removalInFlight = nil
                default: Issue.record("unknown line \(event.kind)")
                }
            }
            var allowed = [expected]
            if let removal = removalInFlight { allowed += allowed.map { $0.filter { $0 != removal } } }
            if let enqueue = enqueueInFlight { allowed += allowed.map { $0 + [enqueue] } }

            let pending = try await reopenedQueue(engine: engine, at: folder)
            let numbers = pending.map(QueueCrashWorkload.index)
            #expect(
                allowed.contains(numbers),
                "round \(round): the queue holds \(numbers.suffix(8)), acknowledged \(expected.suffix(8))")
            #expect(Set(pending.map(\.id)).count == pending.count, "round \(round): an id twice")
            #expect(zip(pending, pending.dropFirst()).allSatisfy { $0.sequence < $1.sequence })
            for write in pending {
                #expect(write.request == QueueCrashWorkload.request(QueueCrashWorkload.index(of: write)), "torn")
            }
            verified = numbers
            highestSequence = max(highestSequence, pending.last?.sequence ?? 0)
        }
    }

    /// Every pending write of the queue on `folder`, read by a queue opened after the kill (and
    /// released before the next round's child opens the folder).
    private func reopenedQueue(engine: String, at folder: URL) async throws -> [QueuedWrite] {
        let store = try await CrashStores.open(engine, at: folder, durability: .synced)
        let queue = try await WriteQueue(store: store, maxQueued: .max)
        let pending = try await queue.pending()
        #expect(queue.count == pending.count)
        try await CrashIntegrity.check(store)
        return pending
    }
}
