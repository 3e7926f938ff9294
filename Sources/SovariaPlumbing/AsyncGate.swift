import Synchronization

/// A first-come, first-served lock for async code: one holder at a time, waiters suspended (not
/// blocking a thread), a waiting task that is cancelled leaves the line with `CancellationError`.
///
/// The gate hands its body a ``GateToken`` that only the gate can make. A helper that must run
/// inside the gate takes the token as a `borrowing` parameter, so calling it outside the gate
/// does not compile, and the token cannot be kept for later. `Tag` names the gate, so one
/// type's token does not open another's helpers:
///
///     enum CacheWrites {}
///     let gate = AsyncGate<CacheWrites>()
///     func evictOldest(_ gated: borrowing GateToken<CacheWrites>) async throws { … }
///     try await gate.withGate { gated in try await evictOldest(gated) }
///
/// The query cache, the file cache and the write queue run their changes through one, so their
/// in-memory index and the store always change together; the controller runs its writes through
/// one, so that none overtakes another.
package final class AsyncGate<Tag>: Sendable {
    private struct Waiter {
        let id: UInt64
        let continuation: CheckedContinuation<Void, any Error>
    }

    private struct State {
        var held = false
        var nextWaiterID: UInt64 = 0
        var waiters: [Waiter] = []
    }

    private let state = Mutex(State())
    /// Called each time a caller starts to wait in the line: a test that holds the gate lets the
    /// holder go from here, so it knows the caller waited rather than guessing when it arrives.
    package let whenSomeoneWaits = Mutex<(@Sendable () -> Void)?>(nil)

    /// Creates an open gate.
    package init() {}

    /// Runs `body` once every earlier holder left; holders enter in the order they arrived.
    ///
    /// - Throws: `CancellationError` when the task is cancelled while it waits (it never entered),
    ///   or what `body` throws.
    package func withGate<Result>(
        _ body: (borrowing GateToken<Tag>) async throws -> Result
    ) async throws -> Result {
        try await enter()
        defer { leave() }
        return try await body(GateToken())
    }

    private enum Entry {
        case enter
        case cancelled
        case wait
    }

    private func enter() async throws {
        let id: UInt64? = state.withLock { state in
            guard state.held else {
                state.held = true
                return nil
            }
            state.nextWaiterID += 1
            return state.nextWaiterID
        }
        guard let id else { return }
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let entry = state.withLock { state -> Entry in
                    guard state.held else {
                        state.held = true
                        return .enter
                    }
                    // Checked under the lock: a cancellation that ran its handler before this
                    // waiter was in the line is seen here.
                    if Task.isCancelled { return .cancelled }
                    state.waiters.append(Waiter(id: id, continuation: continuation))
                    return .wait
                }
                switch entry {
                case .enter: continuation.resume()
                case .cancelled: continuation.resume(throwing: CancellationError())
                case .wait: whenSomeoneWaits.withLock { $0 }?()
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            // A waiter already handed the gate is not in the line: it enters and its body runs.
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// How many callers wait to enter: for tests that must know a caller is queued.
    package var waiterCount: Int { state.withLock { $0.waiters.count } }

    private func leave() {
        let next = state.withLock { state -> Waiter? in
            guard !state.waiters.isEmpty else {
                state.held = false
                return nil
            }
            return state.waiters.removeFirst()  // the gate passes straight to the next waiter
        }
        next?.continuation.resume()
    }
}

/// Proof that the code holding it runs inside an ``AsyncGate`` with the same `Tag`: only the gate
/// makes one, and a `borrowing` parameter cannot be stored or sent elsewhere.
package struct GateToken<Tag>: ~Copyable {
    fileprivate init() {}
}
