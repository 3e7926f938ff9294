/// An error of the write queue itself: a stable ``Code`` to match on and a message that says
/// what to do. The store's own failures pass through unchanged as `OfflineStoreError`.
///
/// ```swift
/// do { try await queue.enqueue(request) } catch let error as WriteQueueError where error.code == .queueFull {
///     // send or drop queued writes, then try again
/// }
/// ```
public struct WriteQueueError: Error, Sendable, CustomStringConvertible {
    /// What went wrong, stable across releases; new codes may be added.
    public var code: Code
    /// What happened and what to do next.
    public var message: String
    /// The client id the failing call was about, when there is one.
    public var writeID: String?

    /// Creates an error.
    public init(_ code: Code, _ message: String, writeID: String? = nil) {
        self.code = code
        self.message = message
        self.writeID = writeID
    }

    /// `"code: message"`.
    public var description: String { "\(code): \(message)" }

    /// A stable, extensible error code: match it with `==` or in a `switch`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) { self.name = name }

        /// The queue already holds as many writes as it may (``WriteQueue/maxQueued``; the
        /// message starts with `OFFLINE_QUEUE_FULL`): nothing was queued. Send or remove queued
        /// writes, then try again.
        public static let queueFull = Code("queueFull")
        /// No rejected write has the given client id: it was requeued, discarded or cleared.
        public static let notFound = Code("notFound")
        /// The client id passed to ``WriteQueue/enqueue(_:id:)`` cannot be used: empty, longer than
        /// 128 bytes, holding a control character, or already queued. Nothing was queued.
        public static let invalidClientID = Code("invalidClientID")

        /// The code's name, e.g. `"queueFull"`.
        public var description: String { name }
    }
}
