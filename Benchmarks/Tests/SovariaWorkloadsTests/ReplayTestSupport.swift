@_spi(Benchmarks) import Sovaria
import Synchronization

@testable import SovariaWorkloads

/// A clock that moves only when told: sleeping jumps to the deadline, so no test waits.
final class ManualClock: WorkloadClock {
    private let state = Mutex((now: UInt64(1_000_000_000), sleeps: 0))

    func now() -> UInt64 { state.withLock { $0.now } }

    func sleep(until deadline: UInt64) async {
        state.withLock { state in
            state.sleeps += 1
            state.now = max(state.now, deadline)
        }
    }

    func advance(by nanoseconds: UInt64) { state.withLock { $0.now += nanoseconds } }

    var sleeps: Int { state.withLock { $0.sleeps } }
}

/// A memory store whose every call takes `serviceNanoseconds` on a ``ManualClock``, records
/// what it was asked, and fails the keys in `failingKeys`.
final class InstrumentedStore: OfflineStore {
    let base = MemoryOfflineStore()
    let clock: ManualClock?
    let serviceNanoseconds: UInt64
    let failingKeys: Set<String>
    private let log = Mutex<[String]>([])

    init(clock: ManualClock? = nil, serviceNanoseconds: UInt64 = 0, failingKeys: Set<String> = []) {
        self.clock = clock
        self.serviceNanoseconds = serviceNanoseconds
        self.failingKeys = failingKeys
    }

    /// Every call made, as `"get key"`, `"set key length"` and so on.
    var calls: [String] { log.withLock { $0 } }

    private func called(_ call: String, key: String? = nil) throws {
        clock?.advance(by: serviceNanoseconds)
        log.withLock { $0.append(call) }
        if let key, failingKeys.contains(key) { throw OfflineStoreError(.io, "failing on purpose", key: key) }
    }

    func get(_ key: String) async throws -> String? {
        try called("get \(key)", key: key)
        return try await base.get(key)
    }

    func set(_ key: String, _ value: String) async throws {
        try called("set \(key) \(value.utf8.count)", key: key)
        try await base.set(key, value)
    }

    func delete(_ key: String) async throws {
        try called("delete \(key)", key: key)
        try await base.delete(key)
    }

    func keys(_ prefix: String) async throws -> [String] {
        try called("keys \(prefix)")
        return try await base.keys(prefix)
    }

    func write(_ batch: [StoreWrite]) async throws {
        try called("write \(batch.count)")
        try await base.write(batch)
    }

    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try called("entries \(prefix) \(after ?? "-") \(limit)")
        return try await base.entries(prefix, after: after, limit: limit)
    }

    func withValue<Result>(
        _ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) async throws -> Result? {
        try called("withValue \(key)", key: key)
        return try await base.withValue(key, body)
    }

    func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        try called("withEntries \(prefix) \(after ?? "-") \(limit)")
        return try await base.withEntries(prefix, after: after, limit: limit, body)
    }

    func compact() async throws { try called("compact") }
}

/// What a stream asks for: operations per phase and kind, and the keys it leaves behind.
struct StreamSummary {
    var counts: [TracePhase: [OperationKind: UInt64]] = [:]
    var insertedKeys = Set<String>()
    /// The last write of each key: its record's index and value length.
    var lastWrite: [String: (index: UInt64, bytes: Int)] = [:]

    init(_ records: some Sequence<TraceRecord>) {
        var phase = TracePhase.run
        for (index, record) in records.enumerated() {
            if case .phase(let next) = record.operation {
                phase = next
                continue
            }
            counts[phase, default: [:]][OperationKind(record.operation)!, default: 0] += 1
            switch record.operation {
            case .insert(let key, let bytes):
                insertedKeys.insert(key)
                lastWrite[key] = (UInt64(index), bytes)
            case .update(let key, let bytes), .readModifyWrite(let key, let bytes):
                lastWrite[key] = (UInt64(index), bytes)
            default:
                break
            }
        }
    }
}

extension PhaseResult {
    /// Operations per kind, as a ``StreamSummary`` counts them.
    var counts: [OperationKind: UInt64] { operations.mapValues(\.count) }
}

/// A small stream of `spec`: 200 records and 1,000 operations.
func smallStream(_ spec: WorkloadSpec, seed: UInt64 = 5) throws -> WorkloadStream {
    var spec = spec
    spec.recordCount = 200
    spec.operationCount = 1_000
    return try WorkloadStream(spec: spec, seed: seed)
}

/// The value a replay writes at record `index`.
func traceValue(_ bytes: Int, _ index: UInt64) -> String {
    String(decoding: TraceValue.bytes(count: bytes, index: index), as: UTF8.self)
}
