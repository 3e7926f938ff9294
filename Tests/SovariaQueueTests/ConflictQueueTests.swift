import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaQueue

/// The queue's part in conflicts: a synced write's followers changed in the same batch, a
/// resolution replacing a conflict with the writes that waited moved behind it, and reasons kept.
@Suite(.sharedPostgresDatabase) struct ConflictQueueTests {
    @Test(arguments: QueueEngine.all)
    func removeUpdatingChangesTheFollowersInTheBatchThatRemovesTheWrite(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy)
        let head = try await queue.enqueue(request(1, method: "PATCH"))
        let follower = try await queue.enqueue(request(2, method: "PATCH"))
        let other = try await queue.enqueue(request(3))
        var changed = follower.request
        changed.path += "&version=eq.8"
        let updated = QueuedWrite(
            id: follower.id, sequence: follower.sequence, request: changed, queuedAt: follower.queuedAt)
        spy.reset()
        #expect(try await queue.remove(head.id, updating: [updated]))
        #expect(spy.batches.count == 1, "one batch")
        #expect(try await queue.pending() == [updated, other])
        #expect(try await WriteQueue(store: try await engine.open(folder.url)).pending() == [updated, other])
        #expect(try await queue.remove(head.id, updating: [updated]) == false, "gone already: nothing written")
    }

    @Test(arguments: QueueEngine.all)
    func resolveReplacesTheConflictAndMovesTheWaitingWritesBehindTheResolution(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy)
        let conflicted = try await queue.enqueue(request(1, method: "PATCH"))
        let waiting = try await queue.enqueue(request(1, method: "DELETE"))
        let unrelated = try await queue.enqueue(request(2))
        let rejected = try #require(
            try await queue.reject(
                conflicted.id, status: 200, message: "changed", reason: .conflict, serverRow: #"{"id":1,"version":2}"#))
        #expect(rejected.reason == .conflict && rejected.serverRow == #"{"id":1,"version":2}"#)
        spy.reset()
        let merged = request(1, method: "PATCH")
        let resolution = try await queue.resolve(
            conflicted.id, with: merged, id: "resolution-1", moving: [waiting])
        #expect(spy.batches.count == 1, "one batch")
        #expect(resolution.id == "resolution-1" && resolution.request == merged)
        #expect(try await queue.rejected().isEmpty)
        let pending = try await queue.pending()
        #expect(pending.map(\.id) == [unrelated.id, resolution.id, waiting.id], "the waiting write follows")
        #expect(pending.last?.request == waiting.request && pending.last?.sequence ?? 0 > resolution.sequence)
        let reopened = try await WriteQueue(store: try await engine.open(folder.url))
        #expect(try await reopened.pending() == pending)
        await #expect(throws: WriteQueueError.self) {
            try await queue.resolve(conflicted.id, with: merged, id: "resolution-2", moving: [])
        }
    }

    @Test(arguments: QueueEngine.all)
    func aRejectionSparesTheGivenEntriesWhenTheListIsFull(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let queue = try await WriteQueue(store: try await engine.open(folder.url))
        let conflict = try await queue.enqueue(request(0, method: "PATCH"))
        try await queue.reject(conflict.id, status: 200, message: "changed", reason: .conflict, serverRow: "{}")
        var refused: [String] = []
        for number in 1...WriteQueue.maxRejected {
            let write = try await queue.enqueue(request(number))
            try await queue.reject(write.id, status: 409, message: "no", sparing: [conflict.id])
            refused.append(write.id)
        }
        let kept = try await queue.rejected().map(\.id)
        #expect(kept.count == WriteQueue.maxRejected)
        #expect(kept.contains(conflict.id), "the conflict, the oldest, was spared")
        #expect(!kept.contains(refused[0]), "the oldest other entry went instead")
        let next = try await queue.enqueue(request(999))
        try await queue.reject(next.id, status: 409, message: "no")
        #expect(try await queue.rejected().contains { $0.id == conflict.id } == false, "not spared: dropped")
    }

    @Test(arguments: QueueEngine.all)
    func reasonsAndServerRowsSurviveAReopen(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let queue = try await WriteQueue(store: try await engine.open(folder.url))
        var ids: [String] = []
        for (number, reason) in [RejectionReason.refused, .noMatchingRow, .conflict, .serverWon].enumerated() {
            let write = try await queue.enqueue(request(number, method: "PATCH"))
            try await queue.reject(
                write.id, status: 200, message: "m", reason: reason, serverRow: reason == .refused ? nil : "{}")
            ids.append(write.id)
        }
        let unqueued = try await queue.rejectUnqueued(
            request(9), id: "direct", status: 200, message: "gone", reason: .noMatchingRow)
        let reopened = try await WriteQueue(store: try await engine.open(folder.url)).rejected()
        #expect(reopened.map(\.reason) == [.noMatchingRow, .serverWon, .conflict, .noMatchingRow, .refused])
        #expect(reopened.map(\.serverRow) == [nil, "{}", "{}", "{}", nil])
        #expect(reopened.first == unqueued)
    }
}
