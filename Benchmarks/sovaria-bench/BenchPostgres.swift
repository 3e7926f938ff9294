import Foundation
import Sovaria
import SovariaPostgres
import SovariaTestServers
import Synchronization

/// The PostgreSQL server the benchmark measures: the one `--postgres CONNINFO` names, or a
/// throwaway cluster (`Tests/Server/pgcluster`) on this machine, reached over its Unix socket,
/// with `fsync=on` so that ``Durability/synced`` costs what it would in production.
enum BenchPostgres {
    private static let current = Mutex<(conninfo: String?, cluster: PostgresCluster?)>((nil, nil))

    /// Whether any engine the run selected is on PostgreSQL.
    static func isNeeded(_ options: BenchOptions) -> Bool {
        options.engines.isEmpty || options.engines.contains { $0.contains("postgres") }
    }

    /// Starts the throwaway cluster unless `--postgres` named a server.
    static func start(_ options: BenchOptions) async throws {
        if let conninfo = options.postgresConninfo {
            current.withLock { $0.conninfo = conninfo }
            return
        }
        let cluster = try await PostgresCluster.start(serverOptions: "-c fsync=on -c synchronous_commit=on")
        let conninfo = try await cluster.makeDatabase()
        current.withLock { $0 = (conninfo, cluster) }
    }

    /// Stops and deletes the throwaway cluster.
    static func stop() async {
        let cluster = current.withLock { current in
            defer { current = (nil, nil) }
            return current.cluster
        }
        try? await cluster?.destroy()
    }

    /// The server's conninfo; throws when ``start(_:)`` did not run.
    static func conninfo() throws -> String {
        guard let conninfo = current.withLock({ $0.conninfo }) else {
            throw BenchError.failed("postgres: no server (the benchmark starts one when a postgres engine is selected)")
        }
        return conninfo
    }

    /// The table of the store kept in `folder`: a name made when the folder is new and written
    /// into it, so the same folder reopens the same table and a fresh folder starts empty.
    static func table(for folder: URL) throws -> String {
        let marker = folder.appendingPathComponent("postgres-table")
        if let name = try? String(contentsOf: marker, encoding: .utf8) { return name }
        let name = freshTableName()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try name.write(to: marker, atomically: true, encoding: .utf8)
        return name
    }

    /// A table name no other store of the run uses.
    static func freshTableName() -> String {
        "bench_" + UUID().uuidString.replacingOccurrences(of: "-", with: "").lowercased()
    }
}
