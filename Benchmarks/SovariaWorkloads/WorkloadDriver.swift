@_spi(Benchmarks) import Sovaria

/// Runs a stream of ``TraceRecord``s on a store and measures each operation: the replay driver
/// behind `sovaria-bench workload` and `replay`.
///
/// Any `Sequence<TraceRecord>` runs: a ``WorkloadStream``, a trace file's reader. Its tasks take
/// chunks of records from one shared iterator, so a stream of ten million operations is never
/// in memory. A phase mark ends the phase before it: every task finishes, the phase's wall time
/// is taken, and the next phase starts (so a run reads what the load wrote).
///
/// - Closed loop (default): each task runs its records back to back; a latency is the store
///   call's own time.
/// - Open loop: each record runs at its due time (``TraceRecord/nanoseconds``, counted from its
///   phase's mark), and its latency is counted from that due time: a store that falls behind
///   shows its queueing, the honest figure. Give enough tasks to keep up with the rate.
///
/// Each operation becomes store calls as ``OperationKind`` says; values are
/// ``TraceValue/bytes(count:index:)`` for the record's index in the stream, as text.
///
/// ```swift
/// let stream = try WorkloadStream(spec: .a, seed: 42)
/// let result = await WorkloadDriver(store: MemoryOfflineStore(), options: .init(concurrency: 4)).run(stream)
/// print(result.phase(.run)!.total.latency.p99)
/// ```
///
/// - Important: The driver never throws: a failed call is counted in ``OperationStats/failures``
///   (the first error kept) and the replay goes on.
package struct WorkloadDriver: Sendable {
    /// How a replay runs.
    package struct Options: Sendable {
        /// Tasks calling the store at once. Default: 1.
        package var concurrency: Int
        /// Whether records keep their timing. Default: `.closedLoop`.
        package var mode: ReplayMode
        /// How long a `.run` phase may last before the replay stops (the load phase always
        /// completes). Default: `nil`, until the stream ends.
        package var maxRunDuration: Duration?
        /// Records a task takes from the stream at a time in a closed loop (an open loop takes
        /// one, so no task holds records that come due while it is busy). Default: 64.
        package var chunkSize: Int
        /// Which calls read values: `withValue` and `withEntries`, copying the bytes into one reused
        /// buffer as the C replayer does, or `get` and `entries`, making `String`s. Default: `.bytes`.
        package var readAPI: ReadAPI

        /// Options for `concurrency` tasks in `mode`.
        package init(
            concurrency: Int = 1, mode: ReplayMode = .closedLoop, maxRunDuration: Duration? = nil, chunkSize: Int = 64,
            readAPI: ReadAPI = .bytes
        ) {
            precondition(concurrency >= 1, "A replay needs at least one task")
            precondition(chunkSize >= 1, "A replay takes at least one record at a time")
            self.concurrency = concurrency
            self.mode = mode
            self.maxRunDuration = maxRunDuration
            self.chunkSize = chunkSize
            self.readAPI = readAPI
        }
    }

    /// The calls a replay reads values with.
    package enum ReadAPI: String, Sendable, CaseIterable {
        /// `withValue(_:_:)` for reads, `withEntries(_:after:limit:_:)` for scans: borrowed bytes,
        /// copied into one buffer the task reuses, as a fast app reads (and as the C replayer does).
        case bytes
        /// `get(_:)` and `entries(_:after:limit:)`: a new `String` for every key and value read.
        case strings

        /// The calls a read and a scan make, for a report.
        package var calls: String {
            switch self {
            case .bytes: "reads withValue, scans withEntries (bytes copied into one buffer)"
            case .strings: "reads get, scans entries (a String per key and value)"
            }
        }
    }

    /// Whether a replay keeps the records' timing.
    package enum ReplayMode: Sendable, Equatable {
        /// As fast as the store goes.
        case closedLoop
        /// Each record at its due time; latency from the due time.
        case openLoop
    }

    /// The store the operations run on.
    package let store: any OfflineStore
    /// How the replay runs.
    package let options: Options
    /// The clock latencies and due times are measured in.
    package let clock: any WorkloadClock

    /// A driver for `store`; tests pass their own `clock`.
    package init(
        store: any OfflineStore, options: Options = Options(), clock: any WorkloadClock = MonotonicWorkloadClock()
    ) {
        self.store = store
        self.options = options
        self.clock = clock
    }

    /// Runs every record of `stream` (or until the run deadline) and reports each phase.
    ///
    /// - Important: With several tasks, records of one phase run in about stream order, not
    ///   exactly: a read may reach the store just before the insert of its key that another task
    ///   holds (it counts as a miss, ``OperationStats/misses``). The deadline is checked when a
    ///   task takes its next chunk, so a run may pass it by one chunk per task. The stream's
    ///   iterator must not be isolated to an actor (the tasks share it behind a lock).
    package func run<Stream: Sequence<TraceRecord>>(_ stream: sending Stream) async -> WorkloadResult
    where Stream.Iterator: SendableMetatype {
        let source = ReplaySource(stream.makeIterator())
        var phases: [PhaseResult] = []
        let maxRunNanoseconds = options.maxRunDuration.map(Self.nanoseconds)
        while true {
            let start = clock.now()
            guard
                let (phase, anchor) = source.beginPhase(deadline: { phase in
                    phase == .run ? maxRunNanoseconds.map { start + $0 } : nil
                })
            else { break }
            let schedule = options.mode == .openLoop ? Schedule(phaseStart: start, anchor: anchor) : nil
            let chunkSize = options.mode == .openLoop ? 1 : options.chunkSize
            var operations = [OperationStats](repeating: OperationStats(), count: OperationKind.allCases.count)
            await withTaskGroup(of: [OperationStats].self) { group in
                for _ in 0..<options.concurrency {
                    group.addTask {
                        var worker = ReplayWorker(
                            store: store, clock: clock, schedule: schedule, readAPI: options.readAPI)
                        await worker.run(source, chunkSize: chunkSize)
                        return worker.stats
                    }
                }
                for await stats in group {
                    for index in stats.indices { operations[index].merge(stats[index]) }
                }
            }
            let elapsed = clock.now() - start
            var byKind: [OperationKind: OperationStats] = [:]
            for kind in OperationKind.allCases where operations[kind.rawValue].count > 0 {
                byKind[kind] = operations[kind.rawValue]
            }
            phases.append(PhaseResult(phase: phase, elapsedNanoseconds: elapsed, operations: byKind))
        }
        return WorkloadResult(phases: phases, stoppedAtDeadline: source.stoppedAtDeadline)
    }

    private static func nanoseconds(_ duration: Duration) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        return UInt64(seconds) * 1_000_000_000 + UInt64(attoseconds / 1_000_000_000)
    }
}

/// Where an open-loop phase's records fall on the driver's clock.
struct Schedule: Sendable {
    /// The clock time the phase started.
    var phaseStart: UInt64
    /// The due time (in the stream's nanoseconds) that falls on `phaseStart`.
    var anchor: UInt64

    /// The clock time `record` is due.
    @inline(__always)
    func due(_ record: TraceRecord) -> UInt64 {
        phaseStart + (record.nanoseconds > anchor ? record.nanoseconds - anchor : 0)
    }
}
