import Synchronization

/// Work that runs one at a time and, when asked for again while it runs, once more right after
/// it: the eviction pass behind an answer (query cache, file cache). Stacked runs would queue
/// their batches ahead of every write; one more run after the current one sees everything.
///
///     guard latch.start() else { return }
///     runInBackground { repeat { await work() } while latch.finishShouldRunAgain() }
package final class RunAgainLatch: Sendable {
    private let state = Mutex<(running: Bool, again: Bool)>((false, false))

    package init() {}

    /// `true` when nothing runs: the caller starts the work. Else the running work is told to run
    /// once more, and `false`.
    package func start() -> Bool {
        state.withLock { state in
            guard !state.running else {
                state.again = true
                return false
            }
            state.running = true
            return true
        }
    }

    /// Called when a run ends: `true` when it was asked for meanwhile (run again), else the
    /// latch is free for the next ``start()``.
    package func finishShouldRunAgain() -> Bool {
        state.withLock { state in
            let again = state.again
            state.again = false
            state.running = again
            return again
        }
    }
}
