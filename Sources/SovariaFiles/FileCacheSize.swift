/// The bound on a ``FileCache``: the summed size in bytes of its files, and of the temporary
/// files a crash left behind while they exist.
///
/// The file cache's rules, which differ from the query cache's `CacheSize`
/// (`SovariaCache`): no 4 KiB minimum, and any negative value but `-1` counts as zero (a cache
/// that keeps only the files in use or used in the last 30 seconds). A separate type keeps the
/// two bounds from being mixed up, and keeps this module free of `SovariaCache`.
public enum FileCacheSize: Sendable, Hashable {
    /// At most this many bytes; values below zero count as zero, except `-1`, which means
    /// ``unlimited`` (`CACHE_SIZE_UNLIMITED` in an integer setting).
    case bytes(Int)
    /// Never evict.
    case unlimited

    /// 256 MiB (268,435,456 bytes), the default.
    public static let `default` = FileCacheSize.bytes(256 * 1_024 * 1_024)

    /// The bound from an integer setting: `-1` (`CACHE_SIZE_UNLIMITED`) is ``unlimited``,
    /// anything else is ``bytes(_:)``.
    public init(byteCount: Int) {
        self = byteCount == -1 ? .unlimited : .bytes(byteCount)
    }

    /// The bound eviction enforces, in bytes, or `nil` when eviction is off (``unlimited`` and
    /// `.bytes(-1)`).
    public var effectiveBytes: Int? {
        switch self {
        case .unlimited, .bytes(-1): nil
        case .bytes(let bytes): max(bytes, 0)
        }
    }

    /// What a pass deletes down to: a tenth below the bound (90%, rounded down), or `nil` when
    /// eviction is off.
    public var evictionTargetBytes: Int? {
        effectiveBytes.map { $0 / 10 * 9 + $0 % 10 * 9 / 10 }
    }
}
