import Foundation

/// What a fetch closure passed to ``QueryCache/read(_:policy:maxAge:fetch:)`` returns.
public enum FetchResult: Sendable, Hashable {
    /// A new body, with the server's time and ETag, the change-feed position the server
    /// said it is current to (``CachedResponse/position``), and the response headers to keep
    /// with it (``CachedResponse/headers``).
    case response(
        body: String, serverTime: Date, etag: String?, position: Int64? = nil, headers: [String: String] = [:])
    /// The server answered 304 Not Modified to the cached ETag: keep the cached body.
    case notModified(serverTime: Date)
}
