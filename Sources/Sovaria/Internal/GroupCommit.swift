import Synchronization

/// Group commit: writes that arrive while a commit is in flight join the next one, so concurrent
/// writers share one transaction and one flush to disk instead of queueing one commit each.
///
/// Each caller's ``write(_:)`` returns once the commit that held its item has finished (as
/// durable as that commit is) and gets its own item's outcome: `commit` reports one result per
/// item, so one caller's failed batch never fails another's. Items are never split or merged
/// into one another: `commit` sees them whole, in arrival order.
///
/// - Important: `commit` runs on `queue`, alone (a barrier), one group at a time.
package final class GroupCommit<Item: Sendable>: Sendable {
    /// Commits `items` together and returns each one's outcome, in order.
    package typealias Commit = @Sendable (_ items: [Item]) -> [Result<Void, any Error>]

    private struct Waiter: Sendable {
        let item: Item
        let size: Int
        let continuation: CheckedContinuation<Void, any Error>
    }

    private let state = Mutex<(waiting: [Waiter], draining: Bool)>(([], false))
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
            let leads = state.withLock { state in
                state.waiting.append(Waiter(item: item, size: size, continuation: continuation))
                defer { state.draining = true }
                return !state.draining
            }
            if leads { queue.submitAlone { self.commitNextGroup() } }
        }
    }

    /// How many items wait for a commit now (tests).
    package var waitingCount: Int { state.withLock { $0.waiting.count } }

    /// Commits the items waiting now (up to the bound), answers their callers, and hands the
    /// queue back before the next group, so other work on it is not held off by a stream of writes.
    private func commitNextGroup() {
        let group = state.withLock { state -> [Waiter] in
            var size = 0
            var count = 0
            for waiter in state.waiting {
                if count > 0, size + waiter.size > maxSizePerCommit { break }
                size += waiter.size
                count += 1
            }
            let group = Array(state.waiting.prefix(count))
            state.waiting.removeFirst(count)
            return group
        }
        let results = commit(group.map(\.item))
        for (index, waiter) in group.enumerated() {
            waiter.continuation.resume(
                with: index < results.count ? results[index] : .failure(CancellationError()))
        }
        let more = state.withLock { state in
            if state.waiting.isEmpty { state.draining = false }
            return !state.waiting.isEmpty
        }
        if more { queue.submitAlone { self.commitNextGroup() } }
    }
}
