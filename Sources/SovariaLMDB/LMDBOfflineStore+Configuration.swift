import Sovaria

extension LMDBOfflineStore {
    /// How an LMDB store opens its environment; every field has a default.
    ///
    /// The first store opened on a folder in a process decides the map sizes and the reader slots for
    /// every store on that folder (they share one environment); each store keeps its own durability.
    ///
    /// ```swift
    /// var configuration = LMDBOfflineStore.Configuration()
    /// configuration.maxMapSizeBytes = 4 << 30
    /// let store = try LMDBOfflineStore(directory: folder, configuration: configuration)
    /// ```
    public struct Configuration: Sendable, Hashable {
        /// How far a write has gone when its call returns. Default: `Durability.synced`.
        public var durability: Durability = .synced
        /// The memory map's first size, rounded up to whole pages; it doubles whenever a write finds
        /// it full. Default: 1 MiB (LMDB's own default).
        public var initialMapSizeBytes: Int = 1 << 20
        /// The map never grows past this; a write that needs more throws
        /// `OfflineStoreError.Code.full`. The map takes address space, not disk, until pages are
        /// written. Default: 1 TiB on 64-bit platforms, 1 GiB on 32-bit ones.
        public var maxMapSizeBytes: Int = Int.bitWidth >= 64 ? Int(truncatingIfNeeded: Int64(1) << 40) : 1 << 30
        /// LMDB reader slots, shared by every process that opens the folder; each thread reading at
        /// the same moment takes one. Default: 126 (LMDB's own default).
        public var maxReaders: Int = 126

        /// The defaults.
        public init() {}

        /// The defaults, with `durability`.
        public init(durability: Durability) {
            self.durability = durability
        }
    }
}
