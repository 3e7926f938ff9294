import Observation
import Synchronization

/// The sync status as an `@Observable` model a SwiftUI view reads directly: it follows
/// ``SovariaOffline/statusUpdates()`` on the main actor.
///
/// ```swift
/// struct SyncBadge: View {
///     let model: SyncStatusModel
///     var body: some View { Text(model.status.isOnline ? "\(model.status.pendingCount) waiting" : "offline") }
/// }
/// ```
///
/// - Important: Follows the controller until the model is released or the controller closes.
@MainActor @Observable
public final class SyncStatusModel {
    /// The latest status.
    public private(set) var status: SyncStatus
    /// The task that follows the updates, in a Sendable box the nonisolated `deinit` can reach.
    @ObservationIgnored private let following = FollowingTask()

    /// A model that follows `offline`'s status from now on.
    public init(following offline: SovariaOffline) {
        status = offline.status
        let updates = offline.statusUpdates()
        following.start { [weak self] in
            for await status in updates {
                guard let self else { return }
                if self.status != status { self.status = status }
            }
        }
    }

    deinit { following.cancel() }
}

/// A task a `deinit` on any thread can cancel.
final class FollowingTask: Sendable {
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Starts `body` on the main actor.
    @MainActor func start(_ body: @escaping @MainActor @Sendable () async -> Void) {
        task.withLock { $0 = Task { @MainActor in await body() } }
    }

    func cancel() { task.withLock { $0?.cancel() } }
}
