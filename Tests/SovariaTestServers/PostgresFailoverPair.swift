import Foundation

/// A PostgreSQL primary and its synchronous streaming standby, both throwaway clusters
/// (`Tests/Server/pgcluster start` and `standby`): test equipment for failover trials.
///
/// ``conninfo`` names both servers with `target_session_attrs=read-write`, as a deployment
/// would: libpq connects to whichever one is the primary. ``failOver()`` kills the primary's
/// postmaster with SIGKILL and promotes the standby; the old primary is never started again (it
/// would be a second primary).
public final class PostgresFailoverPair: Sendable {
    /// The primary's folder and the standby's.
    public let primary: URL
    /// The standby's folder (the primary after ``failOver()``).
    public let standby: URL
    /// Both servers, the read-write one chosen by libpq.
    public let conninfo: String

    private init(primary: URL, standby: URL, conninfo: String) {
        self.primary = primary
        self.standby = standby
        self.conninfo = conninfo
    }

    /// Starts a primary and a synchronous standby streaming from it (about two seconds).
    public static func start() async throws -> PostgresFailoverPair {
        let base = URL(fileURLWithPath: "/tmp", isDirectory: true)
            .appendingPathComponent("sovaria-ha-\(UUID().uuidString.prefix(8))", isDirectory: true)
        let primary = base.appendingPathComponent("a", isDirectory: true)
        let standby = base.appendingPathComponent("b", isDirectory: true)
        let first = try await run(["start", primary.path])
        let second = try await run(["standby", primary.path, standby.path])
        let fields = [first, second].map { conninfo in
            Dictionary(
                conninfo.split(separator: " ").compactMap { field -> (String, String)? in
                    let parts = field.split(separator: "=", maxSplits: 1)
                    return parts.count == 2 ? (String(parts[0]), String(parts[1])) : nil
                }, uniquingKeysWith: { first, _ in first })
        }
        guard let hostA = fields[0]["host"], let portA = fields[0]["port"], let hostB = fields[1]["host"],
            let portB = fields[1]["port"]
        else { throw PostgresCluster.Failure(description: "pgcluster printed no host or port: \(first), \(second)") }
        let conninfo =
            "host=\(hostA),\(hostB) port=\(portA),\(portB) user=postgres dbname=postgres "
            + "target_session_attrs=read-write connect_timeout=2"
        return PostgresFailoverPair(primary: primary, standby: standby, conninfo: conninfo)
    }

    /// Kills the primary (SIGKILL to its postmaster; returns once every one of its processes has
    /// gone), then promotes the standby and returns once it takes writes.
    public func failOver() async throws {
        _ = try await Self.run(["kill", primary.path])
        _ = try await Self.run(["promote", standby.path])
    }

    /// Stops what still runs and deletes both folders.
    public func destroy() async throws {
        _ = try? await Self.run(["stop", standby.path])
        _ = try? await Self.run(["stop", primary.path])
        try? FileManager.default.removeItem(at: primary.deletingLastPathComponent())
    }

    private static func run(_ arguments: [String]) async throws -> String {
        try await PostgresCluster.runProcess(
            PostgresCluster.serverFolder.appendingPathComponent("pgcluster").path, arguments)
    }
}
