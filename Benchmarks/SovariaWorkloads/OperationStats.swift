@_spi(Benchmarks) import Sovaria

/// The store call a ``TraceOperation`` becomes; a ``WorkloadResult`` reports each on its own.
package enum OperationKind: Int, CaseIterable, Sendable, Comparable {
    /// `get`.
    case read
    /// `set` of a key written before.
    case update
    /// `set` of a new key.
    case insert
    /// `delete`.
    case delete
    /// `entries`.
    case scan
    /// `get` then `set`.
    case readModifyWrite
    /// `keys`.
    case keys
    /// `write` of a batch.
    case batch
    /// `get`, and `set` on a miss.
    case fetch
    /// `compact`.
    case compact

    /// The kind of `operation`, or `nil` for a phase mark.
    @inline(__always)
    package init?(_ operation: TraceOperation) {
        switch operation {
        case .read: self = .read
        case .update: self = .update
        case .insert: self = .insert
        case .delete: self = .delete
        case .scan: self = .scan
        case .readModifyWrite: self = .readModifyWrite
        case .keys: self = .keys
        case .batch: self = .batch
        case .fetch: self = .fetch
        case .compact: self = .compact
        case .phase: return nil
        }
    }

    /// The name reports use (`"read-modify-write"`).
    package var name: String {
        switch self {
        case .read: "read"
        case .update: "update"
        case .insert: "insert"
        case .delete: "delete"
        case .scan: "scan"
        case .readModifyWrite: "read-modify-write"
        case .keys: "keys"
        case .batch: "batch"
        case .fetch: "fetch"
        case .compact: "compact"
        }
    }

    /// Ordered as declared, so reports list kinds in a fixed order.
    package static func < (lhs: OperationKind, rhs: OperationKind) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// What one kind of operation did in one phase of a replay.
package struct OperationStats: Sendable {
    /// Operations run, failed ones included.
    package var count: UInt64 = 0
    /// Operations whose store call threw.
    package var failures: UInt64 = 0
    /// Reads, read-modify-writes and fetches that found no value (a fetch then wrote one).
    package var misses: UInt64 = 0
    /// The error of the failed operation that came first in the stream, and its record's index.
    package var firstFailure: (recordIndex: UInt64, error: any Error)?
    /// The latencies of the operations that succeeded.
    package var latency = LatencyHistogram()

    /// No operations yet.
    package init() {}

    /// Adds `other`'s operations (another task's share of the same phase).
    package mutating func merge(_ other: OperationStats) {
        count += other.count
        failures += other.failures
        misses += other.misses
        if let failure = other.firstFailure, failure.recordIndex < (firstFailure?.recordIndex ?? .max) {
            firstFailure = failure
        }
        latency.merge(other.latency)
    }
}
