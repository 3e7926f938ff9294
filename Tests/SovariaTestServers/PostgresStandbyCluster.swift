import Foundation

/// A PostgreSQL primary and two streaming standbys, all throwaway clusters
/// (`Tests/Server/pgcluster start` and `standby`): test equipment for reads from standbys.
///
/// The first standby is the primary's only synchronous standby (`synchronous_standby_names`
/// names it), so `remote_apply` waits for it alone. The second streams asynchronously and may
/// replay late: ``start(database:secondStandbyOptions:prepare:)`` starts it after `prepare` ran
/// on the primary, with its own server options (`-c recovery_min_apply_delay=1h`), so what
/// `prepare` made is there and nothing later is.
public final class PostgresStandbyCluster: Sendable {
    /// The primary's folder, then each standby's.
    public let folders: [URL]
    /// The conninfo of the test database on the primary, then on each standby.
    public let conninfos: [String]
    /// The primary's conninfo.
    public var primary: String { conninfos[0] }
    /// Each standby's conninfo.
    public var standbys: [String] { Array(conninfos.dropFirst()) }

    private init(folders: [URL], conninfos: [String]) {
        self.folders = folders
        self.conninfos = conninfos
    }

    /// Starts the primary, creates the database `database` on it, runs `prepare` with its
    /// conninfo, then starts the two standbys (the second with `secondStandbyOptions` too) and
    /// returns once both stream. `serverOptions` (`-c fsync=on`) go to all three. About four
    /// seconds.
    public static func start(
        database: String = "app", serverOptions: String = "", secondStandbyOptions: String = "",
        prepare: @Sendable (String) async throws -> Void = { _ in }
    ) async throws -> PostgresStandbyCluster {
        let base = URL(fileURLWithPath: "/tmp", isDirectory: true)
            .appendingPathComponent("sovaria-rr-\(UUID().uuidString.prefix(8))", isDirectory: true)
        let folders = ["p", "a", "b"].map { base.appendingPathComponent($0, isDirectory: true) }
        do {
            let primary = try await run(["start", folders[0].path], options: serverOptions)
            let superuser = primary.trimmingCharacters(in: .whitespacesAndNewlines)
            try await psql(superuser, "CREATE DATABASE \(database)")
            let onDatabase = { (conninfo: String) in
                conninfo.trimmingCharacters(in: .whitespacesAndNewlines)
                    .replacingOccurrences(of: "dbname=postgres", with: "dbname=\(database)")
            }
            try await prepare(onDatabase(superuser))
            let first = try await run(["standby", folders[0].path, folders[1].path], options: serverOptions)
            let second = try await run(
                ["standby", folders[0].path, folders[2].path], options: serverOptions + " " + secondStandbyOptions)
            // Only the first standby is synchronous; the second may lag without holding commits.
            let firstPort = try String(contentsOf: folders[1].appendingPathComponent("port"), encoding: .utf8)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            try await psql(superuser, "ALTER SYSTEM SET synchronous_standby_names = '\"standby_\(firstPort)\"'")
            try await psql(superuser, "SELECT pg_reload_conf()")
            let cluster = PostgresStandbyCluster(folders: folders, conninfos: [primary, first, second].map(onDatabase))
            try await cluster.waitUntil(
                "SELECT count(*) = 2 FROM pg_stat_replication WHERE state = 'streaming'", on: superuser)
            try await cluster.waitUntil(
                "SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync' "
                    + "AND application_name = 'standby_\(firstPort)'", on: superuser)
            return cluster
        } catch {
            for folder in folders.reversed() { _ = try? await run(["stop", folder.path]) }
            try? FileManager.default.removeItem(at: base)
            throw error
        }
    }

    /// Runs SQL as the superuser on server `index` (0 the primary) and returns what psql printed.
    @discardableResult
    public func psql(_ sql: String, on index: Int = 0) async throws -> String {
        try await Self.psql(conninfos[index], sql)
    }

    /// Waits until the synchronous standby (the first, unless ``waitForStandby(_:)`` named another)
    /// has replayed everything the primary has written: a synchronous commit with `remote_apply`
    /// returns only then (no polling).
    public func waitForFirstStandby() async throws {
        try await psql("SET synchronous_commit = remote_apply; SELECT pg_logical_emit_message(true, 'sync', '')")
    }

    /// Makes standby `index` (1 or 2) the primary's only synchronous standby, then waits until it
    /// has replayed everything the primary has written (a `remote_apply` commit returns only then).
    public func waitForStandby(_ index: Int) async throws {
        let port = try String(contentsOf: folders[index].appendingPathComponent("port"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        try await psql("ALTER SYSTEM SET synchronous_standby_names = '\"standby_\(port)\"'")
        try await psql("SELECT pg_reload_conf()")
        try await waitForFirstStandby()
    }

    /// Stops standby `index` (1 or 2) with a fast shutdown; its data stays.
    public func stopStandby(_ index: Int) async throws { _ = try await Self.run(["stop", folders[index].path]) }

    /// Starts standby `index` (1 or 2) again after ``stopStandby(_:)``: a standby still, streaming
    /// from the primary when it runs; returns once it answers reads.
    public func startStandby(_ index: Int) async throws { _ = try await Self.run(["start", folders[index].path]) }

    /// Kills the primary (SIGKILL; returns once its processes are gone), then promotes the first
    /// standby and returns once it takes writes.
    public func failOver() async throws {
        try await killPrimary()
        try await promoteFirstStandby()
    }

    /// Kills the primary (SIGKILL; returns once its processes are gone).
    public func killPrimary() async throws { _ = try await Self.run(["kill", folders[0].path]) }

    /// Promotes the first standby and returns once it takes writes.
    public func promoteFirstStandby() async throws { _ = try await Self.run(["promote", folders[1].path]) }

    /// Stops every server that still runs and deletes the folders.
    public func destroy() async throws {
        for folder in folders.reversed() { _ = try? await Self.run(["stop", folder.path]) }
        try? FileManager.default.removeItem(at: folders[0].deletingLastPathComponent())
    }

    /// Polls `query` (one boolean) on `conninfo` every 20 ms until it is true, for up to 30 s:
    /// waiting for the servers' own progress, which no clock of the test drives.
    private func waitUntil(_ query: String, on conninfo: String) async throws {
        for _ in 0..<1500 {
            if try await Self.psql(conninfo, query).trimmingCharacters(in: .whitespacesAndNewlines) == "t" { return }
            try await Task.sleep(for: .milliseconds(20))
        }
        throw PostgresCluster.Failure(description: "the standbys did not start streaming: \(query)")
    }

    @discardableResult
    private static func psql(_ conninfo: String, _ sql: String) async throws -> String {
        try await PostgresCluster.runProcess(
            "/usr/bin/env", ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", conninfo, "-c", sql])
    }

    private static func run(_ arguments: [String], options: String = "") async throws -> String {
        try await PostgresCluster.runProcess(
            PostgresCluster.serverFolder.appendingPathComponent("pgcluster").path, arguments,
            environment: options.trimmingCharacters(in: .whitespaces).isEmpty ? [:] : ["PGCLUSTER_OPTIONS": options])
    }
}

extension PostgresStandbyCluster {
    private static let sharedRig = SharedStandbyCluster()

    /// A primary with two standbys shared by every test of this process that asks, started on
    /// first use and stopped at exit; tests keep apart by table. Neither standby is delayed.
    public static func shared() async throws -> PostgresStandbyCluster {
        try await sharedRig.cluster()
    }
}

/// Starts the shared standby cluster once: one task every caller awaits (the actor is reentrant).
private actor SharedStandbyCluster {
    private var starting: Task<PostgresStandbyCluster, any Error>?

    func cluster() async throws -> PostgresStandbyCluster {
        if let starting { return try await starting.value }
        let task = Task {
            let cluster = try await PostgresStandbyCluster.start()
            for folder in cluster.folders.reversed() { SharedClusterExit.register(folder.path) }
            SharedClusterExit.register(cluster.folders[0].deletingLastPathComponent().path)  // the emptied parent
            return cluster
        }
        starting = task
        return try await task.value
    }
}
