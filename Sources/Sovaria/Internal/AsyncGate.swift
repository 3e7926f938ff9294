import Synchronization

/// A first-come, first-served lock for async code: one holder at a time, waiters suspended
/// (not blocking a thread). The query cache and the write queue run their changes through one, so
/// their in-memory index and the store always change together; the controller runs its writes
/// through one, so that none overtakes another.
package final class AsyncGate: Sendable {
    private let state = Mutex<(held: Bool, waiters: [CheckedContinuation<Void, Never>])>((false, []))

    /// Creates an open gate.
    package init() {}

    /// Runs `body` once every earlier holder left; holders enter in the order they arrived.
    package func withGate<Result>(_ body: () async throws -> Result) async rethrows -> Result {
        await enter()
        defer { leave() }
        return try await body()
    }

    private func enter() async {
        if state.withLock({ state in
            guard !state.held else { return false }
            state.held = true
            return true
        }) {
            return
        }
        await withCheckedContinuation { continuation in
            let enterNow = state.withLock { state in
                guard state.held else {
                    state.held = true
                    return true
                }
                state.waiters.append(continuation)
                return false
            }
            if enterNow { continuation.resume() }
        }
    }

    /// How many callers wait to enter: for tests that must know a caller is queued.
    package var waiterCount: Int { state.withLock { $0.waiters.count } }

    private func leave() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiters.isEmpty else {
                state.held = false
                return nil
            }
            return state.waiters.removeFirst()  // the gate passes straight to the next waiter
        }
        next?.resume()
    }
}
