/// Runs the controller's periodic flush: injected, so tests fire it by hand instead of waiting.
public protocol SyncTimer: Sendable {
    /// Calls `fire` every `interval` until the returned ticket is cancelled.
    func repeating(every interval: Duration, _ fire: @escaping @Sendable () async -> Void) -> SyncTimerTicket
}

/// A running ``SyncTimer``; ``cancel()`` stops it.
public struct SyncTimerTicket: Sendable {
    private let stop: @Sendable () -> Void

    /// A ticket that runs `stop` when cancelled.
    public init(cancel stop: @escaping @Sendable () -> Void) { self.stop = stop }

    /// Stops the timer; calling it again does nothing.
    public func cancel() { stop() }
}

/// The default timer: a task that sleeps `interval` between calls.
public struct TaskSyncTimer: SyncTimer {
    /// A timer.
    public init() {}

    /// Calls `fire` every `interval` on a task of its own until cancelled.
    public func repeating(every interval: Duration, _ fire: @escaping @Sendable () async -> Void) -> SyncTimerTicket {
        let task = Task {
            while !Task.isCancelled {
                try? await Task.sleep(for: interval)
                if Task.isCancelled { return }
                await fire()
            }
        }
        return SyncTimerTicket { task.cancel() }
    }
}
