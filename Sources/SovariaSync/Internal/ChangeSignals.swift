import Synchronization

/// Tells live queries and status followers that something changed: a table's writes, its
/// cached answers, or everything (an eviction, a clear). Signals coalesce: a follower that is
/// busy sees one signal for a burst, never one per write.
final class ChangeSignals: Sendable {
    private struct Follower {
        /// `nil`: every change.
        let table: String?
        let continuation: AsyncStream<Void>.Continuation
    }

    /// The followers: changed together, under one lock that never holds another.
    private struct State {
        var next: UInt64 = 0
        var all: [UInt64: Follower] = [:]
        /// ``finish()`` ran: later followers end at once.
        var finished = false
    }

    private let followers = Mutex(State())
    /// Counted apart from the followers: read on every local-first read, without the lock.
    private let changes = Atomic<UInt64>(0)

    /// How many changes there have been: an answer computed at one version is current while the
    /// version stays.
    var version: UInt64 { changes.load(ordering: .acquiring) }

    /// A stream with one element per burst of changes to `table` (`nil`: any change), until
    /// ``finish()`` or the follower stops iterating.
    func follow(table: String?) -> AsyncStream<Void> {
        let (stream, continuation) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let token = followers.withLock { state -> UInt64? in
            guard !state.finished else { return nil }
            state.next += 1
            state.all[state.next] = Follower(table: table, continuation: continuation)
            return state.next
        }
        guard let token else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.followers.withLock { $0.all.removeValue(forKey: token) }
        }
        return stream
    }

    /// Signals the followers of `table` and of every change; `nil` signals everyone.
    func changed(table: String?) {
        changes.add(1, ordering: .releasing)
        let targets = followers.withLock { state in
            state.all.values.filter { table == nil || $0.table == nil || $0.table == table }.map(\.continuation)
        }
        for continuation in targets { continuation.yield() }
    }

    /// Signals the followers of every change only (status followers): nothing a table shows changed.
    func statusChanged() {
        let targets = followers.withLock { state in state.all.values.filter { $0.table == nil }.map(\.continuation) }
        for continuation in targets { continuation.yield() }
    }

    /// Ends every stream, and every later one at once (the controller closed).
    func finish() {
        let all = followers.withLock { state in
            state.finished = true
            defer { state.all = [:] }
            return Array(state.all.values)
        }
        for follower in all { follower.continuation.finish() }
    }
}
