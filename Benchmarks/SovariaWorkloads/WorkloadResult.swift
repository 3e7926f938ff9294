@_spi(Benchmarks) import Sovaria

/// What one phase of a replay did: per operation kind, and in total.
package struct PhaseResult: Sendable {
    /// The phase (records before any phase mark count as `.run`).
    package var phase: TracePhase
    /// Wall time from the phase's first record taken to its last operation's end, in the
    /// driver's clock.
    package var elapsedNanoseconds: UInt64
    /// The operations of each kind the phase ran; kinds it did not run are absent.
    package var operations: [OperationKind: OperationStats]

    /// Every operation of the phase together.
    package var total: OperationStats {
        var total = OperationStats()
        for stats in operations.values { total.merge(stats) }
        return total
    }

    /// Operations per second over ``elapsedNanoseconds`` (0 for an empty phase).
    package var throughput: Double {
        guard elapsedNanoseconds > 0 else { return 0 }
        return Double(operations.values.reduce(0) { $0 + $1.count }) * 1e9 / Double(elapsedNanoseconds)
    }
}

/// What a ``WorkloadDriver`` replay did, phase by phase.
package struct WorkloadResult: Sendable {
    /// The phases in the order they ran.
    package var phases: [PhaseResult]
    /// Whether the maximum run duration ended the replay before the stream did.
    package var stoppedAtDeadline: Bool

    /// The first phase of kind `phase`, or `nil`.
    package func phase(_ phase: TracePhase) -> PhaseResult? {
        phases.first { $0.phase == phase }
    }
}
