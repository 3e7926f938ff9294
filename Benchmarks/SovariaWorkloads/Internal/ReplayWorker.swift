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
    let readAPI: WorkloadDriver.ReadAPI
    /// Statistics by ``OperationKind/rawValue``.
    private(set) var stats = [OperationStats](repeating: OperationStats(), count: OperationKind.allCases.count)
    private var values = ValueStrings()
    /// Where a `.bytes` read copies what it read, as the C replayer keeps its copies.
    private let kept = KeptBytes()

    init(store: any OfflineStore, clock: any WorkloadClock, schedule: Schedule?, readAPI: WorkloadDriver.ReadAPI) {
        self.store = store
        self.clock = clock
        self.schedule = schedule
        self.readAPI = readAPI
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
            return try await read(key) ? .hit : .miss
        case .update(let key, let valueBytes), .insert(let key, let valueBytes):
            try await store.set(key, values.value(count: valueBytes, index: index))
        case .delete(let key):
            try await store.delete(key)
        case .scan(let prefix, let after, let limit):
            try await scan(prefix, after: after, limit: limit)
        case .readModifyWrite(let key, let valueBytes):
            let found = try await read(key)
            try await store.set(key, values.value(count: valueBytes, index: index))
            return found ? .hit : .miss
        case .keys(let prefix):
            _ = try await store.keys(prefix)
        case .batch(let operations):
            try await store.write(try batch(operations, index: index))
        case .fetch(let key, let valueBytes):
            if try await read(key) { return .hit }
            try await store.set(key, values.value(count: valueBytes, index: index))
            return .miss
        case .compact:
            try await store.compact()
        case .phase:
            break
        }
        return .hit
    }

    /// Reads `key`'s value with the replay's API; whether there was one.
    @inline(__always)
    private func read(_ key: String) async throws -> Bool {
        switch readAPI {
        case .strings: return try await store.get(key) != nil
        case .bytes:
            let kept = kept
            return try await store.withValue(key) { kept.copy($0, at: 0) } != nil
        }
    }

    /// Reads a page with the replay's API: with `.bytes`, each key and value copied to its own place
    /// in the kept buffer, as the C replayer copies a scan's entries.
    @inline(__always)
    private func scan(_ prefix: String, after: String?, limit: Int) async throws {
        switch readAPI {
        case .strings: _ = try await store.entries(prefix, after: after, limit: limit)
        case .bytes:
            let kept = kept
            var offset = 0
            _ = try await store.withEntries(prefix, after: after, limit: limit) { key, value in
                offset = kept.copy(key, at: offset)
                offset = kept.copy(value, at: offset)
                return true
            }
        }
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

/// One task's buffer for the bytes a `.bytes` replay reads: allocated once, reused by every read.
final class KeptBytes {
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 4 << 20, alignment: 16)

    deinit { buffer.deallocate() }

    /// Copies `bytes` (as much as fits) to `offset`, wrapping to the start when they would not fit
    /// after it; returns the offset after the copy.
    @inline(__always)
    func copy(_ bytes: UnsafeRawBufferPointer, at offset: Int) -> Int {
        let count = min(bytes.count, buffer.count)
        let start = offset + count <= buffer.count ? offset : 0
        if let source = bytes.baseAddress, count > 0 {
            (buffer.baseAddress! + start).copyMemory(from: source, byteCount: count)
        }
        return start + count
    }
}
