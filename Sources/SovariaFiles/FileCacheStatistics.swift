/// What a ``FileCache`` has done since it was opened, and where it stands now: from
/// ``FileCache/statistics``.
public struct FileCacheStatistics: Sendable, Hashable {
    /// Calls of ``FileCache/open(_:)`` that found the file.
    public var hits = 0
    /// Calls of ``FileCache/open(_:)`` that found nothing.
    public var misses = 0
    /// This cache's files deleted by eviction passes (for an account's cache, its own passes'
    /// and the other accounts').
    public var evictions = 0
    /// Bytes of this cache's files deleted by eviction passes.
    public var evictedBytes = 0
    /// Eviction passes this cache ran (a pass runs when a download leaves the total over the
    /// bound).
    public var passes = 0
    /// Bytes the last pass had to keep because they were protected: files with an open lease
    /// or used in the last 30 seconds that it would have deleted otherwise.
    public var protectedBytes = 0
    /// Whether the total is over the bound now: everything a pass could delete was protected
    /// (or a pass is still to run). The next download that passes the bound tries again. For an
    /// account's cache, the total is every account's, ``FileCache/boundTotalBytes``.
    public var isOverBound = false
    /// The bytes the cache holds: ``FileCache/totalBytes``.
    public var totalBytes = 0
    /// The files cached.
    public var fileCount = 0
    /// Bytes of temporary files a crash left behind, counted in ``totalBytes`` until they are
    /// deleted (once they are more than a day old).
    public var leftoverTemporaryBytes = 0

    /// Statistics with every count at zero.
    public init() {}
}
