import Foundation
import SovariaQueue
import Synchronization

/// The writes synced in this run, and which of them each cached answer already holds: a synced
/// write stays in the answers fetched before it (no flicker between a sync and the refetch).
///
/// A fetch takes the sync count when it starts (``fetchStarted(_:)``); when its answer is stored
/// (``stored(_:)``) that count becomes the answer's baseline, and the writes synced after it are
/// the ones its overlay applies.
final class SyncedWrites: Sendable {
    private struct State {
        var count: UInt64 = 0
        var writes: [(number: UInt64, write: QueuedWrite, position: Int64?)] = []
        /// Each query's baseline: the sync count when its stored answer's fetch started.
        var baselines: [String: UInt64] = [:]
        /// The sync count when each running fetch started, until its answer is stored.
        var started: [String: UInt64] = [:]
        /// The queries a change feed marked stale in this run, until an answer is fetched.
        var staleAfterFeed: Set<String> = []
    }

    /// Synced writes kept; past this the oldest go (their answers may then flicker once).
    static let maxKept = 1_000

    private let state = Mutex(State())

    /// A write the server took; `position`: its change's in the feed, when the server said.
    func record(_ write: QueuedWrite, position: Int64? = nil) {
        state.withLock { state in
            state.count += 1
            state.writes.append((state.count, write, position))
            if state.writes.count > Self.maxKept { state.writes.removeFirst() }
        }
    }

    func fetchStarted(_ query: String) {
        state.withLock { $0.started[query] = $0.count }
    }

    /// The answer of `query` was stored: it holds the writes synced before its fetch started.
    func stored(_ query: String) {
        state.withLock { state in
            state.staleAfterFeed.remove(query)
            guard let started = state.started.removeValue(forKey: query) else { return }
            state.baselines[query] = max(state.baselines[query] ?? 0, started)
        }
    }

    /// How many writes synced so far in this run: a change feed that caught up after reading
    /// from this count on holds them all (``caughtUp(_:since:)``).
    var count: UInt64 { state.withLock { $0.count } }

    /// The answers of `queries` were brought up to date by a change feed that read the log to
    /// its end, to `checkpoint`, after `count` writes had synced: they hold those writes (their
    /// echoes, or later changes of their rows), so the overlay applies them no more. Not a write
    /// whose change is past the checkpoint (a transaction still running holds the feed short of
    /// it), nor any synced after it: the baseline stops there.
    func caughtUp(_ queries: [String], since count: UInt64, checkpoint: Int64?) {
        // Nothing synced before the read: every baseline is at least `count` already (a page of a
        // device that only reads, the common case, hashes none of its answers' queries).
        guard count > 0 else { return }
        state.withLock { state in
            // The writes an answer caught up to `checkpoint` may still lack, oldest first: those
            // counted by `count` whose position is past it (or not known yet).
            let held = state.writes.filter { write in
                guard write.number <= count, let position = write.position else { return false }
                return checkpoint.map { position > $0 } ?? true
            }.map(\.number)
            func raise(_ baseline: inout UInt64) {
                let first = held.first { $0 > baseline }
                baseline = max(baseline, first.map { $0 - 1 } ?? count)
            }
            for query in queries { raise(&state.baselines[query, default: 0]) }
        }
    }

    /// A change feed marked the cached answer of each of `queries` stale.
    func markedStaleByFeed(_ queries: [String]) {
        state.withLock { $0.staleAfterFeed.formUnion(queries) }
    }

    /// Whether a change feed marked the cached answer of `query` stale, and no answer was
    /// fetched since.
    func isStaleAfterFeed(_ query: String) -> Bool {
        state.withLock { $0.staleAfterFeed.contains(query) }
    }

    /// The sync count the cached answer of `query` holds (0: fetched before this run).
    func baseline(of query: String) -> UInt64 {
        state.withLock { $0.baselines[query] ?? 0 }
    }

    /// The writes of `table` (as `api` names tables) synced after the cached answer of `query` was
    /// fetched, oldest first.
    func writes(notIn query: String, table: String, api: any DataAPI) -> [QueuedWrite] {
        state.withLock { state in
            let baseline = state.baselines[query] ?? 0
            return state.writes.filter { $0.number > baseline && api.table(of: $0.write.request) == table }.map(\.write)
        }
    }

    /// Forgets everything (sign-out).
    func clear() {
        state.withLock { $0 = State() }
    }
}
