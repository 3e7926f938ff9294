import Foundation
import SovariaQueue

/// A problem syncing the queue, delivered by ``SovariaOffline/syncErrors`` and
/// ``SovariaOffline/onSyncError``.
public struct SyncError: Error, Sendable, Hashable {
    /// What happened.
    public enum Kind: Sendable, Hashable {
        /// The write did not apply: the server refused it (a 4xx other than 401, 408 and 429), it
        /// matched no row, or its row changed since it was read (`RejectedWrite.reason` says
        /// which). It moved to the rejected list, and the writes behind it go on.
        case rejected(RejectedWrite)
        /// The server asked to try later (408, 429, 5xx): the write stays at the head of the
        /// queue, and the next try waits `retryAfter`.
        case retryLater(status: Int, retryAfter: Duration)
        /// The server answered 401 even after the token refresh hook ran: the queue is paused
        /// until the next ``SovariaOffline/flush()``. A 401 never rejects a write.
        case unauthorized
        /// The transport would have sent the write with another account's credentials, or none
        /// (``SyncTransportError/Code/wrongAccount``): it did not go with them, the write stays at the
        /// head of its queue, and the queue is paused until the next ``SovariaOffline/flush()``.
        case wrongAccount
        /// The write at the head has failed `attempts` times since `since`: the queue is not
        /// moving, and says so instead of stalling silently.
        case stalled(attempts: Int, since: Date)
        /// A flush could not reach the server for lack of network: the write stays at the head of
        /// the queue until the network is back. Shown in ``SovariaOffline/status`` only, not
        /// delivered by ``SovariaOffline/syncErrors``: it is a state, not news.
        case offline
    }

    /// What happened.
    public let kind: Kind
    /// The write it is about.
    public let write: QueuedWrite
    /// What the server said (its body), or what went wrong.
    public let message: String
}
