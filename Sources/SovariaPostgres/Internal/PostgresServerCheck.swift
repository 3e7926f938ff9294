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
/// that is a primary; a server named as the primary that is a standby; no primary among the
/// servers of a multi-host conninfo, or two; a server whose identifier is not the primary's. A
/// standby that cannot be reached is not an error (reads skip it); a primary that cannot be
/// reached throws `.io`, as any call would. A failed check runs again on the next call. When it
/// passes, the store's floor starts at the primary's insert position: the store then never reads
/// a state older than the moment it opened.
final class PostgresServerCheck: Sendable {
    let servers: [PostgresServer]
    private let session: PostgresSession
    /// The primary's system identifier, once the check passed.
    private let systemIdentifier = Mutex<UInt64?>(nil)
    private let running = Mutex<Task<Identity, any Error>?>(nil)
    private let queue = BlockingWorkQueue(label: "sovaria.postgres.check")
    /// Told the primary's insert position when the check passes.
    private let passed: @Sendable (_ primaryPosition: UInt64) -> Void

    init(
        servers: [PostgresServer], session: PostgresSession,
        passed: @escaping @Sendable (_ primaryPosition: UInt64) -> Void
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
            let primary = try await task.value
            // Before the identifier is set, so no read goes to a standby without this floor.
            passed(primary.position)
            systemIdentifier.withLock { $0 = primary.identifier }
        } catch {
            running.withLock { if $0 == task { $0 = nil } }
            throw error
        }
    }

    /// A connection to the server taking writes: the primary first, then the others, each with
    /// `target_session_attrs=read-write` (so a standby promoted after a failover is found). The
    /// error is the first server's when none takes writes.
    func connectToPrimary() throws(OfflineStoreError) -> PostgresConnection {
        var first: OfflineStoreError?
        for server in servers.sorted(by: { $0.role == .primary && $1.role != .primary }) {
            do {
                return try session.connect(
                    server.conninfo, server: server.description,
                    requiredOptions: [("target_session_attrs", "read-write")])
            } catch {
                if first == nil { first = error }
            }
        }
        throw first ?? OfflineStoreError(.io, "The store has no server.", engine: .postgres)
    }

    /// A connection to `server` once the check passed and only while the server is a standby of
    /// the primary's cluster (it may have been replaced or promoted since).
    func connectToStandby(_ server: PostgresServer) throws(OfflineStoreError) -> PostgresConnection {
        guard let expected = systemIdentifier.withLock({ $0 }) else {
            throw OfflineStoreError(.io, "The servers have not been checked yet.", engine: .postgres)
        }
        let connection = try session.connect(server.conninfo, server: server.description)
        let found = try Self.identify(connection, server)
        guard found.identifier == expected, found.isStandby else {
            throw OfflineStoreError(
                .misconfigured, "\(server.description) is no longer a standby of the primary's cluster.",
                engine: .postgres)
        }
        return connection
    }

    private func check() async throws -> Identity {
        let servers = servers
        let session = session
        let found = try await withThrowingTaskGroup(of: (Int, Result<Identity, OfflineStoreError>).self) { group in
            for (index, server) in servers.enumerated() {
                group.addTask {
                    let identity = try await self.queue.runConcurrently { () -> Result<Identity, OfflineStoreError> in
                        Result { () throws(OfflineStoreError) in
                            try Self.identify(session.connect(server.conninfo, server: server.description), server)
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

    /// The primary's identity when `found` fits the roles of `servers`; the first misfit
    /// otherwise.
    private static func judge(
        _ servers: [PostgresServer], _ found: [Result<Identity, OfflineStoreError>]
    ) throws(OfflineStoreError) -> Identity {
        var primaries: [(PostgresServer, Identity)] = []
        for (server, result) in zip(servers, found) {
            switch result {
            case .success(let identity):
                if server.role == .standby, !identity.isStandby {
                    throw misconfigured(
                        "\(server.description) is named as a standby but is a primary (not in recovery): name it as "
                            + "the primary, or give the address of a standby.")
                }
                if server.role == .primary, identity.isStandby {
                    throw misconfigured(
                        "\(server.description) is named as the primary but is a standby (in recovery): the store has no "
                            + "primary to write to. Give the primary's address.")
                }
                if !identity.isStandby { primaries.append((server, identity)) }
            case .failure(let error):
                // A standby that is down is left out until it answers; the primary must answer.
                if server.role == .primary { throw error }
            }
        }
        guard primaries.count <= 1 else {
            throw misconfigured(
                "\(primaries.map(\.0.description).joined(separator: " and ")) are all primaries: a store writes to one. "
                    + "Give one primary and its standbys.")
        }
        guard let (primary, identity) = primaries.first else {
            let unreachable = zip(servers, found).compactMap { server, result -> OfflineStoreError? in
                if case .failure(let error) = result { error } else { nil }
            }
            if let error = unreachable.first { throw error }
            throw misconfigured(
                "No server of \(servers.map(\.description).joined(separator: "; ")) is a primary: they are all "
                    + "standbys (in recovery). Add the primary's address.")
        }
        for (server, result) in zip(servers, found) {
            guard case .success(let other) = result, other.identifier != identity.identifier else { continue }
            throw misconfigured(
                "\(server.description) belongs to another cluster than the primary \(primary.description) (system "
                    + "identifier \(other.identifier), the primary's \(identity.identifier)): it is not one of its "
                    + "standbys. Give the addresses of the primary's own standbys.")
        }
        return identity
    }

    /// Whether a server is in recovery, its cluster's identifier, and its position in the log (see
    /// `PostgresSchema.walPosition`).
    struct Identity: Sendable {
        let isStandby: Bool
        let identifier: UInt64
        let position: UInt64
    }

    private static func identify(
        _ connection: PostgresConnection, _ server: PostgresServer
    ) throws(OfflineStoreError) -> Identity {
        let rows = try connection.query(
            """
            SELECT pg_is_in_recovery(), CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() \
            ELSE pg_current_wal_insert_lsn() END, system_identifier FROM pg_control_system()
            """, [], while: "Checking the role of \(server.description)")
        let identifier = rows.bytes(row: 0, column: 2)
        guard rows.rowCount == 1, identifier.count == 8 else {
            throw OfflineStoreError(
                .io, "\(server.description) did not say whether it is a standby.", engine: .postgres)
        }
        let position = try WALPosition(rows)
        return Identity(
            isStandby: position.isStandby, identifier: identifier.reduce(0) { $0 << 8 | UInt64($1) },
            position: position.lsn)
    }

    private static func misconfigured(_ message: String) -> OfflineStoreError {
        OfflineStoreError(.misconfigured, message, engine: .postgres)
    }
}
