import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaQueue

/// Seed 003's write queue, each rule on every engine (and encrypted SQLite).
@Suite(.sharedPostgresDatabase) struct WriteQueueTests {
    @Test(arguments: QueueEngine.all)
    func reopenedQueueListsExactlyTheAcknowledgedWritesOldestFirst(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let clock = TestClock()
        var acknowledged: [QueuedWrite] = []
        do {
            let spy = SpyStore(try await engine.open(folder.url))
            let queue = try await WriteQueue(store: spy, clock: clock.function)
            for number in 0..<12 {
                spy.reset()
                acknowledged.append(try await queue.enqueue(request(number)))
                #expect(spy.batches.count == 1, "enqueue is one batch")
                clock.advance(by: 0.25)
            }
            #expect(queue.count == 12)
        }
        let reopened = try await WriteQueue(store: try await engine.open(folder.url))
        let pending = try await reopened.pending()
        #expect(pending == acknowledged, "ids, sequences, requests and dates, oldest first")
        #expect(pending.map(number) == Array(0..<12))
        #expect(pending.map(\.sequence) == Array(1...12))
        #expect(Set(pending.map(\.id)).count == 12)
        #expect(pending.first?.queuedAt.timeIntervalSince1970 == 1_800_000_000.123, "the clock, to the millisecond")
        #expect(reopened.count == 12)
        #expect(try await reopened.head() == acknowledged.first)
    }

    @Test(arguments: QueueEngine.all)
    func sequencesKeepGrowingAcrossReopenAfterEveryWriteWasRemoved(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        do {
            let queue = try await WriteQueue(store: try await engine.open(folder.url))
            for number in 0..<3 { try await queue.enqueue(request(number)) }
            for write in try await queue.pending() { #expect(try await queue.remove(write.id)) }
            #expect(queue.count == 0)
            #expect(try await queue.head() == nil)
        }
        do {
            let queue = try await WriteQueue(store: try await engine.open(folder.url))
            #expect(try await queue.enqueue(request(3)).sequence == 4)
            try await queue.clear()
        }
        do {
            let queue = try await WriteQueue(store: try await engine.open(folder.url))
            let write = try await queue.enqueue(request(4))
            #expect(write.sequence == 5, "clear() keeps the sequence too")
            try await queue.reject(write.id, status: 400, message: "no")  // the rejection takes 6
            #expect(try await queue.discard(write.id))
        }
        let queue = try await WriteQueue(store: try await engine.open(folder.url))
        #expect(try await queue.enqueue(request(5)).sequence == 7)
        let store = try await engine.open(folder.url)
        #expect(try await store.keys("sov:meta:queue:") == ["sov:meta:queue:sequence:00000000000000000006"])
    }

    @Test(arguments: QueueEngine.all)
    func keysAreSequencesInByteOrderAndValuesSortedJSON(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let queue = try await WriteQueue(store: store, clock: { Date(timeIntervalSince1970: 1_800_000_000.5) })
        var writes: [QueuedWrite] = []
        for number in 0..<11 { writes.append(try await queue.enqueue(request(number))) }
        let keys = try await store.keys("sov:queue:")
        #expect(keys == writes.map { "sov:queue:\(twentyDigits($0.sequence)):\($0.id)" })
        #expect(keys[9] == "sov:queue:00000000000000000010:\(writes[9].id)", "10 sorts after 9")
        #expect(writes.allSatisfy { UUID(uuidString: $0.id) != nil && $0.id == $0.id.lowercased() })
        let value = try #require(try await store.get(keys[0]))
        #expect(value.hasPrefix(#"{"attempts":0,"id":"\#(writes[0].id)","queuedAt":1800000000500,"request":{"#))
        #expect(value.contains(#""path":"/rest/v1/notes?id=eq.0""#), "slashes unescaped")
    }

    @Test(arguments: QueueEngine.all)
    func enqueuePastMaxQueuedThrowsQueueFullAndWritesNothing(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy, maxQueued: 3)
        for number in 0..<3 { try await queue.enqueue(request(number)) }
        spy.reset()
        let error = try await #require(throws: WriteQueueError.self) { try await queue.enqueue(request(3)) }
        #expect(error.code == .queueFull)
        #expect(error.message.contains("OFFLINE_QUEUE_FULL") && error.message.contains("try again"))
        #expect(spy.batches.isEmpty, "nothing written")
        #expect(queue.count == 3)
        #expect(try await spy.keys("sov:").count == 3)
        try await queue.remove(try #require(try await queue.head()).id)
        #expect(try await queue.enqueue(request(3)).sequence == 4, "the refused write used no sequence")

        for bound in [0, -5] {
            let small = try await WriteQueue(
                store: try await engine.open(folder.child("small\(bound)")), maxQueued: bound)
            #expect(small.maxQueued == 1)
            try await small.enqueue(request(0))
            await #expect(throws: WriteQueueError.self) { try await small.enqueue(request(1)) }
        }
        #expect(WriteQueue.defaultMaxQueued == 1_000)
    }

    @Test(arguments: QueueEngine.all)
    func recordFailureCountsAttemptsKeepsTheLastErrorAndThePlace(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        do {
            let queue = try await WriteQueue(store: try await engine.open(folder.url))
            let first = try await queue.enqueue(request(0))
            try await queue.enqueue(request(1))
            #expect(try await queue.recordFailure(first.id, message: "timeout")?.attempts == 1)
            let updated = try #require(try await queue.recordFailure(first.id, message: "503 Service Unavailable"))
            #expect(updated.attempts == 2 && updated.lastError == "503 Service Unavailable")
            #expect(updated.sequence == first.sequence && updated.queuedAt == first.queuedAt)
            #expect(try await queue.recordFailure("no-such-id", message: "x") == nil)
        }
        let pending = try await WriteQueue(store: try await engine.open(folder.url)).pending()
        #expect(pending.map(\.attempts) == [2, 0])
        #expect(pending.map(\.lastError) == ["503 Service Unavailable", nil])
    }

    @Test(arguments: QueueEngine.all)
    func removeTakesOneWriteOutAndIgnoresUnknownIDs(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy)
        let writes = [try await queue.enqueue(request(0)), try await queue.enqueue(request(1))]
        spy.reset()
        #expect(try await queue.remove(writes[0].id))
        #expect(spy.batches == [[.delete(key: QueueKeys.queued(1, writes[0].id))]], "not the newest: no record")
        #expect(try await queue.remove(writes[0].id) == false)
        #expect(try await queue.remove("no-such-id") == false)
        #expect(try await queue.pending() == [writes[1]])
        spy.reset()
        try await queue.remove(writes[1].id)
        #expect(
            spy.batches == [
                [
                    .set(key: "sov:meta:queue:sequence:00000000000000000002", value: ""),
                    .delete(key: QueueKeys.queued(2, writes[1].id)),
                ]
            ], "the newest goes: its sequence is recorded in the same batch")
    }

    @Test(arguments: QueueEngine.all)
    func clearForgetsTheQueueAndTheRejectedListInOneBatch(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy)
        for number in 0..<4 { try await queue.enqueue(request(number)) }
        try await queue.reject(try #require(try await queue.head()).id, status: 422, message: "invalid")
        try await spy.set("sov:cache:l:other", "kept")
        spy.reset()
        try await queue.clear()
        #expect(spy.batches.count == 1)
        #expect(queue.count == 0 && queue.rejectedCount == 0)
        #expect(try await queue.pending().isEmpty)
        #expect(try await queue.rejected().isEmpty)
        #expect(try await spy.keys("sov:") == ["sov:cache:l:other", "sov:meta:queue:sequence:00000000000000000005"])
        let reopened = try await WriteQueue(store: try await engine.open(folder.url))
        #expect(reopened.count == 0 && reopened.rejectedCount == 0)
    }

    @Test(arguments: QueueEngine.all)
    func openingReadsKeyNamesOnly(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        do {
            let queue = try await WriteQueue(store: try await engine.open(folder.url))
            for number in 0..<50 { try await queue.enqueue(request(number)) }
            for _ in 0..<5 { try await queue.reject(try #require(try await queue.head()).id, status: 409, message: "") }
        }
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy)
        let log = spy.log.withLock { $0 }
        #expect(log.gets.isEmpty && log.entriesPrefixes.isEmpty && log.batches.isEmpty)
        #expect(log.keysPrefixes == ["sov:queue:", "sov:rejected:", "sov:meta:queue:sequence:"])
        #expect(queue.count == 45 && queue.rejectedCount == 5)
        #expect(try await queue.head().map(number) == 5)
        #expect(spy.log.withLock { ($0.gets.count, $0.entriesPrefixes) } == (1, []), "head(): one get, no scan")
        #expect(try await queue.enqueue(request(50)).sequence == 56)
    }

    @Test(arguments: QueueEngine.all)
    func undecodableValueIsCorruptNamingItsKeyAndCanBeRemoved(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let queue = try await WriteQueue(store: store)
        let good = try await queue.enqueue(request(0))
        let bad = try await queue.enqueue(request(1))
        let badKey = QueueKeys.queued(bad.sequence, bad.id)
        try await store.set(badKey, #"{"id":"#)

        let error = try await #require(throws: OfflineStoreError.self) { try await queue.pending() }
        #expect(error.code == .corrupt && error.key == badKey && error.message.contains(badKey))
        await #expect(throws: OfflineStoreError.self) { try await queue.recordFailure(bad.id, message: "x") }
        await #expect(throws: OfflineStoreError.self) { try await queue.reject(bad.id, status: 400, message: "x") }
        #expect(try await queue.head() == good)
        #expect(queue.count == 2, "never silently dropped")

        // A well-formed value under another write's key is caught too.
        try await store.set(badKey, try #require(try await store.get(QueueKeys.queued(good.sequence, good.id))))
        let moved = try await #require(throws: OfflineStoreError.self) { try await queue.pending() }
        #expect(moved.code == .corrupt && moved.key == badKey)

        #expect(try await queue.remove(bad.id), "the id is in the key: removable without its value")
        #expect(try await queue.pending() == [good])
    }

    @Test(arguments: QueueEngine.all)
    func aForeignKeyUnderTheQueuePrefixStopsTheOpenAsCorrupt(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        try await store.set("sov:queue:0000000001", "{}")
        let error = try await #require(throws: OfflineStoreError.self) { try await WriteQueue(store: store) }
        #expect(error.code == .corrupt && error.key == "sov:queue:0000000001")
        try await store.delete("sov:queue:0000000001")
        try await store.set("sov:meta:queue:sequence:12", "")
        let meta = try await #require(throws: OfflineStoreError.self) { try await WriteQueue(store: store) }
        #expect(meta.key == "sov:meta:queue:sequence:12")
    }

    @Test(arguments: QueueEngine.all)
    func concurrentEnqueuesGetDistinctGrowingSequencesAndAllLand(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let queue = try await WriteQueue(store: try await engine.open(folder.url))
        let writes = try await withThrowingTaskGroup(of: QueuedWrite.self) { group in
            for number in 0..<64 { group.addTask { try await queue.enqueue(request(number)) } }
            return try await group.reduce(into: [QueuedWrite]()) { $0.append($1) }
        }
        #expect(Set(writes.map(\.sequence)) == Set(1...64))
        #expect(Set(writes.map(\.id)).count == 64)
        #expect(queue.count == 64)
        let pending = try await queue.pending()
        #expect(pending == writes.sorted { $0.sequence < $1.sequence })
        // Each task's write got a sequence above every write acknowledged before it started.
        let reopened = try await WriteQueue(store: try await engine.open(folder.url))
        #expect(try await reopened.pending() == pending)
    }

    @Test(arguments: QueueEngine.all)
    func concurrentChangesAndReadsStayConsistent(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let queue = try await WriteQueue(store: try await engine.open(folder.url), maxQueued: 10_000)
        for number in 0..<40 { try await queue.enqueue(request(number)) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { for number in 40..<80 { try await queue.enqueue(request(number)) } }
            group.addTask {
                for _ in 0..<20 { try await queue.remove(try #require(try await queue.head()).id) }
            }
            group.addTask {
                for _ in 0..<10 {
                    let pending = try await queue.pending()
                    #expect(pending.map(\.sequence) == pending.map(\.sequence).sorted())
                    #expect(Set(pending.map(\.id)).count == pending.count)
                }
            }
            try await group.waitForAll()
        }
        let pending = try await queue.pending()
        #expect(pending.map(number) == Array(20..<80))
        #expect(queue.count == 60)
    }

    @Test func aFailedBatchLeavesTheQueueAsTheStoreHasIt() async throws {
        let spy = SpyStore(MemoryOfflineStore())
        let queue = try await WriteQueue(store: spy)
        let first = try await queue.enqueue(request(0))
        spy.failWrites.withLock { $0 = OfflineStoreError(.full, "disk full") }
        await #expect(throws: OfflineStoreError.self) { try await queue.enqueue(request(1)) }
        await #expect(throws: OfflineStoreError.self) { try await queue.remove(first.id) }
        #expect(queue.count == 1)
        spy.failWrites.withLock { $0 = nil }
        #expect(try await queue.pending() == [first])
        #expect(try await queue.enqueue(request(2)).sequence == 3, "a sequence given to a failed batch is not reused")
    }

    @Test func anIDUnderTwoKeysKeepsTheNewerEntryAtOpen() async throws {
        // Only a store without atomic batches can leave this: a reject or requeue cut in half.
        let store = MemoryOfflineStore()
        let write = QueuedWrite(id: "w", sequence: 3, request: request(0), queuedAt: Date(timeIntervalSince1970: 0))
        let rejected = RejectedWrite(write: write, status: 400, message: "no", rejectedAt: write.queuedAt)
        try await store.set(QueueKeys.queued(3, "w"), try QueueCoding.encode(write))
        try await store.set(QueueKeys.rejected(4, "w"), try QueueCoding.encode(rejected))
        let queue = try await WriteQueue(store: store)
        #expect(queue.count == 0 && queue.rejectedCount == 1)
        #expect(try await store.keys("sov:") == [QueueKeys.rejected(4, "w")])
        #expect(try await queue.rejected() == [rejected])
        #expect(try await queue.enqueue(request(1)).sequence == 5)
    }
}

/// `sequence` zero-padded to 20 digits, written out here rather than taken from the queue.
func twentyDigits(_ sequence: UInt64) -> String {
    let digits = String(sequence)
    return String(repeating: "0", count: 20 - digits.count) + digits
}
