@_spi(Benchmarks) import Sovaria

/// One task of a replay: takes chunks from the shared source, runs each record on the store and
/// counts it in its own statistics (merged by the driver when the phase ends, so recording
/// takes no lock).
struct ReplayWorker {
    /// Why a record could not run.
    enum Failure: Error, Equatable {
        /// A batch held an operation other than an update, insert or delete.
        case notABatchWrite(OperationKind?)
    }

    private enum Outcome {
        case hit, miss
    }

    let store: any OfflineStore
    let clock: any WorkloadClock
    let schedule: Schedule?
    /// Statistics by ``OperationKind/rawValue``.
    private(set) var stats = [OperationStats](repeating: OperationStats(), count: OperationKind.allCases.count)
    private var values = ValueStrings()

    init(store: any OfflineStore, clock: any WorkloadClock, schedule: Schedule?) {
        self.store = store
        self.clock = clock
        self.schedule = schedule
    }

    mutating func run(_ source: ReplaySource, chunkSize: Int) async {
        var chunk: [IndexedRecord] = []
        chunk.reserveCapacity(chunkSize)
        var now = clock.now()
        while source.takeChunk(into: &chunk, maxCount: chunkSize, now: now) {
            for entry in chunk {
                now = await runOne(entry)
            }
        }
    }

    /// Runs one record and returns the clock time it ended.
    @inline(__always)
    private mutating func runOne(_ entry: IndexedRecord) async -> UInt64 {
        let operation = entry.record.operation
        guard let kind = OperationKind(operation) else { return clock.now() }
        var start = clock.now()
        if let schedule {
            let due = schedule.due(entry.record)
            if start < due { await clock.sleep(until: due) }
            // Counted from the due time: a record run late waited in the queue.
            start = due
        }
        let outcome: Result<Outcome, any Error>
        do {
            outcome = .success(try await execute(operation, index: entry.index))
        } catch {
            outcome = .failure(error)
        }
        let end = clock.now()
        stats[kind.rawValue].count += 1
        switch outcome {
        case .success(let result):
            if result == .miss { stats[kind.rawValue].misses += 1 }
            stats[kind.rawValue].latency.record(end > start ? end - start : 0)
        case .failure(let error):
            stats[kind.rawValue].failures += 1
            if stats[kind.rawValue].firstFailure == nil { stats[kind.rawValue].firstFailure = (entry.index, error) }
        }
        return end
    }

    @inline(__always)
    private mutating func execute(_ operation: TraceOperation, index: UInt64) async throws -> Outcome {
        switch operation {
        case .read(let key):
            return try await store.get(key) == nil ? .miss : .hit
        case .update(let key, let valueBytes), .insert(let key, let valueBytes):
            try await store.set(key, values.value(count: valueBytes, index: index))
        case .delete(let key):
            try await store.delete(key)
        case .scan(let prefix, let after, let limit):
            _ = try await store.entries(prefix, after: after, limit: limit)
        case .readModifyWrite(let key, let valueBytes):
            let old = try await store.get(key)
            try await store.set(key, values.value(count: valueBytes, index: index))
            return old == nil ? .miss : .hit
        case .keys(let prefix):
            _ = try await store.keys(prefix)
        case .batch(let operations):
            try await store.write(try batch(operations, index: index))
        case .fetch(let key, let valueBytes):
            if try await store.get(key) != nil { return .hit }
            try await store.set(key, values.value(count: valueBytes, index: index))
            return .miss
        case .compact:
            try await store.compact()
        case .phase:
            break
        }
        return .hit
    }

    private mutating func batch(_ operations: [TraceOperation], index: UInt64) throws(Failure) -> [StoreWrite] {
        var writes: [StoreWrite] = []
        writes.reserveCapacity(operations.count)
        for operation in operations {
            switch operation {
            case .update(let key, let valueBytes), .insert(let key, let valueBytes):
                // A batch's writes share their record's index, as TraceValue says.
                writes.append(.set(key: key, value: values.value(count: valueBytes, index: index)))
            case .delete(let key):
                writes.append(.delete(key: key))
            default:
                throw .notABatchWrite(OperationKind(operation))
            }
        }
        return writes
    }
}
