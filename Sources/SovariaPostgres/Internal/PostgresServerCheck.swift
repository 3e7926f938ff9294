import Sovaria
import SovariaPlumbing
import Synchronization

/// How a store's connections are set up: the same for every server it uses.
struct PostgresSession: Sendable {
    let durability: Durability
    let lockTimeoutMilliseconds: Int
    let connectTimeoutSeconds: Int
    /// `remote_apply` when `.synced` writes wait for the synchronous standbys to apply them.
    let synchronousCommit: String?

    init(durability: Durability, configuration: PostgresOfflineStore.Configuration) {
        self.durability = durability
        lockTimeoutMilliseconds = configuration.lockTimeoutMilliseconds
        connectTimeoutSeconds = configuration.connectTimeoutSeconds
        synchronousCommit = durability == .synced && configuration.waitsForStandbyApply ? "remote_apply" : nil
    }

    /// A connection to `conninfo`, with `requiredOptions` over the conninfo's own.
    func connect(
        _ conninfo: String, server: String, requiredOptions: [(String, String)] = []
    ) throws(OfflineStoreError) -> PostgresConnection {
        try PostgresConnection(
            conninfo: conninfo, server: server, durability: durability,
            lockTimeoutMilliseconds: lockTimeoutMilliseconds, connectTimeoutSeconds: connectTimeoutSeconds,
            synchronousCommit: synchronousCommit, requiredOptions: requiredOptions)
    }
}

/// The servers of a store with standbys: checks once, before the first call, that they fit
/// together, and opens connections to the one taking writes and to each standby.
///
/// The check asks every server whether it is in recovery and for its system identifier (made by
/// `initdb`, the same on every standby of a cluster). It throws
/// ``OfflineStoreError/Code/misconfigured`` naming the server for: a server named as a standby
/// that is a primary while the named primary is one too; no primary at all among the servers
/// that answered; two primaries among the hosts of a multi-host conninfo; a server whose
/// identifier is not the primary's. After a failover (the named primary down, or back as a
/// standby, and exactly one named standby a primary), the promoted standby is the primary. A
/// standby that cannot be reached is not an error (reads skip it); when no primary answers and
/// one could not be reached, its `.io` is thrown, as any call would. A failed check runs again on
/// the next call. When it passes, the store's floor starts at the primary's insert position: the
/// store then never reads a state older than the moment it opened.
final class PostgresServerCheck: Sendable {
    let servers: [PostgresServer]
    private let session: PostgresSession
    /// The primary's system identifier, once the check passed.
    private let systemIdentifier = Mutex<UInt64?>(nil)
    private let running = Mutex<Task<(Identity, Set<String>), any Error>?>(nil)
    private let queue = BlockingWorkQueue(label: "sovaria.postgres.check")
    /// Told the primary's identity and the hosts found to be primaries when the check passes.
    private let passed: @Sendable (_ primary: Identity, _ primaries: Set<String>) -> Void

    init(
        servers: [PostgresServer], session: PostgresSession,
        passed: @escaping @Sendable (_ primary: Identity, _ primaries: Set<String>) -> Void
    ) {
        self.servers = servers
        self.session = session
        self.passed = passed
    }

    /// Returns once the servers passed the check; throws its error otherwise.
    func ensureChecked() async throws {
        if systemIdentifier.withLock({ $0 }) != nil { return }
        let task = running.withLock { running in
            if let running { return running }
            let task = Task { try await self.check() }
            running = task
            return task
        }
        do {
            let (primary, primaries) = try await task.value
            // Before the identifier is set, so no read goes to a standby without this floor.
            passed(primary, primaries)
            systemIdentifier.withLock { $0 = primary.identifier }
        } catch {
            running.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    /// A connection to the server taking writes: the named primary first, then the others, each
    /// with `target_session_attrs=read-write` (so a standby promoted after a failover is found),
    /// and only a server of the primary's cluster once the check passed. The error is the first
    /// server's when none takes writes. Returns the server it reached too, and what it found
    /// there (its position and timeline).
    func connectToPrimary() throws(OfflineStoreError) -> (PostgresConnection, PostgresServer, Identity) {
        var first: OfflineStoreError?
        let expected = systemIdentifier.withLock { $0 }
        for server in servers.sorted(by: { $0.role == .primary && $1.role != .primary }) {
            do throws(OfflineStoreError) {
                let connection = try session.connect(
                    server.conninfo, server: server.description,
                    requiredOptions: [("target_session_attrs", "read-write")])
                let found = try Self.identify(connection, server)
                if let expected, found.identifier != expected {
                    throw Self.misconfigured(
                        "\(server.description) takes writes but belongs to another cluster than the primary the "
                            + "store opened with (system identifier \(found.identifier), not \(expected)).")
                }
                connection.timeline = found.timeline
                return (connection, server, found)
            } catch {
                if first == nil { first = error }
            }
        }
        throw first ?? OfflineStoreError(.io, "The store has no server.", engine: .postgres)
    }

    /// A connection to `server` once the check passed and only while the server is a standby of
    /// the primary's cluster (it may have been replaced or promoted since). A short connect
    /// timeout (at most 2 s) and `tcp_user_timeout` (5 s): a standby that stops answering costs
    /// a read that long once, then the read goes on to the next server and the standby is left
    /// out.
    func connectToStandby(_ server: PostgresServer) throws(OfflineStoreError) -> PostgresConnection {
        guard let expected = systemIdentifier.withLock({ $0 }) else {
            throw OfflineStoreError(.io, "The servers have not been checked yet.", engine: .postgres)
        }
        let connection = try session.connect(
            server.conninfo, server: server.description, requiredOptions: Self.standbyTimeouts(session))
        let found = try Self.identify(connection, server)
        connection.timeline = found.timeline
        guard found.identifier == expected, found.isStandby else {
            throw OfflineStoreError(
                .misconfigured, "\(server.description) is no longer a standby of the primary's cluster.",
                engine: .postgres)
        }
        // Whatever the server's default, each read is its own statement's snapshot (a
        // serializable default would refuse every read on a hot standby).
        try connection.execute(
            "SET default_transaction_isolation = 'read committed'", while: "Setting up the standby session")
        return connection
    }

    private func check() async throws -> (Identity, Set<String>) {
        let servers = servers
        let session = session
        let found = try await withThrowingTaskGroup(of: (Int, Result<Identity, OfflineStoreError>).self) { group in
            for (index, server) in servers.enumerated() {
                group.addTask {
                    let identity = try await self.queue.runConcurrently { () -> Result<Identity, OfflineStoreError> in
                        Result { () throws(OfflineStoreError) in
                            // A standby that does not answer must not hold the store's opening for
                            // the whole connect timeout: it is only left out.
                            let options = server.role == .standby ? Self.standbyTimeouts(session) : []
                            return try Self.identify(
                                session.connect(server.conninfo, server: server.description, requiredOptions: options),
                                server)
                        }
                    }
                    return (index, identity)
                }
            }
            var found = [Result<Identity, OfflineStoreError>?](repeating: nil, count: servers.count)
            for try await (index, identity) in group { found[index] = identity }
            return found.compactMap { $0 }
        }
        return try Self.judge(servers, found)
    }

    /// The primary's identity, and the hosts that are primaries, when `found` fits the roles of
    /// `servers`; the first misfit otherwise.
    private static func judge(
        _ servers: [PostgresServer], _ found: [Result<Identity, OfflineStoreError>]
    ) throws(OfflineStoreError) -> (Identity, Set<String>) {
        let answers = zip(servers, found).compactMap { server, result -> (PostgresServer, Identity)? in
            if case .success(let identity) = result { (server, identity) } else { nil }
        }
        let unreachable = zip(servers, found).compactMap { server, result -> (PostgresServer, OfflineStoreError)? in
            if case .failure(let error) = result { (server, error) } else { nil }
        }
        let primaries = answers.filter { !$0.1.isStandby }
        let namedPrimaryIsOne = primaries.contains { $0.0.role == .primary }
        if namedPrimaryIsOne, let standby = primaries.first(where: { $0.0.role == .standby }) {
            throw misconfigured(
                "\(standby.0.description) is named as a standby but is a primary (not in recovery), beside the "
                    + "primary: name it as the primary, or give the address of a standby.")
        }
        guard primaries.count <= 1 else {
            throw misconfigured(
                "\(primaries.map(\.0.description).joined(separator: " and ")) are all primaries: a store writes to "
                    + "one. Give one primary and its standbys.")
        }
        guard let (primary, identity) = primaries.first else {
            // No primary answered: one that could not be reached may be it.
            if let (_, error) = unreachable.first(where: { $0.0.role != .standby }) ?? unreachable.first {
                throw error
            }
            let named = answers.first { $0.0.role == .primary }
            throw misconfigured(
                named.map {
                    "\($0.0.description) is named as the primary but is a standby (in recovery), and no other server "
                        + "is a primary: the store has nothing to write to. Give the primary's address."
                }
                    ?? "No server of \(servers.map(\.description).joined(separator: "; ")) is a primary: they are all "
                    + "standbys (in recovery). Add the primary's address.")
        }
        for (server, other) in answers where other.identifier != identity.identifier {
            throw misconfigured(
                "\(server.description) belongs to another cluster than the primary \(primary.description) (system "
                    + "identifier \(other.identifier), the primary's \(identity.identifier)): it is not one of its "
                    + "standbys. Give the addresses of the primary's own standbys.")
        }
        return (identity, [primary.description])
    }

    /// Whether a server is in recovery, its cluster's identifier, its position in the log (see
    /// `PostgresSchema.walPosition`), its WAL page and segment sizes, and its timeline (see
    /// `PostgresSchema.timelineColumn`; 0, which no timeline is, when a standby could not say).
    struct Identity: Sendable {
        let isStandby: Bool
        let identifier: UInt64
        let position: UInt64
        let walPageSize: UInt64
        let walSegmentSize: UInt64
        let timeline: UInt64
    }

    private static func identify(
        _ connection: PostgresConnection, _ server: PostgresServer
    ) throws(OfflineStoreError) -> Identity {
        let rows = try connection.query(
            """
            SELECT pg_is_in_recovery(), CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() \
            ELSE pg_current_wal_insert_lsn() END, system_identifier, current_setting('wal_block_size')::int8, \
            (SELECT setting::int8 FROM pg_settings WHERE name = 'wal_segment_size'), \(PostgresSchema.timelineColumn) \
            FROM pg_control_system()
            """, [], while: "Checking the role of \(server.description)")
        let values = (2...4).compactMap { rows.uint64(row: 0, column: $0) }
        guard values.count == 3 else {
            throw OfflineStoreError(
                .io, "\(server.description) did not say whether it is a standby.", engine: .postgres)
        }
        let position = try WALPosition(rows)
        let timeline = rows.uint64(row: 0, column: 5)
        guard timeline != nil || position.isStandby else {
            throw OfflineStoreError(.io, "\(server.description) did not say its timeline.", engine: .postgres)
        }
        return Identity(
            isStandby: position.isStandby, identifier: values[0], position: position.lsn, walPageSize: values[1],
            walSegmentSize: values[2], timeline: timeline ?? 0)
    }

    /// A standby's connection times out sooner than the primary's: at most 2 s to connect, and 5 s
    /// for an answer on a connection that stops answering (`tcp_user_timeout`, TCP only).
    private static func standbyTimeouts(_ session: PostgresSession) -> [(String, String)] {
        [("connect_timeout", String(min(2, session.connectTimeoutSeconds))), ("tcp_user_timeout", "5000")]
    }

    private static func misconfigured(_ message: String) -> OfflineStoreError {
        OfflineStoreError(.misconfigured, message, engine: .postgres)
    }
}
