/// The one error a ``SyncTransport`` throws: a stable ``Code`` to match on and a message that says
/// what to do.
///
/// The controller recognises ``Code/offline``: writes wait in the queue, reads fall back to the
/// cache. Any other code fails the request like any other error: a queued write stays at the head
/// and is tried again later, a read or a direct write throws it.
///
/// ```swift
/// do { _ = try await transport.send(request) } catch let error as SyncTransportError where error.code == .offline {
///     // no network: try again later
/// }
/// ```
public struct SyncTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What went wrong, stable across releases; new codes may be added.
    public var code: Code
    /// What happened and what to do next.
    public var message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The request did not reach the server for lack of network (``Code/offline``); `message`
    /// says which request and why.
    public static func offline(_ message: String) -> SyncTransportError {
        SyncTransportError(.offline, message)
    }

    /// `"code: message"`.
    public var description: String { "\(code): \(message)" }

    /// A stable, extensible error code: match it with `==` or in a `switch`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private let name: String

        private init(_ name: String) { self.name = name }

        /// The request did not reach the server: no network, the host could not be reached, the
        /// connection was lost or timed out. Writes wait in the queue; reads fall back to the cache.
        public static let offline = Code("offline")
        /// The request cannot be sent as it is (its path makes no URL the transport can reach):
        /// fix the request or the transport's base URL.
        public static let invalidRequest = Code("invalidRequest")
        /// The answer was not one the transport understands (not HTTP): check the base URL points
        /// at the API.
        public static let invalidResponse = Code("invalidResponse")
        /// The request was made for an account (``SovariaOffline/sendingAccount``) and the
        /// transport holds no credentials of that account: its token provider gave none, or a
        /// token issued to another user. The request was not sent with it (after a 401, the first
        /// try went with the token refreshed away; a write's retry keeps its idempotency key, so
        /// the server applies it once). A queued write waits in its queue,
        /// which pauses until ``SovariaOffline/flush()`` (``SyncError/Kind/wrongAccount``); a read
        /// throws it. Give the transport the account's token, then flush.
        public static let wrongAccount = Code("wrongAccount")
        /// The request failed for a reason other than the network; the message says which.
        public static let failed = Code("failed")

        /// The code's name, e.g. `"offline"`.
        public var description: String { name }
    }
}
