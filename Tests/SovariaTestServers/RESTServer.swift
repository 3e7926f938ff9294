import Foundation
import Synchronization

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif
#if canImport(Glibc)
    import Glibc
#endif

/// The PostgREST-style test server (`Tests/Server/restserver.py`) over a fresh database of the
/// shared PostgreSQL cluster: test equipment. Stopping it takes the API off the network (a client
/// sees "cannot connect", which is offline); ``start()`` brings it back on the same port.
///
/// ```swift
/// let server = try await RESTServer.start()
/// let transport = URLSessionTransport(baseURL: server.baseURL, tokens: …, configuration: .testServer)
/// try await server.stop()        // offline
/// try await server.start()       // back
/// ```
public final class RESTServer: @unchecked Sendable {
    /// The libpq conninfo of the server's database, as the superuser.
    public let conninfo: String
    /// The cluster holding the database.
    public let cluster: PostgresCluster
    /// The loopback port the server listens on (kept across ``stop()`` and ``start()``).
    public private(set) var port = 0
    // @unchecked Sendable: `process` and `port` change only in start and stop, which a test
    // calls one at a time.
    private var process: ChildProcess?

    /// `http://127.0.0.1:<port>`.
    public var baseURL: URL { URL(string: "http://127.0.0.1:\(port)")! }

    private static let setup = SetupLock()

    /// A server over a new database of `cluster` (by default the shared one), with `schema.sql`
    /// applied.
    public static func start(on cluster: PostgresCluster? = nil) async throws -> RESTServer {
        let cluster = if let cluster { cluster } else { try await PostgresCluster.shared() }
        let conninfo = try await cluster.makeDatabase()
        // Roles are cluster-wide: one schema set-up at a time, so parallel tests do not race
        // to create them.
        try await setup.run {
            _ = try await PostgresCluster.runProcess(
                "/usr/bin/env",
                [
                    "psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", conninfo, "-f",
                    PostgresCluster.serverFolder.appendingPathComponent("schema.sql").path,
                ])
        }
        let server = RESTServer(conninfo: conninfo, cluster: cluster)
        try await server.start()
        return server
    }

    private init(conninfo: String, cluster: PostgresCluster) {
        self.conninfo = conninfo
        self.cluster = cluster
    }

    deinit {
        guard let process else { return }
        process.send(SIGTERM)
        process.waitBlocking()
    }

    /// Starts the server (on the port it had, after a ``stop()``) and waits until it listens.
    ///
    /// The first start takes a port below the kernel's ephemeral range, one no other server of
    /// this process holds: a port the kernel handed out (`--port 0`) could go, while this server
    /// is stopped, to another test's server, and the restart would find it taken.
    public func start() async throws {
        guard process == nil else { return }
        var failures: [String] = []
        for _ in 0..<20 {
            let chosen = port != 0 ? port : Self.reservePort()
            let errors = NSTemporaryDirectory() + "sovaria-restserver-\(UUID().uuidString).err"
            defer { try? FileManager.default.removeItem(atPath: errors) }
            let child = try ChildProcess(
                "/usr/bin/python3",
                [
                    PostgresCluster.serverFolder.appendingPathComponent("restserver.py").path, "--conninfo", conninfo,
                    "--port", String(chosen), "--db-pre-request", "sovaria_pre_request",
                ], captureOutput: true, errorFile: errors)
            let line = try await PostgresCluster.onThread { Self.firstLine(of: child.output) }
            if line.hasPrefix("listening "), let listening = Int(line.dropFirst("listening ".count)) {
                process = child
                port = listening
                return
            }
            child.send(SIGKILL)
            try await child.wait()
            let message = (try? String(contentsOfFile: errors, encoding: .utf8)) ?? ""
            failures.append("port \(chosen): \(message.suffix(400))")
            // A port another process took while this server was not on it: only a fresh start may
            // move to another.
            guard port == 0, message.contains("Address already in use") else { break }
        }
        throw PostgresCluster.Failure(description: "restserver.py did not start: \(failures.joined(separator: "; "))")
    }

    /// The ports this process's servers hold, stopped or not.
    private static let reserved = Mutex<Set<Int>>([])

    /// A port from 20000 to 32767 (below the ephemeral range) no server of this process holds.
    private static func reservePort() -> Int {
        reserved.withLock { taken in
            var port: Int
            repeat { port = Int.random(in: 20_000...32_767) } while taken.contains(port)
            taken.insert(port)
            return port
        }
    }

    /// Stops the server (SIGTERM) and waits for it to exit: the port refuses connections.
    public func stop() async throws {
        guard let process else { return }
        self.process = nil
        process.send(SIGTERM)
        try await process.wait()
    }

    /// Sends a control request (`/_test/…`) and returns the status and body.
    @discardableResult
    public func control(_ method: String, _ path: String, json: String? = nil) async throws -> (Int, String) {
        var request = URLRequest(url: baseURL.appendingPathComponent(path))
        request.httpMethod = method
        request.timeoutInterval = 60
        if let json {
            request.httpBody = Data(json.utf8)
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        }
        let (data, response) = try await URLSession.shared.data(for: request)
        return ((response as? HTTPURLResponse)?.statusCode ?? 0, String(decoding: data, as: UTF8.self))
    }

    /// The requests the server received (`GET /_test/requests`), oldest first.
    public func requests() async throws -> [ReceivedRequest] {
        let (_, body) = try await control("GET", "/_test/requests")
        return try JSONDecoder().decode([ReceivedRequest].self, from: Data(body.utf8))
    }

    /// Runs SQL on the server's database as the superuser (RLS does not apply) and returns
    /// `psql`'s unaligned rows.
    public func query(_ sql: String) async throws -> [String] {
        let database = conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }.map {
            String($0.dropFirst("dbname=".count))
        }
        let output = try await cluster.psql(sql, database: database)
        return output.split(separator: "\n", omittingEmptySubsequences: true).map(String.init)
    }

    /// A request in the server's log.
    public struct ReceivedRequest: Decodable, Sendable, Hashable {
        /// The HTTP method.
        public var method: String
        /// The path with its query.
        public var path: String
        /// Its `Idempotency-Key`, if any.
        public var idempotencyKey: String?
        /// The status answered (or that would have been, for a dropped answer).
        public var status: Int?
        /// Whether the answer was replayed from the idempotency table.
        public var replayed: Bool
        /// Whether the connection was dropped instead of answering.
        public var dropped: Bool

        enum CodingKeys: String, CodingKey {
            case method, path, status, replayed, dropped
            case idempotencyKey = "idempotency_key"
        }
    }

    private static func firstLine(of handle: FileHandle?) -> String {
        var line = Data()
        while let byte = handle?.readData(ofLength: 1), let first = byte.first, first != UInt8(ascii: "\n") {
            line.append(first)
        }
        return String(decoding: line, as: UTF8.self)
    }
}

/// One schema set-up at a time.
private actor SetupLock {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func run(_ body: @Sendable () async throws -> Void) async throws {
        while busy { await withCheckedContinuation { waiting.append($0) } }
        busy = true
        defer {
            busy = false
            if !waiting.isEmpty { waiting.removeFirst().resume() }
        }
        try await body()
    }
}
