import Foundation

extension FileCache {
    /// The options of a ``FileCache``, as one value: the bound and the clock. Every field has a
    /// default, so a configuration names only what it changes.
    ///
    /// The eviction rules are not options: a pass deletes down to 90% of the bound; files with an
    /// open lease or used in the last 30 seconds (``FileCache/recentUseProtection``) are kept;
    /// a use is recorded in the store at most once per file per second
    /// (``FileCache/useRecordInterval``) and when a lease ends; temporary files older than a day
    /// (``FileCache/temporaryFileMaxAge``) are deleted.
    ///
    /// ```swift
    /// var configuration = FileCache.Configuration()
    /// configuration.size = .bytes(64 << 20)
    /// let photos = try await FileCache(directory: folder, metadata: store, configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The bound on the files' summed size.
        ///
        /// Default: ``FileCacheSize/default`` (256 MiB).
        public var size: FileCacheSize
        /// The time last uses, the 30-second protection and the age of temporary files are
        /// measured with; inject one in tests (a temporary file's age is this clock's time
        /// minus the file's modification time).
        ///
        /// Default: the system clock, `{ Date() }`.
        public var clock: @Sendable () -> Date

        /// A configuration with the given fields and the defaults for the rest.
        public init(size: FileCacheSize = .default, clock: @escaping @Sendable () -> Date = { Date() }) {
            self.size = size
            self.clock = clock
        }
    }
}
