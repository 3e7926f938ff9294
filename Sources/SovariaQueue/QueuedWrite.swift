import Foundation

/// A write waiting in the ``WriteQueue``: the request, the client id it is sent with, and how
/// its tries went so far.
public struct QueuedWrite: Sendable, Hashable, Codable, Identifiable {
    /// The client id (a lowercase UUID string), made when the write was queued and kept for its
    /// whole life, requeues included: send it as the `Idempotency-Key` header, so a write that
    /// reached the server before a crash or a lost answer is not applied twice.
    public let id: String
    /// The write's place in the queue: only grows, across restarts and crashes. A requeued write
    /// gets a new one.
    public let sequence: UInt64
    /// What to send.
    public let request: DataRequest
    /// When the write was queued (by the queue's clock, to the millisecond).
    public let queuedAt: Date
    /// How many tries have failed so far (``WriteQueue/recordFailure(_:message:)``).
    public var attempts: Int
    /// What the last failed try said, if one failed.
    public var lastError: String?

    /// A queued write as the queue makes them; for tests and tools (`WriteQueue.enqueue(_:)`
    /// makes the real ones).
    public init(
        id: String, sequence: UInt64, request: DataRequest, queuedAt: Date, attempts: Int = 0, lastError: String? = nil
    ) {
        self.id = id
        self.sequence = sequence
        self.request = request
        self.queuedAt = queuedAt
        self.attempts = attempts
        self.lastError = lastError
    }
}
