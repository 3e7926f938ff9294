import Sovaria

extension PostgresOfflineStore {
    /// Where a store with standbys sends its reads (`get`, `data`, `keys`, `entries`,
    /// `dataEntries`, `withEntries`, `withKeys`). Writes and batches always go to the primary.
    public enum ReadPolicy: Sendable, Hashable, CaseIterable {
        /// Every read goes to the primary, as on a store without standbys. The default.
        case primary
        /// A read goes to a standby that has replayed every write this store acknowledged, every
        /// state a read of this store answered from, and everything the primary had when the store
        /// opened; a standby behind waits up to ``Configuration/standbyWait`` to catch up, else the
        /// primary answers. Positions count only on the primary's timeline: a standby answers only
        /// while it follows the timeline of the server taking writes. So a caller never misses a
        /// write of its own store or one made before the store opened, also across a failover, and
        /// the store's reads never go back in time (a failover that loses writes aside). A standby
        /// on another timeline (still following a primary that failed), one behind for a second,
        /// or one that made three reads in a row wait the whole wait, is left out of the reads as
        /// a failed one is, and one read tries it again every two seconds; a standby promoted in
        /// the primary's place answers the primary's reads.
        case standbyIfCaughtUp
        /// A read goes to any standby that answers, however far behind the primary it is: it may
        /// miss writes this store just made, and two reads may go back in time. For reads that
        /// allow that (a dashboard, a search index), at no cost to the primary.
        case anyStandby
    }

    /// A store on `table` of a primary and its streaming standbys; connects on first use.
    ///
    /// Writes and batches go to the server taking writes: `primary`, or a standby promoted after
    /// `primary` failed (each server is tried with `target_session_attrs=read-write`). Reads go
    /// where ``Configuration/readPolicy`` says. Before the first call (or when
    /// ``checkServers()`` is called) every server is asked its role and cluster: see
    /// ``checkServers()``.
    ///
    /// - Parameters:
    ///   - primary: the primary's libpq conninfo or URL.
    ///   - standbys: a conninfo or URL for each streaming standby of `primary`.
    ///   - table: as in ``init(connection:table:durability:configuration:)``.
    ///   - durability: as there; ``Configuration/waitsForStandbyApply`` makes `.synced` wait for
    ///     the synchronous standbys to apply each write.
    ///   - configuration: the pool size (per server), timeouts and ``Configuration/readPolicy``.
    /// - Throws: `.unsupported` for a table name it refuses or a conninfo libpq cannot parse.
    public convenience init(
        primary: String, standbys: [String], table: String = "sovaria_kv", durability: Durability = .synced,
        configuration: Configuration = Configuration()
    ) throws {
        var servers = [try PostgresServer(conninfo: primary, role: .primary)]
        for standby in standbys { servers.append(try PostgresServer(conninfo: standby, role: .standby)) }
        try self.init(servers: .several(servers), table: table, durability: durability, configuration: configuration)
    }

    /// A store on `table` of the servers one multi-host conninfo names
    /// (`host=db1,db2,db3 port=5432 dbname=app`, or `postgresql://db1,db2,db3/app`): each server's
    /// role is what it says it is when the store opens, and exactly one must be a primary. The
    /// conninfo's `target_session_attrs`, if any, is not used: the store chooses the server.
    ///
    /// - Throws: `.unsupported` for a table name it refuses, a conninfo libpq cannot parse, or a
    ///   count of ports that fits neither one for all hosts nor one each.
    public convenience init(
        servers conninfo: String, table: String = "sovaria_kv", durability: Durability = .synced,
        configuration: Configuration = Configuration()
    ) throws {
        try self.init(
            servers: .several(try PostgresServer.servers(in: conninfo)), table: table, durability: durability,
            configuration: configuration)
    }

    /// Asks every server of a store with standbys its role and its cluster, and returns when they
    /// fit together; the first call of the store runs the same check when this was not called.
    /// A store on one server has nothing to check.
    ///
    /// - Throws: `OfflineStoreError.Code.misconfigured`, naming the server, for a
    ///   server named as a standby that is a primary, a server named as the primary that is a
    ///   standby, no primary (or two) among the hosts of a multi-host conninfo, or a server of
    ///   another cluster (a system identifier other than the primary's). `.io` when the primary
    ///   cannot be reached. A standby that cannot be reached is not an error: reads skip it until
    ///   it answers, and its first connection checks its role and cluster then.
    public func checkServers() async throws {
        try await serverCheck?.ensureChecked()
    }

    /// How many reads each server answered since the store opened: a snapshot.
    ///
    /// ```swift
    /// let store = try await OfflineStores.open(url, using: [.postgres])  // any OfflineStore
    /// if let postgres = store as? PostgresOfflineStore {
    ///     let counts = postgres.readCounts
    ///     print(counts.primary, counts.standbys.map(\.reads), counts.waited)
    /// }
    /// ```
    public struct ReadCounts: Sendable, Hashable {
        /// Reads one standby answered.
        public struct Standby: Sendable, Hashable {
            /// Where it points (`host=… port=…`).
            public let server: String
            /// Reads it answered.
            public let reads: Int
        }

        /// Reads the primary answered: the server taking writes, whichever it was at the time.
        public let primary: Int
        /// Where the primary's reads go now (`host=… port=…`): the server the store's latest
        /// connection to the primary reached. The named primary until a failover; then the
        /// standby promoted in its place. `nil` before the store's first connection to it.
        public let primaryServer: String?
        /// Each standby of the store not taking writes, in the order given: a standby promoted in
        /// the primary's place leaves this list once the store's connections to the primary reach
        /// it (for a multi-host conninfo, every host but the primary's).
        public let standbys: [Standby]
        /// Reads that found no standby caught up and polled one, up to
        /// ``Configuration/standbyWait``. A standby that stays behind for long (one still following
        /// a primary that failed) is left out of the reads, so it is not polled again.
        public let waited: Int
    }

    /// How many reads each server answered. A store on one server does not count: zero
    /// everywhere.
    public var readCounts: ReadCounts {
        guard let standbyReads else { return ReadCounts(primary: 0, primaryServer: nil, standbys: [], waited: 0) }
        return ReadCounts(
            primary: standbyReads.primaryAnswered.load(ordering: .relaxed),
            primaryServer: standbyReads.primaryServer,
            standbys: standbyReads.standbysReading.map {
                ReadCounts.Standby(server: $0.server.description, reads: $0.answered.load(ordering: .relaxed))
            },
            waited: standbyReads.waited.load(ordering: .relaxed))
    }
}
