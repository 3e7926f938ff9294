import Synchronization

/// A task a `deinit` on any thread can cancel.
final class FollowingTask: Sendable {
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Starts `body` on the main actor.
    @MainActor func start(_ body: @escaping @MainActor @Sendable () async -> Void) {
        task.withLock { $0 = Task { @MainActor in await body() } }
    }

    func cancel() { task.withLock { $0?.cancel() } }
}
