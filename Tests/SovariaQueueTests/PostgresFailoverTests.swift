import Foundation
import Sovaria
import SovariaPostgres
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaQueue

/// Issue 28: a write queue on PostgreSQL through real failovers. A primary and a synchronous
/// standby (``PostgresFailoverPair``); the queue takes writes, with a reader of earlier writes
/// beside it, while the primary's postmaster is killed with SIGKILL and the standby promoted.
/// Every write `enqueue` returned is queued once, in order; none is lost or doubled; the reads
/// resume with the same answers. `make test` runs 2 trials, `make reliability` 50.
@Suite(.serialized) struct PostgresFailoverTests {
    static let trials = ProcessInfo.processInfo.environment["SOVARIA_RELIABILITY"] == "full" ? 50 : 2
    static let writesPerTrial = 120

    /// Counts what the store answered, forwarding every call to the PostgreSQL store.
    final class CountingStore: ForwardingStore {
        let inner: any OfflineStore
        let counts = Mutex((unknown: 0, failedWrites: 0, failedReads: 0))
        init(_ inner: any OfflineStore) { self.inner = inner }

        func get(_ key: String) async throws -> String? {
            do { return try await inner.get(key) } catch {
                counts.withLock { $0.failedReads += 1 }
                throw error
            }
        }
        func write(_ batch: [StoreWrite]) async throws {
            do { try await inner.write(batch) } catch let error as OfflineStoreError {
                counts.withLock { counts in
                    if error.code == .outcomeUnknown { counts.unknown += 1 } else { counts.failedWrites += 1 }
                }
                throw error
            }
        }
    }

    /// A flag set once, read from any task.
    final class Flag: Sendable {
        private let value = Atomic(false)
        var isSet: Bool { value.load(ordering: .acquiring) }
        func set() { value.store(true, ordering: .releasing) }
    }

    @Test(.timeLimit(.minutes(10)))
    func writesQueuedThroughFailoversAreQueuedOnceInOrderAndReadsResume() async throws {
        var totals = (writes: 0, refused: 0, unknown: 0, readsFailed: 0, readsAfter: 0)
        for trial in 0..<Self.trials {
            let result = try await Self.trial(trial)
            totals.writes += result.writes
            totals.refused += result.refused
            totals.unknown += result.unknown
            totals.readsFailed += result.readsFailed
            totals.readsAfter += result.readsAfter
        }
        print(
            "failover: \(Self.trials) trials, \(totals.writes) writes queued, \(totals.refused) enqueue calls refused "
                + "with a definite error (tried again), \(totals.unknown) commits without an answer (each learned), "
                + "\(totals.readsFailed) reads failed during failovers, \(totals.readsAfter) reads after them, "
                + "0 lost, 0 doubled, 0 out of order")
    }

    static func trial(
        _ trial: Int
    ) async throws -> (
        writes: Int, refused: Int, unknown: Int, readsFailed: Int, readsAfter: Int
    ) {
        let pair = try await PostgresFailoverPair.start()
        do {
            let result = try await run(trial, on: pair)
            try await pair.destroy()
            return result
        } catch {
            try? await pair.destroy()
            throw error
        }
    }

    static func run(
        _ trial: Int, on pair: PostgresFailoverPair
    ) async throws -> (
        writes: Int, refused: Int, unknown: Int, readsFailed: Int, readsAfter: Int
    ) {
        var configuration = PostgresOfflineStore.Configuration()
        configuration.connectTimeout = .seconds(2)
        let postgres = try PostgresOfflineStore(
            connection: pair.conninfo, table: "sovaria_failover", durability: .synced, configuration: configuration)
        let store = CountingStore(postgres)
        // What the reader checks: written and acknowledged before the failover.
        let fixed = (0..<20).map { ("fixed:\($0)", "value \($0) of trial \(trial)") }
        try await store.write(fixed.map { .set(key: $0.0, value: $0.1) })
        let queue = try await WriteQueue(store: store)
        let failedOver = Flag()
        let killAfter = Int.random(in: 10...60)

        // The reader: every answer is the one written; it goes on until the writer is done.
        let writerDone = Flag()
        let reader = Task { () throws -> (failed: Int, after: Int) in
            var failed = 0
            var after = 0
            while !writerDone.isSet {
                for (key, value) in fixed.shuffled().prefix(3) {
                    do {
                        let read = try await store.get(key)
                        guard read == value else {
                            throw PostgresCluster.Failure(description: "\(key) read \(read ?? "nil"), not \(value)")
                        }
                        if failedOver.isSet { after += 1 }
                    } catch let error as OfflineStoreError where error.code == .io {
                        failed += 1
                    }
                }
                await Task.yield()
            }
            return (failed, after)
        }

        var queued: [QueuedWrite] = []
        var refused = 0
        var failover: Task<Void, any Error>?
        for index in 0..<writesPerTrial {
            if index == killAfter {
                failover = Task {
                    try await pair.failOver(); failedOver.set()
                }
            }
            let request = DataRequest(
                method: "POST", path: "/rest/v1/notes", body: #"{"trial":\#(trial),"n":\#(index)}"#)
            while true {
                do {
                    queued.append(try await queue.enqueue(request))
                    break
                } catch let error as OfflineStoreError where error.code == .io {
                    refused += 1  // definitely not queued (no server took it): the app tries again
                    await Task.yield()
                }
            }
        }
        try await failover?.value
        // A few reads after the failover, so "reads resume" is checked whatever the timing.
        for (key, value) in fixed.prefix(5) { #expect(try await store.get(key) == value) }
        writerDone.set()
        let reads = try await reader.value

        // Every write `enqueue` returned is queued once, in order, and nothing else is.
        let pending = try await queue.pending()
        #expect(pending.map(\.id) == queued.map(\.id), "trial \(trial): the queue holds what enqueue returned")
        #expect(pending.map(\.request.body) == queued.map(\.request.body))
        let bodies = pending.map(\.request.body)
        #expect(Set(bodies).count == bodies.count, "trial \(trial): a request queued twice")
        // And a queue opened afresh on the new primary finds the same.
        let reopened = try await WriteQueue(store: postgres)
        #expect(try await reopened.pending().map(\.id) == queued.map(\.id))
        let counts = store.counts.withLock { $0 }
        return (queued.count, refused, counts.unknown, reads.failed, reads.after + 5)
    }
}
