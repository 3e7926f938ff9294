import Sovaria
import SovariaPlumbing

extension PostgresOfflineStore {
    /// How a PostgreSQL store uses its server; every field has a default.
    public struct Configuration: Sendable, Hashable {
        /// The most connections the store opens to the server at once; calls beyond that wait
        /// (suspended, not blocking a thread) for a connection to come back. Idle connections stay
        /// open for the next call. Each counts against the server's `max_connections` (100 by
        /// default), shared by every process and machine using the server. Default: 4.
        public var maxConnections: Int = 4
        /// How long a write waits for a row or table lock another session holds (PostgreSQL's
        /// `lock_timeout`) before it throws `OfflineStoreError.Code.locked`. Default: 5 seconds.
        public var lockTimeout: Duration = .seconds(5)
        /// How long opening a connection may take before it throws `OfflineStoreError.Code.io`
        /// (libpq's `connect_timeout`, used unless the conninfo sets one). Default: 10 seconds.
        public var connectTimeout: Duration = .seconds(10)

        /// Where reads go on a store with standbys
        /// (``PostgresOfflineStore/init(primary:standbys:table:durability:configuration:)``); a
        /// store on one server reads from it whatever this says. Default: `.primary`.
        public var readPolicy: ReadPolicy = .primary
        /// How long a `.standbyIfCaughtUp` read waits for a standby to replay what it must see
        /// before the primary answers it instead. Zero goes to the primary at once. Default: 100 ms.
        public var standbyWait: Duration = .milliseconds(100)
        /// Whether a `.synced` write returns only once the primary's synchronous standbys (its
        /// `synchronous_standby_names`) have applied it: `synchronous_commit = remote_apply`
        /// instead of `on`. A `.standbyIfCaughtUp` read after the store's own write then rarely
        /// waits for those standbys (only for other sessions' WAL flushed meanwhile); each write
        /// waits longer. No effect on `.flushed`. Default: `false`.
        public var waitsForStandbyApply = false

        /// The defaults.
        public init() {}

        /// The defaults, with `maxConnections`.
        public init(maxConnections: Int) {
            self.maxConnections = maxConnections
        }

        /// ``lockTimeout`` in whole milliseconds (at least 1: PostgreSQL reads 0 as "wait forever").
        var lockTimeoutMilliseconds: Int { max(1, Self.milliseconds(lockTimeout)) }

        /// ``connectTimeout`` in whole seconds, as libpq takes it (at least 2: libpq raises 1 to 2).
        var connectTimeoutSeconds: Int { max(2, Int(connectTimeout.components.seconds)) }

        private static func milliseconds(_ duration: Duration) -> Int { duration.wholeMilliseconds }
    }
}
