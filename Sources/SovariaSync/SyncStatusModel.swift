import Observation

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
    @ObservationIgnored private var following: Task<Void, Never>?

    /// A model that follows `offline`'s status from now on.
    public init(following offline: SovariaOffline) {
        status = offline.status
        let updates = offline.statusUpdates()
        following = Task { [weak self] in
            for await status in updates {
                guard let self else { return }
                if self.status != status { self.status = status }
            }
        }
    }

    isolated deinit { following?.cancel() }
}
