import Foundation

/// Where a controller's sync stands, from ``SovariaOffline/status`` and
/// ``SovariaOffline/statusUpdates()``: what a screen shows as "offline, 3 waiting".
public struct SyncStatus: Sendable, Hashable {
    /// What the controller knows of the network: nothing yet, reachable, or not.
    public var network: Network
    /// `false` after a request failed for lack of network, until one reaches the server; `true`
    /// otherwise, before anything was tried too (``network`` tells the two apart).
    public var isOnline: Bool { network != .unreachable }
    /// Writes waiting in the queue.
    public var pendingCount: Int
    /// Writes the server refused, kept in the rejected list.
    public var rejectedCount: Int
    /// Whether a flush is running.
    public var isFlushing: Bool
    /// When a queued write last synced (by the controller's clock), in this run.
    public var lastSyncedAt: Date?
    /// The last sync error, until a write syncs again; ``SyncError/Kind/offline`` while the last
    /// flush could not reach the server.
    public var lastError: SyncError?
    /// When the queue is tried again, while writes wait: after a retryable answer, when the head
    /// may be sent again; offline, the next periodic flush at the latest
    /// (``SovariaOffline/Configuration/flushInterval`` after the failed try), or at once when any
    /// request reaches the server.
    public var nextRetryAt: Date?
    /// Whether the queue waits for ``SovariaOffline/flush()``: after a second 401, or after the
    /// transport held no token of the controller's account (``SyncError/Kind/wrongAccount``).
    public var isPausedForAuthorization: Bool
    /// Writes whose rows changed on the server since they were read, waiting for the app to
    /// resolve them (``SovariaOffline/conflicts()``).
    public var conflictCount: Int = 0
    /// Queued writes that wait because they touch a row in conflict: they go once the app
    /// resolves or drops it. Counted by the last flush.
    public var waitingOnConflictCount: Int = 0
    /// Where the feed of each table pulled in this run stands (``SovariaOffline/pullChanges(of:wait:)``):
    /// its checkpoint, whether it caught up, its must-refetch count and last error.
    public var changeFeeds: [String: ChangeFeedStatus] = [:]
    /// Writes of other accounts waiting on this device for their author to open a controller
    /// (``SovariaOffline/Configuration/account``): a count, never their content. Counted when
    /// the controller opened.
    public var otherAccountsPendingCount: Int = 0

    /// What a controller knows of the network.
    public enum Network: Sendable, Hashable {
        /// Nothing was tried yet in this run.
        case untried
        /// The last request reached the server.
        case reachable
        /// The last request failed for lack of network.
        case unreachable
    }
}
