import Foundation
import Sovaria

extension QueryCache {
    /// The options of a ``QueryCache``, as one value: the bound, the memory layer's limits and
    /// the clock. Every field has a default, so a configuration names only what it changes.
    ///
    /// The eviction rules (when a size check starts, how many responses a pass deletes per
    /// batch, how many shown responses are kept) are not options:
    /// see <doc:TheQueryCache#Size-and-eviction>.
    ///
    /// ```swift
    /// var configuration = QueryCache.Configuration()
    /// configuration.size = .bytes(20 << 20)
    /// configuration.memoryCountLimit = 200
    /// let cache = try await QueryCache(store: store, configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The bound on the cached response bodies (their summed UTF-8 length).
        ///
        /// Default: ``CacheSize/default`` (100 MiB).
        public var size: CacheSize
        /// The most responses the in-memory layer keeps; 0 turns the layer off.
        ///
        /// Default: 1,000.
        public var memoryCountLimit: Int
        /// The most body bytes (UTF-8) the in-memory layer keeps.
        ///
        /// Default: 16 MiB (16,777,216 bytes).
        public var memoryCostLimitBytes: Int
        /// The time a response's `fetchedAt` is taken from and `maxAge` is measured with; inject
        /// one in tests.
        ///
        /// Default: the system clock, `{ Date() }`.
        public var clock: @Sendable () -> Date
        /// Called after each eviction pass that removed at least one response (from the task that
        /// ran it): live queries use it to answer again without the responses that went.
        ///
        /// Default: `nil`.
        public var onEviction: (@Sendable (EvictionPass) -> Void)?
        /// Called after each response is stored (a put, a fetched answer, a revalidation), with
        /// its query, before the call that stored it returns: live queries use it to answer again.
        ///
        /// Default: `nil`.
        public var onStored: (@Sendable (_ query: String) -> Void)?
        /// Where the memory layer hears that the system runs short of memory: on a warning it
        /// sheds to a quarter of its limits, on a critical event it empties (see
        /// ``QueryCache/shedMemory(for:)``). `nil` turns this off.
        ///
        /// Default: `MemoryPressureSources.system` (dispatch's memory-pressure source on Apple
        /// platforms, the kernel's pressure stall information on Linux); where it is
        /// unavailable, ``QueryCache/memoryPressureUnavailable`` says why.
        public var memoryPressure: (any MemoryPressureSource)? = MemoryPressureSources.system

        // The defaults, written once: this initializer and `QueryCache`'s short one use them.
        /// The default of ``size``.
        @usableFromInline static let defaultSize = CacheSize.default
        /// The default of ``memoryCountLimit``.
        @usableFromInline static let defaultMemoryCountLimit = 1_000
        /// The default of ``memoryCostLimitBytes``: 16 MiB.
        @usableFromInline static let defaultMemoryCostLimitBytes = 16 * 1_024 * 1_024
        /// The default of ``clock``: the system clock.
        @usableFromInline static let defaultClock: @Sendable () -> Date = { Date() }

        /// A configuration with the given fields and the defaults for the rest.
        public init(
            size: CacheSize = Configuration.defaultSize,
            memoryCountLimit: Int = Configuration.defaultMemoryCountLimit,
            memoryCostLimitBytes: Int = Configuration.defaultMemoryCostLimitBytes,
            clock: @escaping @Sendable () -> Date = Configuration.defaultClock
        ) {
            self.size = size
            self.memoryCountLimit = memoryCountLimit
            self.memoryCostLimitBytes = memoryCostLimitBytes
            self.clock = clock
        }
    }
}
