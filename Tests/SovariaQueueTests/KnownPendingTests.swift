import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaQueue

/// `pending()` answers from the writes the queue knows (those it last read, and those queued
/// since) without reading the store, and is the store's list after every kind of change.
@Suite(.sharedPostgresDatabase) struct KnownPendingTests {
    @Test(arguments: QueueEngine.all)
    func pendingIsReadOnceThenKeptThroughAppendsAndIsTheStoresAfterEveryChange(engine: QueueEngine) async throws {
        let folder = try TemporaryFolder()
        let spy = SpyStore(try await engine.open(folder.url))
        let queue = try await WriteQueue(store: spy)
        for number in 0..<4 { try await queue.enqueue(request(number)) }

        func expectStores(_ step: String, readsTheStore: Bool) async throws {
            spy.reset()
            let pending = try await queue.pending()
            let read = spy.log.withLock { !$0.entriesPrefixes.isEmpty }
            #expect(read == readsTheStore, "\(step): the store was \(read ? "" : "not ")read")
            let stored = try await queue.storedPending()
            #expect(pending == stored, "\(step): the store's writes")
        }
        try await expectStores("first read", readsTheStore: true)
        try await expectStores("read again", readsTheStore: false)
        let added = try await queue.enqueue(request(4))
        try await expectStores("after an enqueue", readsTheStore: false)
        #expect(try await queue.pending().last == added)

        let head = try #require(try await queue.head())
        _ = try await queue.recordFailure(head.id, message: "timed out")
        try await expectStores("after a failure recorded", readsTheStore: true)
        #expect(try await queue.pending().first?.attempts == 1)
        _ = try await queue.reject(head.id, status: 409, message: "conflict")
        try await expectStores("after a rejection", readsTheStore: true)
        _ = try await queue.requeue(head.id)
        try await expectStores("after a requeue", readsTheStore: true)
        let pending = try await queue.pending()
        var changed = pending[2].request
        changed.body = #"{"n":99}"#
        let follower = QueuedWrite(
            id: pending[2].id, sequence: pending[2].sequence, request: changed, queuedAt: pending[2].queuedAt)
        try await queue.remove(pending[1].id, updating: [follower])
        try await expectStores("after a removal that rebased a follower", readsTheStore: true)
        #expect(try await queue.pending().contains(follower))
        try await queue.remove(pending[0].id)
        try await expectStores("after a removal", readsTheStore: true)
        try await queue.clear()
        try await expectStores("after clear", readsTheStore: true)
        #expect(try await queue.pending().isEmpty)
    }

    /// A write its key lost behind the queue's back (a store edited by hand) leaves the known
    /// list when the queue finds it gone.
    @Test func aWriteGoneFromTheStoreLeavesTheKnownList() async throws {
        let store = MemoryOfflineStore()
        let queue = try await WriteQueue(store: store)
        let first = try await queue.enqueue(request(0))
        try await queue.enqueue(request(1))
        #expect(try await queue.pending().count == 2)
        try await store.delete(QueueKeys.queued(first.sequence, first.id))
        #expect(try await queue.recordFailure(first.id, message: "timed out") == nil, "gone from the store")
        let pending = try await queue.pending()
        let stored = try await queue.storedPending()
        #expect(pending == stored && pending.count == 1 && queue.count == 1)
    }

    /// A read of the store that an enqueue overtakes (it read before the write, returns after
    /// it) does not keep what it read: the next answer has the write.
    @Test func aReadOvertakenByAnEnqueueKeepsNothing() async throws {
        let spy = SpyStore(MemoryOfflineStore())
        let queue = try await WriteQueue(store: spy)
        try await queue.enqueue(request(0))
        let (inside, entered) = AsyncStream.makeStream(of: Void.self)
        let (release, released) = AsyncStream.makeStream(of: Void.self)
        spy.afterEntries.withLock {
            $0 = {
                entered.yield()
                for await _ in release { return }
            }
        }
        let reading = Task { try await queue.pending() }
        for await _ in inside { break }
        spy.afterEntries.withLock { $0 = nil }
        let added = try await queue.enqueue(request(1))
        released.yield()
        #expect(try await reading.value.count == 1, "the read saw the store before the enqueue")
        let after = try await queue.pending()
        let stored = try await queue.storedPending()
        #expect(after.last == added && after == stored)
    }
}
