/// ``MemoryCache`` of strings by string, for the benchmark's comparison with `NSCache`
/// (`sovaria-bench`, in the Benchmarks package). SPI, not API: ``MemoryCache`` stays package,
/// its hot paths inlined into this module's callers.
@_spi(Benchmarks) public final class StringMemoryCache: Sendable {
    private let cache: MemoryCache<String, String>

    /// A cache holding at most `countLimit` entries and `costLimit` total cost.
    public init(countLimit: Int, costLimit: Int) {
        cache = MemoryCache(countLimit: countLimit, costLimit: costLimit)
    }

    /// ``MemoryCache/value(forKey:)``.
    public func value(forKey key: String) -> String? { cache.value(forKey: key) }

    /// ``MemoryCache/set(_:forKey:cost:)``.
    public func set(_ value: String, forKey key: String, cost: Int = 1) { cache.set(value, forKey: key, cost: cost) }
}

@_spi(Benchmarks) extension QueryCache {
    /// The prefix of every response key in the store: the bench reads a page's own records
    /// under it to time the store's batch of them.
    public static var responseKeyPrefix: String { CacheKeys.responsePrefix }
}
