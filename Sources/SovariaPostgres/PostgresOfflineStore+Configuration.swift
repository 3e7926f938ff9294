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
