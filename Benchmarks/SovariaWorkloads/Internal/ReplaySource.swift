@_spi(Benchmarks) import Sovaria
import Synchronization

/// A trace record and its position in the trace (counting from 0, phase marks included): the
/// position picks the bytes of the values it writes (``TraceValue``).
struct IndexedRecord {
    var index: UInt64
    var record: TraceRecord
}

/// The stream a replay's tasks share: one iterator behind one lock, handed out in chunks so a
/// stream of any length is never in memory, and cut at each phase mark so a phase ends before
/// the next begins.
///
/// Possible states:
/// 1. Inside a phase: ``takeChunk(into:maxCount:now:)`` hands out records.
/// 2. At a phase mark: the mark is held in `pendingMark`, every take returns `false` until the
///    driver calls ``beginPhase()`` (after all tasks of the phase returned).
/// 3. Exhausted or past the deadline: takes return `false`, ``beginPhase()`` returns `nil`.
final class ReplaySource: Sendable {
    private struct State {
        /// An existential, so the tasks that share the source are not generic over the stream's
        /// type (one dynamic call per record, made under the lock anyway).
        var iterator: any IteratorProtocol<TraceRecord> & SendableMetatype
        var nextIndex: UInt64 = 0
        /// A record read to look for a phase mark at the start that was not one: handed out first.
        var carried: IndexedRecord?
        var pendingMark: TraceRecord?
        var started = false
        var exhausted = false
        var deadline: UInt64?
        var stoppedAtDeadline = false

        mutating func pull() -> IndexedRecord? {
            guard let record = iterator.next() else {
                exhausted = true
                return nil
            }
            defer { nextIndex += 1 }
            return IndexedRecord(index: nextIndex, record: record)
        }
    }

    private let state: Mutex<State>

    init(_ iterator: sending some IteratorProtocol<TraceRecord> & SendableMetatype) {
        state = Mutex(State(iterator: iterator))
    }

    /// Whether the deadline ended the replay.
    var stoppedAtDeadline: Bool { state.withLock { $0.stoppedAtDeadline } }

    /// Moves to the next phase: its kind, the due time its records are scheduled from, and
    /// `deadline` (a clock time) set for it; `nil` when the stream is over.
    ///
    /// Records before the first phase mark make a `.run` phase anchored at the first record's
    /// time. A phase mark's own time anchors its phase.
    func beginPhase(deadline: (TracePhase) -> UInt64?) -> (phase: TracePhase, anchorNanoseconds: UInt64)? {
        state.withLock { state in
            if state.stoppedAtDeadline { return nil }
            let phase: TracePhase
            let anchor: UInt64
            if let mark = state.pendingMark {
                state.pendingMark = nil
                guard case .phase(let markPhase) = mark.operation else { return nil }
                (phase, anchor) = (markPhase, mark.nanoseconds)
            } else if !state.started, let first = state.pull() {
                if case .phase(let markPhase) = first.record.operation {
                    (phase, anchor) = (markPhase, first.record.nanoseconds)
                } else {
                    state.carried = first
                    (phase, anchor) = (.run, first.record.nanoseconds)
                }
            } else {
                return nil
            }
            state.started = true
            state.deadline = deadline(phase)
            return (phase, anchor)
        }
    }

    /// Replaces `buffer`'s contents with up to `maxCount` records of the current phase; `false`
    /// when the phase has none left (its end, the stream's, or the deadline at `now`).
    func takeChunk(into buffer: inout [IndexedRecord], maxCount: Int, now: UInt64) -> Bool {
        buffer.removeAll(keepingCapacity: true)
        return state.withLock { state in
            if let deadline = state.deadline, now >= deadline {
                state.stoppedAtDeadline = true
                return false
            }
            if let carried = state.carried {
                buffer.append(carried)
                state.carried = nil
            }
            while buffer.count < maxCount, state.pendingMark == nil, !state.exhausted, !state.stoppedAtDeadline {
                guard let next = state.pull() else { break }
                if case .phase = next.record.operation {
                    state.pendingMark = next.record
                } else {
                    buffer.append(next)
                }
            }
            return !buffer.isEmpty
        }
    }
}
