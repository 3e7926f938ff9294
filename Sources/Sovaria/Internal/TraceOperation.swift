/// One call on a store, as a trace file holds it: what ``RecordingOfflineStore`` writes for each
/// call an app makes, what the workload generators produce, and what the replay driver (and the
/// C baseline's replayer) run.
///
/// Values are not kept, only their sizes: a replay writes `valueBytes` bytes made by
/// the Benchmarks package's `TraceValue`, the same bytes in Swift and in C.
///
/// SPI (`@_spi(Benchmarks)`), not API, because the trace file is a tool's format (`sovaria-bench`
/// reads it, in the Benchmarks package): the recording wrapper is the public way to make one.
@_spi(Benchmarks) public enum TraceOperation: Equatable, Sendable {
    /// `get(key)`.
    case read(key: String)
    /// `set(key, value)` of a key the stream wrote before.
    case update(key: String, valueBytes: Int)
    /// `set(key, value)` of a key the stream has not written (YCSB's insert).
    case insert(key: String, valueBytes: Int)
    /// `delete(key)`.
    case delete(key: String)
    /// `entries(prefix, after: after, limit: limit)`: YCSB's scan is the `limit` keys after its
    /// start key.
    case scan(prefix: String, after: String?, limit: Int)
    /// `get(key)` then `set(key, value)` (YCSB's read-modify-write), timed as one operation.
    case readModifyWrite(key: String, valueBytes: Int)
    /// `keys(prefix)`.
    case keys(prefix: String)
    /// `write(batch)` of `.update`, `.insert` and `.delete` operations only.
    case batch([TraceOperation])
    /// `get(key)`, and on a miss `set(key, value)` of `valueBytes`: a cache's read-through, what
    /// a request of a cache trace (libCacheSim's formats) replays as.
    case fetch(key: String, valueBytes: Int)
    /// `compact()`.
    case compact
    /// The start of a phase (YCSB's load and run): a replay reports each phase on its own.
    case phase(TracePhase)
}

/// A part of a trace reported on its own.
@_spi(Benchmarks) public enum TracePhase: UInt8, Sendable, CaseIterable {
    /// Filling the store before the measured part (YCSB's load phase).
    case load = 1
    /// The measured operations.
    case run = 2
}

/// One operation of a trace and when it was made.
@_spi(Benchmarks) public struct TraceRecord: Equatable, Sendable {
    /// Nanoseconds since the trace's first record (an open-loop replay keeps this timing).
    public var nanoseconds: UInt64
    /// The call.
    public var operation: TraceOperation

    /// A record of `operation`, made `nanoseconds` after the trace's first record.
    public init(nanoseconds: UInt64, operation: TraceOperation) {
        self.nanoseconds = nanoseconds
        self.operation = operation
    }
}
