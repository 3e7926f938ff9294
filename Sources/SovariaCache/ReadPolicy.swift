/// How ``QueryCache/read(_:policy:maxAge:fetch:)`` uses the cache and the network.
public enum ReadPolicy: Sendable, Hashable {
    /// The cached result when it is fresh; otherwise fetch, store and return. When the fetch
    /// fails and a cached copy exists, that copy is returned (offline-first).
    case cacheFirstThenNetwork
    /// The cached result, fresh or not; `nil` ("no data") when there is none. Never fetches.
    case cacheOnly
    /// Always fetch, store and return; errors are thrown. The answer comes from a fetch that
    /// started after the read began (shared with the reads that asked at the same time), never
    /// from one already running or finished.
    case networkOnly
    /// The cached result at once, with a refresh started behind it when it is stale or older
    /// than `maxAge`; fetches like ``cacheFirstThenNetwork`` when nothing is cached.
    case staleWhileRevalidate
}
