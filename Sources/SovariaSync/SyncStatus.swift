import Foundation

/// Where a controller's sync stands, from ``SovariaOffline/status`` and
/// ``SovariaOffline/statusUpdates()``: what a screen shows as "offline, 3 waiting".
public struct SyncStatus: Sendable, Hashable {
    /// `false` after a request failed for lack of network; `true` after one reached the server.
    public var isOnline: Bool
    /// Writes waiting in the queue.
    public var pendingCount: Int
    /// Writes the server refused, kept in the rejected list.
    public var rejectedCount: Int
    /// Whether a flush is running.
    public var isFlushing: Bool
    /// When a queued write last synced (by the controller's clock), in this run.
    public var lastSyncedAt: Date?
    /// The last sync error, until a write syncs again.
    public var lastError: SyncError?
    /// When the head write may be sent again after a retryable answer, if it must wait.
    public var nextRetryAt: Date?
    /// Whether the queue waits for ``SovariaOffline/flush()`` after a second 401.
    public var isPausedForAuthorization: Bool
    /// Writes whose rows changed on the server since they were read, waiting for the app to
    /// resolve them (``SovariaOffline/conflicts()``).
    public var conflictCount: Int = 0
    /// Queued writes that wait because they touch a row in conflict: they go once the app
    /// resolves or drops it. Counted by the last flush.
    public var waitingOnConflictCount: Int = 0
}
