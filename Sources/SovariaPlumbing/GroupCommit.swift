import Foundation

/// Group commit: writes that arrive while a commit is in flight join the next one, so concurrent
/// writers share one transaction and one flush to disk instead of queueing one commit each.
///
/// Each caller's ``write(_:size:)`` returns once the commit that held its item has finished (as
/// durable as that commit is) and gets its own item's outcome: `commit` reports one result per
/// item, so one caller's failed batch never fails another's. Items are never split or merged
/// into one another: `commit` sees them whole, in arrival order.
///
/// The callers a commit answers come back with their next writes a moment later, and a commit
/// started at once would take the first of them alone. A commit after a group of `n` therefore
/// gathers first: until `n` items wait, or for half the last commit's time (at most
/// ``maxGathering``), whichever comes first; it gathers in a plain block of the queue, so reads
/// on the queue go on meanwhile. One writer never waits (its group is one), and a group that
/// shrinks pays the wait once.
///
/// - Important: `commit` runs on `queue`, alone (a barrier), one group at a time: the caller whose
///   item finds no group in flight schedules one, and each group schedules the next while items
///   wait (the rules of ``Line``).
package final class GroupCommit<Item: Sendable>: Sendable {
    /// Commits `items` together and returns each one's outcome, in order.
    package typealias Commit = @Sendable (_ items: [Item]) -> [Result<Void, any Error>]

    /// The longest a commit gathers for the writers of the group before it.
    package static var maxGathering: Duration { .milliseconds(1) }

    private struct Waiter {
        let item: Item
        let size: Int
        let continuation: CheckedContinuation<Void, any Error>
    }

    /// The items waiting and whether a group is in flight; changed only through its methods,
    /// which keep the rule that one group at a time is scheduled or committing, and that a group
    /// in flight exists whenever items wait.
    private struct Line {
        private var waiting: [Waiter] = []
        /// Whether a group is scheduled or committing: its end schedules the next one.
        private var groupInFlight = false
        /// The size of the last group, and how long its commit took.
        private(set) var lastGroupCount = 1
        private(set) var lastCommit = Duration.zero

        var waitingCount: Int { waiting.count }

        /// Whether the next group should gather before it commits (see ``GroupCommit``).
        var shouldGather: Bool { waiting.count < lastGroupCount }

        /// How long the next group gathers at most.
        var gathering: Duration { min(lastCommit / 2, GroupCommit.maxGathering) }

        /// Adds `waiter`; `true` when no group is in flight, so the caller must schedule one.
        mutating func join(_ waiter: Waiter) -> Bool {
            waiting.append(waiter)
            defer { groupInFlight = true }
            return !groupInFlight
        }

        /// Takes the next group: the waiting items, in order, up to `maxSize` (at least one).
        mutating func takeGroup(maxSize: Int) -> [Waiter] {
            var size = 0
            var count = 0
            for waiter in waiting {
                if count > 0, size + waiter.size > maxSize { break }
                size += waiter.size
                count += 1
            }
            defer { waiting.removeFirst(count) }
            return Array(waiting.prefix(count))
        }

        /// Records the group that just committed: `count` items, in `took`.
        mutating func record(groupOf count: Int, took: Duration) {
            lastGroupCount = count
            lastCommit = took
        }

        /// Ends the group in flight: `true` when items wait, and the caller must schedule the
        /// next group; else no group is in flight.
        mutating func endGroup() -> Bool {
            groupInFlight = !waiting.isEmpty
            return groupInFlight
        }
    }

    /// The line, and the signal a gathering commit waits on; the lock is held only briefly.
    private let line = ConditionLocked(Line())
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
            let leads = line.withLockSignalling { line in
                line.join(Waiter(item: item, size: size, continuation: continuation))
            }
            if leads { scheduleNextGroup() }
        }
    }

    /// How many items wait for a commit now (tests).
    package var waitingCount: Int { line.withLock { $0.waitingCount } }

    /// How many items the last commit took (tests).
    package var lastGroupCount: Int { line.withLock { $0.lastGroupCount } }

    /// Queues the next commit. When it should gather first (see the type), it gathers in a plain
    /// block of the queue, beside the reads, and takes the barrier only after.
    private func scheduleNextGroup() {
        guard line.withLock({ $0.shouldGather }) else { return queue.submitAlone { self.commitNextGroup() } }
        queue.submitConcurrently {
            self.gather()
            self.queue.submitAlone { self.commitNextGroup() }
        }
    }

    /// Waits until as many items wait as the last group had, or for half the last commit's
    /// time (at most ``maxGathering``).
    private func gather() {
        line.wait(for: { $0.gathering }, while: { $0.shouldGather })
    }

    /// Commits the items waiting now (up to the bound), answers their callers, and hands the
    /// queue back before the next group, so other work on it is not held off by a stream of
    /// writes.
    private func commitNextGroup() {
        var group = line.withLock { $0.takeGroup(maxSize: maxSizePerCommit) }
        var items = group.map(\.item)
        let continuations = group.map(\.continuation)
        group.removeAll()

        let started = ContinuousClock.now
        let results = commit(items)
        let took = ContinuousClock.now - started
        // Let go of the items (and what they hold, a store's handle) before any caller resumes:
        // a store released right after its last write returns is then really closed. The count
        // is recorded first too, so a caller that returns sees this group's.
        items.removeAll()
        line.withLock { $0.record(groupOf: continuations.count, took: took) }
        for (index, continuation) in continuations.enumerated() {
            continuation.resume(with: index < results.count ? results[index] : .failure(CancellationError()))
        }
        if line.withLock({ $0.endGroup() }) { scheduleNextGroup() }
    }
}

/// A value and the condition variable that guards it, as one object (swift-nio's
/// `NIOLockedValueBox`, with a wait): the value is reachable only holding the lock.
// @unchecked: `value` is touched only holding `condition`.
private final class ConditionLocked<Value>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value

    init(_ value: Value) {
        self.value = value
    }

    /// Runs `body` with the value, holding the lock.
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        condition.lock()
        defer { condition.unlock() }
        return body(&value)
    }

    /// Runs `body` with the value, holding the lock, then wakes one thread in ``wait(for:while:)``.
    func withLockSignalling<Result>(_ body: (inout Value) -> Result) -> Result {
        defer { condition.signal() }
        return withLock(body)
    }

    /// Waits, holding the lock between wake-ups, while `predicate` holds, for at most the time
    /// `timeout` gives when the wait begins.
    func wait(for timeout: (Value) -> Duration, while predicate: (Value) -> Bool) {
        condition.lock()
        defer { condition.unlock() }
        let deadline = Date(timeIntervalSinceNow: timeout(value).timeInterval)
        while predicate(value), condition.wait(until: deadline) {}
    }
}
