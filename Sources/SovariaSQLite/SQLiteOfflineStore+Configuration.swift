import Sovaria
import SovariaPlumbing

extension SQLiteOfflineStore {
    /// How a SQLite store opens its file; every field has a default.
    ///
    /// The first store opened on a file in a process decides the busy timeout for every store on
    /// that file (they share its connections); each store keeps its own durability.
    public struct Configuration: Sendable, Hashable {
        /// How far a write has gone when its call returns: `Durability.synced` is WAL with
        /// `synchronous=FULL`, `Durability.flushed` `synchronous=NORMAL`. Default: `Durability.synced`.
        public var durability: Durability = .synced
        /// How long a call waits for a lock another process holds before it throws
        /// `OfflineStoreError.Code.locked`. Default: 5 seconds.
        public var busyTimeout: Duration = .seconds(5)

        /// The defaults.
        public init() {}

        /// The defaults, with `durability`.
        public init(durability: Durability) {
            self.durability = durability
        }

        /// ``busyTimeout`` in whole milliseconds, as SQLite takes it.
        var busyTimeoutMilliseconds: Int32 {
            Int32(clamping: max(0, busyTimeout.wholeMilliseconds))
        }
    }
}
