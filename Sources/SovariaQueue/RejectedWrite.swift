import Foundation

/// A queued write the server refused (a 4xx other than 401, 408 and 429): kept in the
/// ``WriteQueue``'s rejected list with the server's answer, so the app can show it, send it
/// again (``WriteQueue/requeue(_:)``) or drop it (``WriteQueue/discard(_:)``).
public struct RejectedWrite: Sendable, Hashable, Codable, Identifiable {
    /// The write's client id.
    public var id: String { write.id }
    /// The write as it was when the server refused it.
    public let write: QueuedWrite
    /// The HTTP status the server answered.
    public let status: Int
    /// The server's message.
    public let message: String
    /// When the write was rejected (by the queue's clock, to the millisecond).
    public let rejectedAt: Date

    /// A rejected write as the queue makes them; for tests and tools
    /// (``WriteQueue/reject(_:status:message:)`` makes the real ones).
    public init(write: QueuedWrite, status: Int, message: String, rejectedAt: Date) {
        self.write = write
        self.status = status
        self.message = message
        self.rejectedAt = rejectedAt
    }
}
