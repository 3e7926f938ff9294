import Foundation
@_spi(Benchmarks) import Sovaria
import SovariaSQLite
import SovariaTestKit
import Testing

@testable import SovariaWorkloads

@Suite struct WorkloadDriverTests {
    /// Runs A–F on `makeStore()`'s stores and checks each against its stream.
    private func runsEveryCoreWorkload(concurrency: Int, makeStore: () throws -> any OfflineStore) async throws {
        for spec in WorkloadSpec.core {
            let stream = try smallStream(spec)
            let summary = StreamSummary(stream)
            let store = try makeStore()
            let result = await WorkloadDriver(store: store, options: .init(concurrency: concurrency)).run(stream)
            #expect(result.phases.map(\.phase) == [.load, .run], "\(spec.name)")
            #expect(!result.stoppedAtDeadline)
            for phase in result.phases {
                #expect(phase.counts == summary.counts[phase.phase], "\(spec.name) \(phase.phase)")
                #expect(phase.total.failures == 0, "\(spec.name): \(String(describing: phase.total.firstFailure))")
                #expect(phase.total.latency.count == phase.total.count)
                #expect(phase.elapsedNanoseconds > 0)
            }
            let keys = try await store.keys(spec.keys.prefix)
            #expect(Set(keys) == summary.insertedKeys, "\(spec.name)")
            #expect(keys.count == summary.insertedKeys.count)
            if concurrency == 1 {
                // One task runs the stream in order: every key holds its last write's value.
                for (key, write) in summary.lastWrite.prefix(50) {
                    #expect(try await store.get(key) == traceValue(write.bytes, write.index), "\(spec.name) \(key)")
                }
                #expect(result.phase(.run)?.operations[.read]?.misses ?? 0 == 0)
            }
        }
    }

    @Test func runsEveryOperationOfACoreStreamOnTheMemoryStore() async throws {
        try await runsEveryCoreWorkload(concurrency: 1) { MemoryOfflineStore() }
    }

    @Test func runsTheSameStreamOnSQLite() async throws {
        let folder = try TemporaryFolder()
        var count = 0
        try await runsEveryCoreWorkload(concurrency: 1) {
            count += 1
            return try SQLiteOfflineStore(fileURL: folder.child("store-\(count).sqlite"), durability: .flushed)
        }
    }

    @Test func fourTasksRunTheSameOperations() async throws {
        try await runsEveryCoreWorkload(concurrency: 4) { MemoryOfflineStore() }
        // The same multiset of store calls as one task makes.
        for spec in [WorkloadSpec.a, .e, .f] {
            let one = InstrumentedStore()
            let four = InstrumentedStore()
            _ = await WorkloadDriver(store: one).run(try smallStream(spec))
            _ = await WorkloadDriver(store: four, options: .init(concurrency: 4, chunkSize: 7)).run(
                try smallStream(spec))
            #expect(one.calls.sorted() == four.calls.sorted(), "\(spec.name)")
            #expect(one.calls.count >= 1_200)
        }
    }

    @Test func openLoopCountsLatencyFromTheDueTime() async throws {
        // Reads due every millisecond on a store that takes 3 ms: each waits 2 ms longer than
        // the one before, so latencies are 3, 5, 7, … 21 ms.
        let clock = ManualClock()
        let store = InstrumentedStore(clock: clock, serviceNanoseconds: 3_000_000)
        let records =
            [TraceRecord(nanoseconds: 0, operation: .phase(.run))]
            + (0..<10).map { TraceRecord(nanoseconds: UInt64($0) * 1_000_000, operation: .read(key: "k\($0)")) }
        let result = await WorkloadDriver(store: store, options: .init(mode: .openLoop), clock: clock).run(records)
        let reads = try #require(result.phase(.run)?.operations[.read])
        #expect(reads.count == 10)
        #expect(reads.latency.min == 3_000_000)
        #expect(reads.latency.max == 21_000_000)
        let expectedSum: UInt64 = (0..<10).map { UInt64(3 + 2 * $0) * 1_000_000 }.reduce(0, +)
        #expect(reads.latency.sum == expectedSum)
        #expect(result.phase(.run)?.elapsedNanoseconds == 30_000_000)
        #expect(clock.sleeps == 0)
    }

    @Test func openLoopWaitsForEachRecordsTime() async throws {
        // A store faster than the rate: the driver sleeps until each record is due, and each
        // latency is the call's own 0.5 ms.
        let clock = ManualClock()
        let store = InstrumentedStore(clock: clock, serviceNanoseconds: 500_000)
        var spec = WorkloadSpec.c
        spec.recordCount = 5
        spec.operationCount = 20
        let stream = try WorkloadStream(spec: spec, seed: 1, timing: .openLoop(operationsPerSecond: 1_000))
        let result = await WorkloadDriver(store: store, options: .init(mode: .openLoop), clock: clock).run(stream)
        let run = try #require(result.phase(.run))
        #expect(run.total.count == 20)
        #expect(run.total.latency.min == 500_000)
        #expect(run.total.latency.max == 500_000)
        // The run's 20 reads are due 0…19 ms after its mark: the last ends 19.5 ms in.
        #expect(run.elapsedNanoseconds == 19_500_000)
        #expect(clock.sleeps >= 19 + 4)
    }

    @Test func runStopsAtItsDeadlineAfterACompleteLoad() async throws {
        let clock = ManualClock()
        let store = InstrumentedStore(clock: clock, serviceNanoseconds: 1_000_000)
        var spec = WorkloadSpec.c
        spec.recordCount = 50
        spec.operationCount = 1_000
        let options = WorkloadDriver.Options(maxRunDuration: .milliseconds(10), chunkSize: 1)
        let result = await WorkloadDriver(store: store, options: options, clock: clock)
            .run(try WorkloadStream(spec: spec, seed: 2))
        #expect(result.phase(.load)?.total.count == 50)
        #expect(result.phase(.run)?.total.count == 10)
        #expect(result.stoppedAtDeadline)
    }

    @Test func failuresAreCountedAndTheFirstKept() async throws {
        let store = InstrumentedStore(failingKeys: ["bad"])
        let records: [TraceOperation] = [
            .phase(.run), .insert(key: "good", valueBytes: 1), .insert(key: "bad", valueBytes: 1),
            .update(key: "bad", valueBytes: 2), .insert(key: "bad", valueBytes: 3), .read(key: "missing"),
        ]
        let result = await WorkloadDriver(store: store).run(records.map { TraceRecord(nanoseconds: 0, operation: $0) })
        let run = try #require(result.phase(.run))
        let inserts = try #require(run.operations[.insert])
        #expect(inserts.count == 3)
        #expect(inserts.failures == 2)
        #expect(inserts.latency.count == 1)
        #expect(inserts.firstFailure?.recordIndex == 2)
        #expect((inserts.firstFailure?.error as? OfflineStoreError)?.code == .io)
        #expect(run.operations[.update]?.failures == 1)
        #expect(run.operations[.read]?.misses == 1)
        #expect(run.total.failures == 3)
    }

    @Test(arguments: WorkloadDriver.ReadAPI.allCases)
    func mapsEachOperationToItsStoreCalls(_ readAPI: WorkloadDriver.ReadAPI) async throws {
        let store = InstrumentedStore()
        let operations: [TraceOperation] = [
            .insert(key: "a", valueBytes: 10),  // 0: records before any mark are a run phase
            .batch([.insert(key: "b", valueBytes: 5), .update(key: "a", valueBytes: 3), .delete(key: "c")]),  // 1
            .fetch(key: "d", valueBytes: 7),  // 2: a miss, then written
            .fetch(key: "d", valueBytes: 7),  // 3: a hit
            .keys(prefix: ""),  // 4
            .scan(prefix: "", after: "a", limit: 2),  // 5
            .readModifyWrite(key: "e", valueBytes: 4),  // 6
            .delete(key: "b"),  // 7
            .compact,  // 8
            .batch([.read(key: "a")]),  // 9: not a write
        ]
        let result = await WorkloadDriver(store: store, options: .init(readAPI: readAPI))
            .run(operations.map { TraceRecord(nanoseconds: 0, operation: $0) })
        #expect(result.phases.map(\.phase) == [.run])
        // Reads and scans use the API asked for: borrowed bytes by default, Strings on request.
        let (read, scan) = readAPI == .bytes ? ("withValue", "withEntries") : ("get", "entries")
        #expect(
            store.calls == [
                "set a 10", "write 3", "\(read) d", "set d 7", "\(read) d", "keys ", "\(scan)  a 2", "\(read) e",
                "set e 4", "delete b", "compact",
            ])
        let run = try #require(result.phase(.run))
        #expect(run.operations[.fetch]?.count == 2)
        #expect(run.operations[.fetch]?.misses == 1)
        #expect(run.operations[.readModifyWrite]?.misses == 1)
        #expect(run.operations[.batch]?.count == 2)
        #expect(run.operations[.batch]?.failures == 1)
        #expect(
            run.operations[.batch]?.firstFailure?.error as? ReplayWorker.Failure == .notABatchWrite(.read))
        #expect(try await store.get("a") == traceValue(3, 1))
        #expect(try await store.get("d") == traceValue(7, 2))
        #expect(try await store.get("e") == traceValue(4, 6))
        #expect(try await store.get("b") == nil)
    }

    @Test func emptyStreamHasNoPhases() async {
        let result = await WorkloadDriver(store: MemoryOfflineStore()).run([TraceRecord]())
        #expect(result.phases.isEmpty)
        #expect(!result.stoppedAtDeadline)
    }

    @Test func valueStringsAreTheTraceValueBytes() {
        var values = ValueStrings()
        for count in [0, 1, 25, 26, 27, 1_000] {
            for index: UInt64 in [0, 1, 25, 26, 51, 1_000_003] {
                #expect(values.value(count: count, index: index) == traceValue(count, index))
            }
        }
        // Past the cache's budget, values are made one by one, the same.
        #expect(values.value(count: 400_000, index: 7) == traceValue(400_000, 7))
        #expect(values.value(count: 400_001, index: 8) == traceValue(400_001, 8))
    }
}
