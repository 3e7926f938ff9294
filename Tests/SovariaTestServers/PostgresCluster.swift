import Foundation
import Synchronization

/// A throwaway PostgreSQL cluster for tests, run by `Tests/Server/pgcluster`: test equipment.
///
/// `PostgresCluster.shared` is one cluster per test process, started on first use and stopped when
/// the process exits; a test that restarts or stops its server starts a cluster of its own.
/// Each test takes a database of its own with `makeDatabase()`, so tests never see each other's
/// tables.
///
/// ```swift
/// let cluster = try await PostgresCluster.shared()
/// let conninfo = try await cluster.makeDatabase()
/// ```
public final class PostgresCluster: Sendable {
    /// Why the cluster could not be used.
    public struct Failure: Error, CustomStringConvertible {
        /// What went wrong, with the script's output.
        public let description: String

        /// A failure saying `description`.
        public init(description: String) { self.description = description }
    }

    /// The folder that holds the cluster's data, socket and log.
    public let directory: URL
    /// The libpq conninfo of the cluster's `postgres` database, as the superuser `postgres`.
    public let conninfo: String
    /// The loopback TCP port the server listens on.
    public let port: Int

    /// The repository's `Tests/Server` folder, found from this source file's path.
    public static let serverFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Server")

    private static let sharedCluster = SharedCluster()

    /// The cluster shared by every test of this process, started on first use.
    public static func shared() async throws -> PostgresCluster {
        try await sharedCluster.cluster(named: "")
    }

    /// A cluster of its own for the tests that name it, started on first use and stopped at exit:
    /// for tests whose outcome depends on every transaction of the cluster (the change feed serves
    /// a change only once every transaction older than it has ended, so another test's running
    /// transaction on a shared cluster would hold its changes back). Autovacuum is off there: an
    /// ANALYZE takes a transaction id too, and one that ran across a test's write would hold it
    /// back from the test's next pull.
    public static func shared(named name: String) async throws -> PostgresCluster {
        try await sharedCluster.cluster(named: name)
    }

    /// Server options (`-c name=value …`) given at start, passed again on every restart.
    public let serverOptions: String

    /// Starts a new cluster in a new temporary folder (about a second), with `serverOptions`
    /// (`PGCLUSTER_OPTIONS`, e.g. `"-c fsync=on"`) added to the server's command line.
    public static func start(serverOptions: String = "") async throws -> PostgresCluster {
        let directory = URL(fileURLWithPath: "/tmp", isDirectory: true)
            .appendingPathComponent("sovaria-pg-\(UUID().uuidString.prefix(8))", isDirectory: true)
        let output = try await run(["start", directory.path], serverOptions: serverOptions)
        return try PostgresCluster(directory: directory, conninfo: output, serverOptions: serverOptions)
    }

    private init(directory: URL, conninfo: String, serverOptions: String) throws {
        self.serverOptions = serverOptions
        self.directory = directory
        self.conninfo = conninfo.trimmingCharacters(in: .whitespacesAndNewlines)
        guard let portField = self.conninfo.split(separator: " ").first(where: { $0.hasPrefix("port=") }),
            let port = Int(portField.dropFirst("port=".count))
        else { throw Failure(description: "pgcluster printed no port: \(conninfo)") }
        self.port = port
    }

    /// Creates an empty database with a fresh name and returns its conninfo.
    public func makeDatabase() async throws -> String {
        let name = "t_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased().prefix(16)
        try await psql("CREATE DATABASE \(name)")
        return conninfo.replacingOccurrences(of: "dbname=postgres", with: "dbname=\(name)")
    }

    /// Runs SQL with `psql` as the superuser on `database` (the `postgres` database by default)
    /// and returns what it printed (unaligned, tuples only, `|` between columns).
    @discardableResult
    public func psql(_ sql: String, database: String? = nil) async throws -> String {
        var target = conninfo
        if let database { target = target.replacingOccurrences(of: "dbname=postgres", with: "dbname=\(database)") }
        return try await Self.runProcess(
            "/usr/bin/env", ["psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", target, "-c", sql])
    }

    /// Stops the server; its data stays, so `restart()` brings the same databases back.
    public func stop() async throws { _ = try await Self.run(["stop", directory.path]) }

    /// Starts the server again on the same port (after `stop()`, or stopping and starting it).
    public func restart() async throws {
        _ = try await Self.run(["restart", directory.path], serverOptions: serverOptions)
    }

    /// Stops the server and deletes its folder.
    public func destroy() async throws {
        try await stop()
        try? FileManager.default.removeItem(at: directory)
    }

    private static func run(_ arguments: [String], serverOptions: String = "") async throws -> String {
        try await runProcess(
            serverFolder.appendingPathComponent("pgcluster").path, arguments,
            environment: serverOptions.isEmpty ? [:] : ["PGCLUSTER_OPTIONS": serverOptions])
    }

    /// Runs `body` on a thread of its own, never blocking Swift's cooperative threads, and
    /// returns its result.
    public static func onThread<Result: Sendable>(
        _ body: @escaping @Sendable () throws -> Result
    ) async throws
        -> Result
    {
        try await withCheckedThrowingContinuation { continuation in
            let thread = Thread { continuation.resume(with: Swift.Result { try body() }) }
            thread.start()
        }
    }

    /// Runs a program to its end on a thread of its own (never blocking Swift's cooperative
    /// threads) and returns its standard output; a non-zero exit throws with its standard error.
    public static func runProcess(
        _ path: String, _ arguments: [String], environment: [String: String] = [:]
    ) async throws -> String {
        try await onThread { try ChildProcess.run(path, arguments, environment: environment) }
    }
}

/// Starts the shared cluster once, and stops it when the process exits.
///
/// The start is one task that every caller awaits: the actor is reentrant across the `await`, so
/// keeping only the finished cluster let every test that asked during the first second start a
/// cluster of its own (50 of them in one run).
private actor SharedCluster {
    private var starting: [String: Task<PostgresCluster, any Error>] = [:]

    func cluster(named name: String) async throws -> PostgresCluster {
        if let starting = starting[name] { return try await starting.value }
        // Every test of the process shares it, and each store keeps its idle connections: room
        // for more than the default 100 sessions (a full run reached over 300 on the machine at
        // once; the test server waits for a free slot past this).
        let task = Task {
            let options = "-c max_connections=1000" + (name.isEmpty ? "" : " -c autovacuum=off")
            let cluster = try await PostgresCluster.start(serverOptions: options)
            SharedClusterExit.register(cluster.directory.path)
            return cluster
        }
        starting[name] = task
        return try await task.value
    }
}

/// Stops the shared clusters at process exit (`atexit`), so no server outlives the tests.
/// Registered from several actors (the shared cluster's, the standby rig's): one lock.
enum SharedClusterExit {
    private static let directories = Mutex<[String]>([])

    static func register(_ directory: String) {
        let first = directories.withLock { directories in
            directories.append(directory)
            return directories.count == 1
        }
        guard first else { return }
        atexit {
            for directory in SharedClusterExit.directories.withLock({ $0 }) {
                let script = PostgresCluster.serverFolder.appendingPathComponent("pgcluster").path
                _ = try? ChildProcess.run(script, ["stop", directory])
                try? FileManager.default.removeItem(atPath: directory)
            }
        }
    }
}
