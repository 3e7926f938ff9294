import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaSync

/// The crash writer's account-switch mode (`switch-<engine>`): three users take turns on one
/// store. Each signs in, queues three writes offline, sometimes flushes, and signs out keeping
/// its unsynced writes; the kill lands in writes, flushes and sign-outs (which delete the
/// account's answers while its queue must stay whole).
///
/// Prints `enqueuing N` / `queued N` around each write, `flushing N` / `flushed N` around each
/// flush and `switching N` / `switched N` around each sign-out (N: the last write queued). The
/// server (``AuthorLogServer``) logs the token's user beside each write's author.
enum AccountSwitchCrashWorkload {
    static let enginePrefix = "switch-"
    static let users = ["alice", "bob", "carol"]

    /// Write `index` by `author`: both in the path, so the server can log them.
    static func request(_ index: Int, by author: String) -> DataRequest {
        DataRequest(
            method: "POST", path: "/rest/v1/notes?author=\(author)&n=\(index)", headers: ["Prefer": "return=minimal"],
            body: #"{"n":\#(index)}"#)
    }

    /// A controller for `user` on `store`, sending with `user`'s token to the logging server.
    static func signIn(
        _ user: String, on store: any OfflineStore, folder: URL
    ) async throws -> (SovariaOffline, AuthorLogServer) {
        let server = AuthorLogServer(path: folder.appendingPathComponent("server.log").path, user: user)
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.account = try AccountID(user)
        configuration.timer = NeverFiringTimer()
        configuration.memoryPressure = nil
        return (try await SovariaOffline(store: store, transport: server, configuration: configuration), server)
    }

    static func run(_ store: any OfflineStore, folder: URL, first: Int) async throws -> Never {
        CrashWriter.acknowledge("ready")
        var index = first
        var turn = first
        while true {
            let user = users[turn % users.count]
            let (offline, server) = try await signIn(user, on: store, folder: folder)
            server.online = false
            // An answer to forget at the sign-out.
            _ = try? await offline.read(PostgREST.select("notes"), policy: .cacheOnly)
            for _ in 0..<3 {
                CrashWriter.acknowledge("enqueuing \(index)")
                guard case .queued = try await offline.write(request(index, by: user)) else {
                    throw OfflineStoreError(.io, "an offline write was sent")
                }
                CrashWriter.acknowledge("queued \(index)")
                index += 1
            }
            if turn.isMultiple(of: 2) {
                server.online = true
                CrashWriter.acknowledge("flushing \(index - 1)")
                _ = try await offline.flush()
                CrashWriter.acknowledge("flushed \(index - 1)")
            }
            CrashWriter.acknowledge("switching \(index - 1)")
            try await offline.signOut(keepingUnsyncedWrites: true)
            CrashWriter.acknowledge("switched \(index - 1)")
            turn += 1
        }
    }
}

/// A server for the account-switch crash test: appends `<Idempotency-Key> <n> <author> <user>`
/// to a log file for every write (the user being the one whose token the transport sends) and
/// answers 201; offline while ``online`` is false.
final class AuthorLogServer: SyncTransport {
    private let log: LogServer
    let user: String

    init(path: String, user: String) {
        log = LogServer(path: path)
        self.user = user
    }

    var online: Bool {
        get { log.online }
        set { log.online = newValue }
    }

    func send(_ request: DataRequest) async throws -> DataResponse {
        guard request.method != "GET" else {
            guard online else { throw SyncTransportError.offline("the crash test's server is off") }
            return DataResponse(status: 200, body: "[]")
        }
        // The log server writes `<key> <last = value>`: make that value `<n>-<author>-<user>`.
        var tagged = request
        let author = request.path.split(separator: "author=").last?.split(separator: "&").first ?? "-"
        let number = request.path.split(separator: "n=").last ?? "-"
        tagged.path = "/rest/v1/notes?tag=\(number)-\(author)-\(user)"
        return try await log.send(tagged)
    }

    /// Every `(key, number, author, user)` the server received, in order.
    static func received(at path: String) -> [(key: String, number: Int, author: String, user: String)] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2 else { return nil }
            let tag = parts[1].split(separator: "-")
            guard tag.count == 3, let number = Int(tag[0]) else { return nil }
            return (String(parts[0]), number, String(tag[1]), String(tag[2]))
        }
    }
}
