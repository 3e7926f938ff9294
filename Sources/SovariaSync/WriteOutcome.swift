import SovariaQueue

/// What ``SovariaOffline/write(_:)`` did with a write.
public enum WriteOutcome: Sendable, Hashable {
    /// Sent at once (online, nothing pending) and not refused: the server's answer, 2xx when it
    /// took the write; 401 (and any other status that is neither a refusal nor one to try later)
    /// leaves the write to the app.
    case sent(DataResponse)
    /// Kept in the durable queue (offline, writes pending, or the server asked to try later):
    /// it is sent in order by a later flush.
    case queued(QueuedWrite)
    /// Sent at once and not applied: refused by the server (a 4xx other than 401, 408 and 429),
    /// matching no row, or in conflict (`RejectedWrite.reason`). The write is in the rejected list
    /// and was reported as ``SyncError/Kind/rejected(_:)``, as for a queued write.
    case rejected(RejectedWrite)
}
