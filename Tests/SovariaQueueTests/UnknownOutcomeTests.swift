import Foundation
import Sovaria
import SovariaTestKit
import Synchronization
import Testing

@testable import SovariaQueue

/// A write whose answer was lost (``OfflineStoreError/Code/outcomeUnknown``): the queue reads its
/// keys back and returns the write queued once, or throws an error that leaves no doubt. The
/// store here loses answers on purpose; `PostgresFailoverTests` loses them to real failovers.
@Suite struct UnknownOutcomeTests {
    /// A memory store whose next writes, when told to, are applied (or not) and then answered
    /// with `.outcomeUnknown`; after such a write its reads fail with `.io` a given number of
    /// times (the store is failing over).
    final class LostAnswerStore: ForwardingStore {
        enum NextWrite { case normal, appliedThenLost, lostBeforeApplied }
        let memory = MemoryOfflineStore()
        var inner: any OfflineStore { memory }
        let state = Mutex((next: [NextWrite](), failingReads: 0, readsToFailAfterLoss: 0, writes: 0))

        func lose(_ writes: NextWrite..., failingReads: Int = 0) {
            state.withLock {
                $0.next += writes
                $0.readsToFailAfterLoss = failingReads
            }
        }

        var writeCount: Int { state.withLock { $0.writes } }

        func get(_ key: String) async throws -> String? {
            let fail = state.withLock { state in
                defer { state.failingReads = max(0, state.failingReads - 1) }
                return state.failingReads > 0
            }
            if fail { throw OfflineStoreError(.io, "the server is failing over") }
            return try await inner.get(key)
        }
        func write(_ batch: [StoreWrite]) async throws {
            let next = state.withLock { state in
                state.writes += 1
                let next = state.next.isEmpty ? NextWrite.normal : state.next.removeFirst()
                if next != .normal { state.failingReads = state.readsToFailAfterLoss }
                return next
            }
            let lost = OfflineStoreError(.outcomeUnknown, "the answer to the commit never came")
            switch next {
            case .normal: try await inner.write(batch)
            case .appliedThenLost:
                try await inner.write(batch)
                throw lost
            case .lostBeforeApplied: throw lost
            }
        }
    }

    static func queue(_ store: LostAnswerStore) async throws -> WriteQueue {
        let recorder = Recorder()
        return try await WriteQueue(store: store, pause: { recorder.record($0) })
    }

    final class Recorder: Sendable {
        let pauses = Mutex<[Duration]>([])
        func record(_ pause: Duration) { pauses.withLock { $0.append(pause) } }
    }

    static func request(_ body: String) -> DataRequest {
        DataRequest(method: "POST", path: "/rest/v1/notes", body: body)
    }

    @Test func aWriteAppliedWhoseAnswerWasLostIsQueuedOnceAndNotSentAgain() async throws {
        let store = LostAnswerStore()
        let queue = try await Self.queue(store)
        store.lose(.appliedThenLost, failingReads: 3)
        let before = store.writeCount
        let write = try await queue.enqueue(Self.request("a"))
        #expect(store.writeCount == before + 1, "read back, not sent again")
        #expect(try await queue.pending().map(\.id) == [write.id])
        #expect(try await WriteQueue(store: store).pending().map(\.id) == [write.id], "and in the store")
    }

    @Test func aWriteLostBeforeItWasAppliedIsSentAgainAndQueuedOnce() async throws {
        let store = LostAnswerStore()
        let queue = try await Self.queue(store)
        store.lose(.lostBeforeApplied, .lostBeforeApplied)
        let write = try await queue.enqueue(Self.request("a"))
        #expect(try await queue.pending().map(\.id) == [write.id] && queue.count == 1)
        let second = try await queue.enqueue(Self.request("b"))
        #expect(try await queue.pending().map(\.id) == [write.id, second.id])
    }

    @Test func aStoreThatNeverAnswersAgainEndsInADefiniteError() async throws {
        let store = LostAnswerStore()
        let recorder = Recorder()
        let queue = try await WriteQueue(store: store, pause: { recorder.record($0) })
        store.lose(.lostBeforeApplied, .lostBeforeApplied, .lostBeforeApplied, .lostBeforeApplied, .lostBeforeApplied)
        let error = await #expect(throws: OfflineStoreError.self) { try await queue.enqueue(Self.request("a")) }
        #expect(error?.code == .io && error?.message.contains("it was not applied") == true)
        #expect(try await queue.pending().isEmpty && queue.count == 0)
        #expect(recorder.pauses.withLock { $0.isEmpty }, "every read-back answered at once")
        // The reads fail for longer than the patience: the doubt is said, not guessed away.
        store.lose(.appliedThenLost, failingReads: 1_000)
        let unknown = await #expect(throws: OfflineStoreError.self) { try await queue.enqueue(Self.request("b")) }
        #expect(unknown?.code == .outcomeUnknown && unknown?.message.contains("still not known") == true)
        let waited = recorder.pauses.withLock { $0.reduce(Duration.zero, +) }
        #expect(waited >= .seconds(60) && waited < .seconds(62))
    }

    @Test func theRejectedListsMoveIsLearnedToo() async throws {
        let store = LostAnswerStore()
        let queue = try await Self.queue(store)
        let write = try await queue.enqueue(Self.request("a"))
        store.lose(.appliedThenLost, failingReads: 2)
        let rejected = try #require(try await queue.reject(write.id, status: 409, message: "conflict"))
        #expect(try await queue.pending().isEmpty)
        #expect(try await queue.rejected().map(\.id) == [rejected.id])
        store.lose(.lostBeforeApplied)
        let requeued = try await queue.requeue(rejected.id)
        let rejectedAfter = try await queue.rejected()
        #expect(try await queue.pending().map(\.id) == [requeued.id] && rejectedAfter.isEmpty)
    }
}
