/// The bound on the query cache: the summed UTF-8 length of the cached response bodies.
///
/// Only bodies count: not the metadata, the write queue, the rejected list or the database
/// file. What is evicted past the bound, and when: <doc:TheQueryCache#Size-and-eviction>.
public enum CacheSize: Sendable, Hashable {
    /// At most this many bytes of response bodies; values below 4 KiB count as 4 KiB, except
    /// `-1`, which means ``unlimited`` (`CACHE_SIZE_UNLIMITED` in an integer setting).
    case bytes(Int)
    /// Never evict.
    case unlimited

    /// 100 MiB, the default.
    public static let `default` = CacheSize.bytes(100 * 1_024 * 1_024)

    /// The smallest bound that takes effect: 4 KiB.
    public static let minimumBytes = 4_096

    /// The bound from an integer setting: `-1` (`CACHE_SIZE_UNLIMITED`) is ``unlimited``,
    /// anything else is ``bytes(_:)``.
    public init(byteCount: Int) {
        self = byteCount == -1 ? .unlimited : .bytes(byteCount)
    }

    /// The bound in bytes that eviction enforces, or `nil` for ``unlimited`` (and for
    /// `.bytes(-1)`, `CACHE_SIZE_UNLIMITED`).
    public var effectiveBytes: Int? {
        switch self {
        case .unlimited, .bytes(-1): nil
        case .bytes(let bytes): max(bytes, Self.minimumBytes)
        }
    }

    /// What a pass evicts down to: 50,000,000 bytes below the bound, or the bound itself when
    /// it is 50 MB or less. `nil` for ``unlimited``.
    public var evictionTargetBytes: Int? {
        effectiveBytes.map { $0 > 50_000_000 ? $0 - 50_000_000 : $0 }
    }
}
