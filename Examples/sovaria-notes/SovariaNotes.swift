import Foundation
import Sovaria
import SovariaCache
import SovariaHTTP
import SovariaQueue
import SovariaSQLite
import SovariaSync

/// A small notes app on Sovaria, for `make demo`: each run is one command against a store on disk
/// and a PostgREST-style server, as Alice (`token-alice`).
///
/// ```
/// sovaria-notes --store DIR --server URL add ID TITLE [--owner ROLE]
/// sovaria-notes --store DIR --server URL done ID
/// sovaria-notes --store DIR --server URL pending | sync | rejected | list
/// ```
@main
enum SovariaNotes {
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let store = option("--store", in: &arguments),
            let server = option("--server", in: &arguments).flatMap(URL.init(string:)),
            let command = arguments.first
        else {
            print(
                "usage: sovaria-notes --store DIR --server URL add ID TITLE [--owner ROLE] | done ID | pending | sync | rejected | list"
            )
            exit(2)
        }
        do {
            let app = try await open(store: store, server: server)
            try await run(command, Array(arguments.dropFirst()), on: app)
            await app.close()
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }

    static func open(store folder: String, server: URL) async throws -> SovariaOffline {
        let store = try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: folder).appendingPathComponent("notes.sqlite"))
        let transport = URLSessionTransport(
            baseURL: server, tokens: AliceToken(),
            configuration: {
                var c = URLSessionTransport.Configuration(); c.timeout = .seconds(5); return c
            }())
        let offline = try await SovariaOffline(store: store, transport: transport)
        offline.onSyncError = { error in
            if case .rejected(let rejected) = error.kind {
                print(
                    "  refused by the server (\(rejected.status)): \(rejected.write.request.method) \(rejected.write.request.path)"
                )
            }
        }
        return offline
    }

    static func run(_ command: String, _ arguments: [String], on app: SovariaOffline) async throws {
        var arguments = arguments
        switch command {
        case "add":
            let owner = option("--owner", in: &arguments)
            guard arguments.count == 2 else { throw Usage("add ID TITLE [--owner ROLE]") }
            var json = #"{"id":"\#(arguments[0])","title":"\#(arguments[1])""#
            if let owner { json += #","owner":"\#(owner)""# }
            report(try await app.write(PostgREST.insert(into: "notes", json: json + "}")), what: "add \(arguments[0])")
        case "done":
            guard arguments.count == 1 else { throw Usage("done ID") }
            report(
                try await app.write(
                    PostgREST.update("notes", where: [.eq("id", arguments[0])], json: #"{"done":true}"#)),
                what: "done \(arguments[0])")
        case "pending":
            let pending = try await app.pendingWrites()
            print("\(pending.count) write(s) waiting to be sent, oldest first:")
            for write in pending {
                print("  #\(write.sequence) \(write.request.method) \(write.request.path) \(write.request.body ?? "")")
            }
        case "sync":
            let synced = try await app.flush()
            print("synced \(synced) write(s); \(try await app.pendingWrites().count) still pending")
        case "rejected":
            let rejected = try await app.rejectedWrites()
            print("\(rejected.count) write(s) the server refused (kept, not lost):")
            for write in rejected {
                print("  \(write.status) \(write.write.request.method) \(write.write.request.body ?? "")")
                print("      \(write.message)")
            }
        case "list":
            let read: CacheRead
            do {
                read = try await app.read(
                    PostgREST.select("notes", columns: "id,title,done", order: "id"), maxAge: .zero)
            } catch SyncTransportError.offline {
                print("notes: offline, and none cached yet")
                return
            }
            print("notes (\(read.source == .network ? "from the server" : "from the cache, offline")):")
            print("  " + (read.response?.body ?? "none"))
        default:
            throw Usage("unknown command \(command)")
        }
    }

    static func report(_ outcome: WriteOutcome, what: String) {
        switch outcome {
        case .sent(let response): print("\(what): sent, the server answered \(response.status)")
        case .queued(let write): print("\(what): server unreachable, queued as #\(write.sequence)")
        }
    }

    static func option(_ name: String, in arguments: inout [String]) -> String? {
        guard let index = arguments.firstIndex(of: name), index + 1 < arguments.count else { return nil }
        let value = arguments[index + 1]
        arguments.removeSubrange(index...index + 1)
        return value
    }

    struct Usage: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = "usage: " + description }
    }
}

/// Alice's session on the test server.
struct AliceToken: AccessTokenProvider {
    func accessToken() async throws -> String? { "token-alice" }
    func refreshAccessToken() async throws {}
}
