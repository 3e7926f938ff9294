/// One call on a store, as a trace file holds it: what ``RecordingOfflineStore`` writes for each
/// call an app makes, what the workload generators produce, and what the replay driver (and the
/// C baseline's replayer) run.
///
/// Values are not kept, only their sizes: a replay writes `valueBytes` bytes made by
/// ``TraceValue``, the same bytes in Swift and in C.
///
/// Not public because the trace file is a tool's format (`sovaria-bench`), not an API: the
/// recording wrapper is the public way to make one.
package enum TraceOperation: Equatable, Sendable {
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
package enum TracePhase: UInt8, Sendable, CaseIterable {
    /// Filling the store before the measured part (YCSB's load phase).
    case load = 1
    /// The measured operations.
    case run = 2
}

/// One operation of a trace and when it was made.
package struct TraceRecord: Equatable, Sendable {
    /// Nanoseconds since the trace's first record (an open-loop replay keeps this timing).
    package var nanoseconds: UInt64
    package var operation: TraceOperation

    package init(nanoseconds: UInt64, operation: TraceOperation) {
        self.nanoseconds = nanoseconds
        self.operation = operation
    }
}

/// The bytes a replay writes for a value: the same in Swift and in the C replayer, so every
/// engine stores identical bytes, and different from one write to the next (SQLite may skip a
/// row rewritten with the bytes it holds, which would flatter it).
package enum TraceValue {
    /// `count` bytes of `a`…`z` repeated, starting at letter `index % 26`, where `index` is the
    /// write's position in its trace (its record's, counting from 0; a batch's writes share it).
    package static func bytes(count: Int, index: UInt64) -> [UInt8] {
        let start = Int(index % 26)
        return (0..<count).map { UInt8(ascii: "a") + UInt8((start + $0) % 26) }
    }
}
