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
