@_spi(Benchmarks) import Sovaria

/// When the records of a generated stream are due.
package enum WorkloadTiming: Sendable, Equatable {
    /// Every record at 0 ns: a replay runs them as fast as it can (closed loop).
    case closedLoop
    /// Operation `i` (counting operations across both phases, not phase marks) at
    /// `i × 10⁹ / operationsPerSecond` ns: an open-loop replay issues them at that rate.
    case openLoop(operationsPerSecond: Double)
}

/// The operations of a workload, made lazily from a ``WorkloadSpec`` and a seed: a
/// `.phase(.load)` record, the load phase's inserts of key numbers `0..<recordCount`, a
/// `.phase(.run)` record, then the run phase's operations.
///
/// One seed gives one stream, record for record, so every engine (and the C replayer, through a
/// trace file) runs identical requests. A stream holds a few generators, never its records:
/// ten million operations stream in constant memory, and iterating twice gives the same
/// records twice.
///
/// How YCSB's operations become ``TraceOperation``s:
/// - read → `.read`, update → `.update` (a whole new value: a key holds one value, not YCSB's
///   fields), insert → `.insert` of the next key number, read-modify-write →
///   `.readModifyWrite`;
/// - scan → `.scan(prefix: keys.prefix, after: keys.scanAfter(keyNumber:), limit: length)`: the
///   `length` keys from the start key on, the start key included (see
///   ``WorkloadKeys/scanAfter(keyNumber:)``).
///
/// ```swift
/// for record in try WorkloadStream(spec: .d, seed: 1) { print(record.operation) }
/// ```
package struct WorkloadStream: Sequence, Sendable {
    /// The workload.
    package let spec: WorkloadSpec
    /// The seed every random choice follows.
    package let seed: UInt64
    /// The phases the stream holds. Default: both; `[.run]` for a run on a store an earlier
    /// stream loaded (the run phase then assumes the `recordCount` records exist).
    package let phases: Set<TracePhase>
    /// When records are due. Default: `.closedLoop`.
    package let timing: WorkloadTiming

    /// The stream of `spec` from `seed`; throws when `spec` cannot run.
    package init(
        spec: WorkloadSpec, seed: UInt64, phases: Set<TracePhase> = [.load, .run], timing: WorkloadTiming = .closedLoop
    ) throws(WorkloadSpecError) {
        try spec.validate()
        if case .openLoop(let rate) = timing, !(rate > 0 && rate.isFinite) {
            throw .invalidValue(
                key: "target", value: String(rate), line: nil, expected: "a positive number of operations per second")
        }
        self.spec = spec
        self.seed = seed
        self.phases = phases
        self.timing = timing
    }

    /// The number of records, phase marks included; `nil` when the run has no operation bound.
    package var recordCount: Int? {
        var count = 0
        if phases.contains(.load) { count += 1 + spec.recordCount }
        if phases.contains(.run) {
            guard let operations = spec.operationCount else { return nil }
            count += 1 + operations
        }
        return count
    }

    /// A stream's records, in order.
    package func makeIterator() -> Iterator { Iterator(self) }

    /// Makes the records one at a time; holds only the generators' state.
    package struct Iterator: IteratorProtocol, Sendable {
        private enum Stage {
            case loadMark, load, runMark, run, finished
        }

        private let spec: WorkloadSpec
        private let keys: WorkloadKeys
        private let nanosecondsPerOperation: Double
        private var random: WorkloadRandom
        private var chooser: KeyChooser
        private var stage: Stage
        private let includesRun: Bool
        /// YCSB's operation chooser: a draw below `thresholds[i]` picks operation `i` (read,
        /// update, insert, scan, read-modify-write).
        private let thresholds: [Double]
        private var loaded: UInt64 = 0
        private var runOperations = 0
        private var operations: UInt64 = 0
        /// Keys `0..<insertedCount` exist once the records before this point are applied.
        package private(set) var insertedCount: UInt64

        init(_ stream: WorkloadStream) {
            spec = stream.spec
            keys = stream.spec.keys
            switch stream.timing {
            case .closedLoop: nanosecondsPerOperation = 0
            case .openLoop(let rate): nanosecondsPerOperation = 1e9 / rate
            }
            random = WorkloadRandom(seed: stream.seed)
            chooser = KeyChooser(
                distribution: stream.spec.requestDistribution, recordCount: UInt64(stream.spec.recordCount),
                expectedInserts: stream.spec.expectedInserts)
            includesRun = stream.phases.contains(.run)
            stage = stream.phases.contains(.load) ? .loadMark : (includesRun ? .runMark : .finished)
            insertedCount = stream.phases.contains(.load) ? 0 : UInt64(stream.spec.recordCount)
            let total = stream.spec.mix.total
            var running = 0.0
            thresholds = stream.spec.mix.sharesInYCSBOrder.map { share in
                running += share / total
                return running
            }
        }

        /// The next record, or `nil` after the last.
        package mutating func next() -> TraceRecord? {
            switch stage {
            case .loadMark:
                stage = spec.recordCount > 0 ? .load : (includesRun ? .runMark : .finished)
                return TraceRecord(nanoseconds: dueTime, operation: .phase(.load))
            case .load:
                let keyNumber = loaded
                loaded += 1
                insertedCount = loaded
                if loaded == UInt64(spec.recordCount) { stage = includesRun ? .runMark : .finished }
                let operation = TraceOperation.insert(
                    key: keys.key(keyNumber: keyNumber), valueBytes: spec.valueSize.next(using: &random))
                return timed(operation)
            case .runMark:
                stage = spec.operationCount == 0 ? .finished : .run
                return TraceRecord(nanoseconds: dueTime, operation: .phase(.run))
            case .run:
                runOperations += 1
                if let bound = spec.operationCount, runOperations >= bound { stage = .finished }
                return timed(nextRunOperation())
            case .finished:
                return nil
            }
        }

        private var dueTime: UInt64 { UInt64(Double(operations) * nanosecondsPerOperation) }

        @inline(__always)
        private mutating func timed(_ operation: TraceOperation) -> TraceRecord {
            defer { operations += 1 }
            return TraceRecord(nanoseconds: dueTime, operation: operation)
        }

        /// One run-phase operation. The draws come in a fixed order (operation, key, then size
        /// or length), which the stream's identity rests on.
        private mutating func nextRunOperation() -> TraceOperation {
            let draw = random.nextUnitDouble()
            var kind = thresholds.count - 1
            for index in thresholds.indices where draw < thresholds[index] {
                kind = index
                break
            }
            // A share of 0 never wins even when rounding leaves the last threshold below 1.
            while thresholds[kind] == (kind > 0 ? thresholds[kind - 1] : 0) && kind > 0 { kind -= 1 }
            switch kind {
            case 0:
                return .read(key: keys.key(keyNumber: chooseKey()))
            case 1:
                let key = keys.key(keyNumber: chooseKey())
                return .update(key: key, valueBytes: spec.valueSize.next(using: &random))
            case 2:
                let keyNumber = insertedCount
                insertedCount += 1
                return .insert(key: keys.key(keyNumber: keyNumber), valueBytes: spec.valueSize.next(using: &random))
            case 3:
                let after = keys.scanAfter(keyNumber: chooseKey())
                let lengths = spec.scanLengths
                let length = lengths.lowerBound + Int(random.next(below: UInt64(lengths.count)))
                return .scan(prefix: keys.prefix, after: after, limit: length)
            default:
                let key = keys.key(keyNumber: chooseKey())
                return .readModifyWrite(key: key, valueBytes: spec.valueSize.next(using: &random))
            }
        }

        @inline(__always)
        private mutating func chooseKey() -> UInt64 {
            chooser.nextKeyNumber(insertedCount: insertedCount, using: &random)
        }
    }
}
