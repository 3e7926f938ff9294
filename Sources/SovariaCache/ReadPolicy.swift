import Foundation

/// How ``QueryCache/read(_:policy:maxAge:fetch:)`` uses the cache and the network.
public enum ReadPolicy: Sendable, Hashable {
    /// The cached result when it is fresh; otherwise fetch, store and return. When the fetch
    /// fails and a cached copy exists, that copy is returned (offline-first).
    case cacheFirstThenNetwork
    /// The cached result, fresh or not; `nil` ("no data") when there is none. Never fetches.
    case cacheOnly
    /// Always fetch, store and return; errors are thrown.
    case networkOnly
    /// The cached result at once, with a refresh started behind it when it is stale or older
    /// than `maxAge`; fetches like ``cacheFirstThenNetwork`` when nothing is cached.
    case staleWhileRevalidate
}

/// What a fetch closure passed to ``QueryCache/read(_:policy:maxAge:fetch:)`` returns.
public enum FetchResult: Sendable, Hashable {
    /// A new body, with the server's time and ETag.
    case response(body: String, serverTime: Date, etag: String?)
    /// The server answered 304 Not Modified to the cached ETag: keep the cached body.
    case notModified(serverTime: Date)
}

/// The answer of ``QueryCache/read(_:policy:maxAge:fetch:)``.
public struct CacheRead: Sendable, Hashable {
    /// Where the answer came from.
    public enum Source: Sendable, Hashable {
        /// The in-memory LRU layer.
        case memory
        /// The store on disk (the entry was copied up to memory).
        case store
        /// The fetch closure, just now.
        case network
        /// Nothing: a cache-only read of a query that is not cached.
        case none
    }

    /// The response, or `nil` for a cache-only miss.
    public let response: CachedResponse?
    /// Where it came from.
    public let source: Source
    /// Whether a refresh was started behind this answer (stale-while-revalidate).
    public let isRefreshing: Bool
}
