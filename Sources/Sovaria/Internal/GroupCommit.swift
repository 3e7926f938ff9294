import Foundation

/// Group commit: writes that arrive while a commit is in flight join the next one, so concurrent
/// writers share one transaction and one flush to disk instead of queueing one commit each.
///
/// Each caller's ``write(_:size:)`` returns once the commit that held its item has finished (as
/// durable as that commit is) and gets its own item's outcome: `commit` reports one result per
/// item, so one caller's failed batch never fails another's. Items are never split or merged
/// into one another: `commit` sees them whole, in arrival order.
///
/// The callers a commit answers come back with their next writes a moment later, and the first
/// of them used to start the next commit alone, so groups alternated between one write and the
/// rest. A commit after a group of `n` therefore gathers for a moment first: until `n` items
/// wait, or for half the last commit's time (at most ``maxGathering``), whichever comes first;
/// it gathers in a plain block of the queue, so reads on the queue go on meanwhile.
/// One writer never waits (its group is one), and a group that shrinks pays the wait once.
///
/// - Important: `commit` runs on `queue`, alone (a barrier), one group at a time.
package final class GroupCommit<Item: Sendable>: Sendable {
    /// Commits `items` together and returns each one's outcome, in order.
    package typealias Commit = @Sendable (_ items: [Item]) -> [Result<Void, any Error>]

    /// The longest a commit gathers for the writers of the group before it.
    package static var maxGathering: Duration { .milliseconds(1) }

    private struct Waiter: Sendable {
        let item: Item
        let size: Int
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var waiting: [Waiter] = []
        var draining = false
        /// The size of the last group, and how long its commit took.
        var lastGroupCount = 1
        var lastCommit = Duration.zero
    }

    /// The state, and the signal a gathering commit waits on; the lock is held only briefly.
    private let condition = NSCondition()
    nonisolated(unsafe) private var state = State()  // guarded by `condition`
    private let queue: BlockingWorkQueue
    private let maxSizePerCommit: Int
    private let commit: Commit

    /// A group committer running `commit` on `queue`; one commit takes items up to
    /// `maxSizePerCommit` in size (at least one item).
    package init(queue: BlockingWorkQueue, maxSizePerCommit: Int, commit: @escaping Commit) {
        self.queue = queue
        self.maxSizePerCommit = maxSizePerCommit
        self.commit = commit
    }

    /// Commits `item` with whatever else is waiting; `size` counts toward the per-commit bound.
    package func write(_ item: Item, size: Int) async throws {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
            let leads = locked { state in
                state.waiting.append(Waiter(item: item, size: size, continuation: continuation))
                defer { state.draining = true }
                return !state.draining
            }
            condition.signal()
            if leads { scheduleNextGroup() }
        }
    }

    /// How many items wait for a commit now (tests).
    package var waitingCount: Int { locked { $0.waiting.count } }

    /// How many items the last commit took (tests).
    package var lastGroupCount: Int { locked { $0.lastGroupCount } }

    private func locked<Result>(_ body: (inout State) -> Result) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return body(&state)
    }

    /// Queues the next commit. When it should gather first (see the type), it gathers in a plain
    /// block of the queue, beside the reads, and takes the barrier only after.
    private func scheduleNextGroup() {
        let gathers = locked { state in state.waiting.count < state.lastGroupCount }
        guard gathers else { return queue.submitAlone { self.commitNextGroup() } }
        queue.submitConcurrently {
            self.gather()
            self.queue.submitAlone { self.commitNextGroup() }
        }
    }

    /// Waits until as many items wait as the last group had, or for half the last commit's
    /// time (at most ``maxGathering``).
    private func gather() {
        condition.lock()
        defer { condition.unlock() }
        let gathering = min(state.lastCommit / 2, Self.maxGathering)
        let deadline = Date(timeIntervalSinceNow: gathering.timeInterval)
        while state.waiting.count < state.lastGroupCount, condition.wait(until: deadline) {}
    }

    /// Commits the items waiting now (up to the bound), answers their callers, and hands the
    /// queue back before the next group, so other work on it is not held off by a stream of
    /// writes.
    private func commitNextGroup() {
        condition.lock()
        var size = 0
        var count = 0
        for waiter in state.waiting {
            if count > 0, size + waiter.size > maxSizePerCommit { break }
            size += waiter.size
            count += 1
        }
        var items = state.waiting.prefix(count).map(\.item)
        let continuations = state.waiting.prefix(count).map(\.continuation)
        state.waiting.removeFirst(count)
        condition.unlock()

        let started = ContinuousClock.now
        let results = commit(items)
        let took = ContinuousClock.now - started
        // Let go of the items (and what they hold, a store's handle) before any caller resumes:
        // a store released right after its last write returns is then really closed. The count
        // is recorded first too, so a caller that returns sees this group's.
        items.removeAll()
        locked { state in
            state.lastGroupCount = continuations.count
            state.lastCommit = took
        }
        for (index, continuation) in continuations.enumerated() {
            continuation.resume(with: index < results.count ? results[index] : .failure(CancellationError()))
        }
        let more = locked { state in
            if state.waiting.isEmpty { state.draining = false }
            return !state.waiting.isEmpty
        }
        if more { scheduleNextGroup() }
    }
}
