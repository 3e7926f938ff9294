import Foundation

/// What a fetch closure passed to ``QueryCache/read(_:policy:maxAge:fetch:)`` returns.
public enum FetchResult: Sendable, Hashable {
    /// A new body, with the server's time and ETag, and the change-feed position the server
    /// said it is current to (``CachedResponse/position``).
    case response(body: String, serverTime: Date, etag: String?, position: Int64? = nil)
    /// The server answered 304 Not Modified to the cached ETag: keep the cached body.
    case notModified(serverTime: Date)
}
