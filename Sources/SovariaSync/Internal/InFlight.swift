import Synchronization

/// The controller's reads and writes under way: ``SovariaOffline/close()`` and
/// ``SovariaOffline/signOut(keepingUnsyncedWrites:)`` wait for them to end, so nothing the
/// controller started sends or stores after they return (the app may then give the transport
/// another user's token).
final class InFlight: Sendable {
    private let state = Mutex((count: 0, closed: false, drained: [CheckedContinuation<Void, Never>]()))
    /// Called each time ``closeAndDrain()`` starts to wait for work under way: a test lets that
    /// work end from here, so a close that did not wait is seen returning before it.
    let whenCloseWaits = Mutex<(@Sendable () -> Void)?>(nil)

    /// How many are under way.
    var count: Int { state.withLock { $0.count } }

    /// Counts one more until `leave()`.
    ///
    /// - Throws: ``SovariaOfflineError`` with ``SovariaOfflineError/Code/closed`` once
    ///   ``closeAndDrain()`` began: nothing starts after it.
    func enter() throws {
        let closed = state.withLock { state in
            if !state.closed { state.count += 1 }
            return state.closed
        }
        if closed { throw SovariaOfflineError(.closed, "This SovariaOffline was closed: make a new one to go on.") }
    }

    /// Counts one less; the last one wakes whoever waits in ``drain()``.
    func leave() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.count -= 1
            guard state.count == 0 else { return [] }
            defer { state.drained = [] }
            return state.drained
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Lets none start any more, and returns once none is under way.
    func closeAndDrain() async {
        await withCheckedContinuation { continuation in
            let done = state.withLock { state in
                state.closed = true
                if state.count == 0 { return true }
                state.drained.append(continuation)
                return false
            }
            if done {
                continuation.resume()
            } else {
                whenCloseWaits.withLock { $0 }?()
            }
        }
    }
}
