import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaQueue

/// Seed 003's rejected list: writes the server refused, newest 100 kept, requeue and discard.
@Suite(.sharedPostgresDatabase) struct RejectedListTests {
    @Test(arguments: QueueEngine.all)
    func rejectMovesTheWriteToTheRejectedListInOneBatch(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let clock = TestClock()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy, clock: clock.function)
        let first = try await queue.enqueue(request(0))
        let second = try await queue.enqueue(request(1))
        try await queue.recordFailure(first.id, message: "timeout")
        clock.advance(by: 60)
        spy.reset()
        let rejected = try #require(try await queue.reject(first.id, status: 409, message: "duplicate key"))
        #expect(spy.batches.count == 1)
        #expect(
            spy.batches.first?.map(\.key) == [QueueKeys.rejected(3, first.id), QueueKeys.queued(1, first.id)],
            "the rejected entry in, the queue entry out, one batch")
        #expect(rejected.id == first.id && rejected.status == 409 && rejected.message == "duplicate key")
        #expect(rejected.write.attempts == 1 && rejected.write.lastError == "timeout")
        #expect(rejected.write.sequence == first.sequence && rejected.write.request == first.request)
        #expect(rejected.rejectedAt == QueueCoding.truncatedToMilliseconds(clock.date))
        #expect(try await queue.pending() == [second])
        #expect(queue.count == 1 && queue.rejectedCount == 1)
        #expect(try await queue.reject(first.id, status: 409, message: "again") == nil, "no longer queued")
        #expect(try await WriteQueue(store: try await engine.open(folder.url)).rejected() == [rejected])
    }

    @Test(arguments: QueueEngine.all)
    func rejectUnqueuedAddsAWriteSentElsewhereToTheRejectedListInOneBatch(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let clock = TestClock()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy, clock: clock.function)
        let waiting = try await queue.enqueue(request(0))
        let id = WriteQueue.makeClientID()
        spy.reset()
        let rejected = try await queue.rejectUnqueued(request(1), id: id, status: 422, message: "invalid input")
        #expect(spy.batches.map { $0.map(\.key) } == [[QueueKeys.rejected(2, id)]])
        #expect(rejected.id == id && rejected.status == 422 && rejected.message == "invalid input")
        #expect(rejected.write.request == request(1) && rejected.write.attempts == 0)
        #expect(rejected.rejectedAt == QueueCoding.truncatedToMilliseconds(clock.date))
        #expect(try await queue.pending() == [waiting], "the queue is untouched")
        #expect(queue.rejectedCount == 1)
        let taken = try await #require(throws: WriteQueueError.self) {
            try await queue.rejectUnqueued(request(2), id: waiting.id, status: 400, message: "bad")
        }
        #expect(taken.code == .invalidClientID)
        #expect(try await WriteQueue(store: try await engine.open(folder.url)).rejected() == [rejected])
    }

    @Test(arguments: QueueEngine.all)
    func rejectedListKeepsTheNewest100NewestFirst(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let clock = TestClock()
        var ids: [String] = []
        do {
            let queue = try await WriteQueue(store: spy, clock: clock.function)
            for number in 0..<(WriteQueue.maxRejected + 5) {
                let write = try await queue.enqueue(request(number))
                spy.reset()
                try await queue.reject(write.id, status: 400 + number % 100, message: "refused \(number)")
                #expect(spy.batches.count == 1)
                if number >= WriteQueue.maxRejected {
                    let oldest = ids[number - WriteQueue.maxRejected]
                    let last = spy.batches.first?.last
                    #expect(
                        last == .delete(key: last?.key ?? "") && last?.key.hasSuffix(":" + oldest) == true,
                        "the oldest rejected entry goes in the same batch")
                }
                ids.append(write.id)
                clock.advance(by: 1)
            }
            #expect(queue.rejectedCount == 100)
        }
        let rejected = try await WriteQueue(store: try await engine.open(folder.url)).rejected()
        #expect(rejected.map(\.id) == Array(ids.suffix(100).reversed()))
        #expect(rejected.first?.message == "refused 104")
        #expect(rejected.map(\.rejectedAt) == rejected.map(\.rejectedAt).sorted(by: >))
        #expect(try await spy.keys("sov:rejected:").count == 100)
    }

    @Test(arguments: QueueEngine.all)
    func requeuePutsTheWriteAtTheTailWithANewSequenceAndANewClientID(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let clock = TestClock()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy, clock: clock.function)
        let first = try await queue.enqueue(request(0))
        try await queue.recordFailure(first.id, message: "timeout")
        try await queue.reject(first.id, status: 422, message: "title missing")
        let second = try await queue.enqueue(request(1))
        clock.advance(by: 30)
        spy.reset()
        let requeued = try await queue.requeue(first.id)
        #expect(spy.batches.count == 1)
        #expect(spy.batches.first?.map(\.key) == [QueueKeys.queued(4, requeued.id), QueueKeys.rejected(2, first.id)])
        #expect(requeued.id != first.id, "a new attempt: the old key's answer may be stored by the server")
        #expect(requeued.request == first.request)
        #expect(requeued.sequence == 4 && requeued.attempts == 0 && requeued.lastError == nil)
        #expect(requeued.queuedAt == QueueCoding.truncatedToMilliseconds(clock.date))
        #expect(try await queue.pending() == [second, requeued], "at the tail: nothing overtakes")
        #expect(try await queue.rejected().isEmpty && queue.rejectedCount == 0)

        let missing = try await #require(throws: WriteQueueError.self) { try await queue.requeue(first.id) }
        #expect(missing.code == .notFound)
        #expect(try await WriteQueue(store: try await engine.open(folder.url)).pending() == [second, requeued])
    }

    @Test(arguments: QueueEngine.all)
    func requeueIntoAFullQueueThrowsQueueFullAndKeepsTheRejectedWrite(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let queue = try await WriteQueue(store: try await engine.open(folder.url), maxQueued: 1)
        let first = try await queue.enqueue(request(0))
        try await queue.reject(first.id, status: 400, message: "bad")
        try await queue.enqueue(request(1))
        let error = try await #require(throws: WriteQueueError.self) { try await queue.requeue(first.id) }
        #expect(error.code == .queueFull)
        #expect(try await queue.rejected().map(\.id) == [first.id])
    }

    @Test(arguments: QueueEngine.all)
    func requeueLeavesOutTheRequestsOwnIdempotencyKeyAndRefusesAUsedClientID(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let queue = try await WriteQueue(store: try await engine.open(folder.url))
        var keyed = request(0)
        keyed.headers["idempotency-key"] = "app-key"
        let first = try await queue.enqueue(keyed)
        try await queue.reject(first.id, status: 409, message: "taken")
        let waiting = try await queue.enqueue(request(1))
        let used = try await #require(throws: WriteQueueError.self) {
            try await queue.requeue(first.id, id: waiting.id)
        }
        #expect(used.code == .invalidClientID)
        #expect(try await queue.rejected().map(\.id) == [first.id], "a refused requeue changes nothing")
        let requeued = try await queue.requeue(first.id, id: "retry-1")
        #expect(requeued.id == "retry-1")
        #expect(requeued.request.header(WriteQueue.idempotencyHeader) == nil, "the old key would replay the refusal")
        #expect(requeued.request.body == keyed.body)
        #expect(try await queue.pending().map(\.id) == [waiting.id, "retry-1"])
    }

    @Test(arguments: QueueEngine.all)
    func discardForgetsOneRejectedWrite(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy)
        var ids: [String] = []
        for number in 0..<3 {
            let write = try await queue.enqueue(request(number))
            try await queue.reject(write.id, status: 400, message: "\(number)")
            ids.append(write.id)
        }
        spy.reset()
        #expect(try await queue.discard(ids[1]))
        #expect(spy.batches.count == 1)
        #expect(try await queue.discard(ids[1]) == false)
        #expect(try await queue.rejected().map(\.id) == [ids[2], ids[0]])
        #expect(
            try await WriteQueue(store: try await engine.open(folder.url)).rejected().map(\.id) == [ids[2], ids[0]])
    }

    @Test(arguments: QueueEngine.all)
    func undecodableRejectedValueIsCorruptNamingItsKey(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let queue = try await WriteQueue(store: store)
        let write = try await queue.enqueue(request(0))
        try await queue.reject(write.id, status: 400, message: "no")
        let key = QueueKeys.rejected(2, write.id)
        try await store.set(key, "[]")
        let error = try await #require(throws: OfflineStoreError.self) { try await queue.rejected() }
        #expect(error.code == .corrupt && error.key == key)
        await #expect(throws: OfflineStoreError.self) { try await queue.requeue(write.id) }
        #expect(try await queue.discard(write.id))
        #expect(try await queue.rejected().isEmpty)
    }
}
