import SovariaQueue

/// What ``SovariaOffline/write(_:)`` did with a write.
public enum WriteOutcome: Sendable, Hashable {
    /// Sent at once (online, nothing pending): the server's answer, whatever its status.
    case sent(DataResponse)
    /// Kept in the durable queue (offline, writes pending, or the server asked to try later):
    /// it is sent in order by a later flush.
    case queued(QueuedWrite)
}
