import Sovaria

extension LevelDBOfflineStore {
    /// How a LevelDB store opens its database; every field has a default.
    ///
    /// The first store opened on a folder in a process decides the block cache for every store on
    /// that folder (they share one database); each store keeps its own durability.
    public struct Configuration: Sendable, Hashable {
        /// How far a write has gone when its call returns: `Durability.synced` syncs every write to
        /// stable storage (`sync = true`), `Durability.flushed` hands it to the OS (survives a crash
        /// of the process, not of the machine). Default: `Durability.synced`.
        public var durability: Durability = .synced
        /// The LRU cache of uncompressed blocks, in bytes. Default: 8 MiB.
        public var blockCacheSizeBytes: Int = 8 * 1_024 * 1_024

        /// The defaults.
        public init() {}

        /// The defaults, with `durability`.
        public init(durability: Durability) {
            self.durability = durability
        }
    }
}
