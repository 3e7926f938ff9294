import Foundation
import Sovaria
import SovariaCache
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSQLite
import SovariaSync

/// A small notes app on Sovaria, for `make demo`: each run is one command against a store on disk
/// and a PostgREST-style server, as Alice (`token-alice`).
///
/// Notes have no version: an edit of a note deleted elsewhere is rejected as matching no row.
/// Tasks have one (the server's trigger increments `version` on every update): an edit of a task
/// changed elsewhere since this device read it is a conflict, kept until `resolve`.
///
/// ```
/// sovaria-notes --store DIR --server URL add ID TITLE [--owner ROLE]
/// sovaria-notes --store DIR --server URL done ID | rename ID TITLE | delete ID
/// sovaria-notes --store DIR --server URL pending | sync | rejected | list
/// sovaria-notes --store DIR --server URL task-add ID TITLE | task-rename ID TITLE | tasks
/// sovaria-notes --store DIR --server URL conflicts | resolve ID TITLE
/// sovaria-notes --store DIR --server URL watch --until TITLE
/// ```
///
/// `watch` is a live list: it follows the server's change feed (`ChangeFeed.sql`) and prints the
/// notes each time another device's change reaches them, without fetching the list again.
@main
enum SovariaNotes {
    static func main() async {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let store = option("--store", in: &arguments),
            let server = option("--server", in: &arguments).flatMap(URL.init(string:)),
            let command = arguments.first
        else {
            print(
                "usage: sovaria-notes --store DIR --server URL add ID TITLE [--owner ROLE] | done ID | rename ID TITLE"
                    + " | delete ID | pending | sync | rejected | list | task-add ID TITLE | task-rename ID TITLE"
                    + " | tasks | conflicts | resolve ID TITLE | watch --until TITLE"
            )
            exit(2)
        }
        do {
            let app = try await open(store: store, server: server, following: command == "watch")
            try await run(command, Array(arguments.dropFirst()), on: app)
            await app.close()
        } catch {
            print("error: \(error)")
            exit(1)
        }
    }

    static func open(store folder: String, server: URL, following: Bool) async throws -> SovariaOffline {
        let store = try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: folder).appendingPathComponent("notes.sqlite"))
        let transport = URLSessionTransport(
            baseURL: server, tokens: AliceToken(),
            configuration: {
                var c = URLSessionTransport.Configuration(); c.timeout = .seconds(5); return c
            }())
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        // Read-your-writes: the notes and tasks written offline show in `list` and `tasks` at once.
        // The test server's database orders text by its bytes (the C collation); `done` defaults
        // to false, a new task's `version` to 1.
        configuration.overlay = PostgRESTOverlay(
            tables: [
                "notes": .init(primaryKey: "id", defaults: ["done": "false"]),
                "tasks": .init(primaryKey: "id", defaults: ["done": "false", "version": "1"]),
            ],
            textOrder: .bytes)
        // A task edit records the version of the task as this device last read it, and applies
        // only if the server's row still has it; otherwise it is a conflict the user resolves.
        configuration.conflictRules["tasks"] = ConflictRule(versionColumn: "version", onConflict: .reject)
        // `watch` follows the notes' change feed: the server holds each read until a change
        // commits (a long poll), and the overlay brings the cached list up to date with it.
        if following {
            configuration.changeFeed = PostgRESTChangeFeed(transport: transport)
            configuration.followedTables = ["notes"]
            configuration.feedWait = .seconds(4)  // below the transport's 5-second timeout
        }
        let offline = try await SovariaOffline(store: store, transport: transport, configuration: configuration)
        offline.onSyncError = { error in
            guard case .rejected(let rejected) = error.kind else { return }
            let request = rejected.write.request
            switch rejected.reason {
            case .noMatchingRow:
                print("  did not apply, the row is gone on the server: \(request.method) \(request.path)")
            case .conflict, .serverWon:
                print(
                    "  did not apply, the row changed on the server since this device read it:"
                        + " \(request.method) \(request.path)")
            case .refused:
                print("  refused by the server (\(rejected.status)): \(request.method) \(request.path)")
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
            let note = NewNote(id: arguments[0], title: arguments[1], owner: owner)
            report(try await app.write(try PostgREST.insert(into: "notes", value: note)), what: "add \(arguments[0])")
        case "done":
            guard arguments.count == 1 else { throw Usage("done ID") }
            report(
                try await app.write(
                    try PostgREST.update("notes", where: [.eq("id", arguments[0])], set: ["done": true])),
                what: "done \(arguments[0])")
        case "rename":
            guard arguments.count == 2 else { throw Usage("rename ID TITLE") }
            report(
                try await app.write(
                    try PostgREST.update("notes", where: [.eq("id", arguments[0])], set: ["title": arguments[1]])),
                what: "rename \(arguments[0])")
        case "delete":
            guard arguments.count == 1 else { throw Usage("delete ID") }
            report(
                try await app.write(PostgREST.delete(from: "notes", where: [.eq("id", arguments[0])])),
                what: "delete \(arguments[0])")
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
            print("\(rejected.count) write(s) that did not apply (kept, not lost):")
            for write in rejected {
                print(
                    "  \(write.reason) (\(write.status)) \(write.write.request.method) \(write.write.request.path)"
                        + " \(write.write.request.body ?? "")")
                print("      \(write.message)")
            }
        case "list":
            let read: TypedRead<[Note]>
            do {
                read = try await app.read(Self.notes, as: [Note].self, maxAge: .zero)
            } catch let error as SyncTransportError where error.code == .offline {
                print("notes: offline, and none cached or written yet")
                return
            }
            let origin =
                switch read.read.source {
                case .network: "from the server"
                case .memory, .store: "from the cache, offline"
                case .none: "offline, nothing cached yet"
                }
            print("notes (\(origin)\(read.read.hasPendingWrites ? ", with the writes waiting to sync" : "")):")
            let waiting = Set(read.read.pendingRows.compactMap(\.key))
            for note in read.value ?? [] {
                let mark = waiting.contains(JSONText.string(note.id)) ? "   (waiting to sync)" : ""
                print("  [\(note.done ? "x" : " ")] \(note.id)  \(note.title)\(mark)")
            }
            if !read.read.isExact {
                print(
                    "  (may change once synced: \(read.read.inexactReasons.map(\.description).joined(separator: "; ")))"
                )
            }
        case "task-add":
            guard arguments.count == 2 else { throw Usage("task-add ID TITLE") }
            let task = NewTask(id: arguments[0], title: arguments[1])
            report(
                try await app.write(try PostgREST.insert(into: "tasks", value: task)), what: "task-add \(arguments[0])")
        case "task-rename":
            guard arguments.count == 2 else { throw Usage("task-rename ID TITLE") }
            report(
                try await app.write(
                    try PostgREST.update("tasks", where: [.eq("id", arguments[0])], set: ["title": arguments[1]])),
                what: "task-rename \(arguments[0])")
        case "tasks":
            try await listTasks(on: app)
        case "conflicts":
            let conflicts = try await app.conflicts()
            print("\(conflicts.count) conflict(s) waiting for you:")
            for conflict in conflicts {
                let request = conflict.write.request
                let server = conflict.serverRow.flatMap(TaskRow.init(json:))
                print(
                    "  task \(QueryFilter.value(of: "id", in: request.path) ?? "?"): this device wrote"
                        + " \(request.body ?? "") on version \(QueryFilter.value(of: "version", in: request.path) ?? "?")"
                )
                print("      the server has \"\(server?.title ?? "?")\" at version \(server?.version ?? 0)")
            }
        case "resolve":
            guard arguments.count == 2 else { throw Usage("resolve ID TITLE") }
            let id = arguments[0]
            guard
                let conflict = try await app.conflicts().first(where: {
                    QueryFilter.value(of: "id", in: $0.write.request.path) == id
                })
            else { throw Usage("resolve ID TITLE: no conflict on task \(id)") }
            // The merged edit goes out expecting the version of the server's row the conflict
            // holds, so it applies only if nobody changed the task again meanwhile.
            let merged = try PostgREST.update("tasks", where: [.eq("id", id)], set: ["title": arguments[1]])
            let resolution = try await app.resolve(conflict.id, with: merged)
            print(
                "resolve \(id): queued \(resolution.request.method) \(resolution.request.path) \(resolution.request.body ?? "")"
            )
            let synced = try await app.flush()
            print(
                "synced \(synced) write(s); \(try await app.pendingWrites().count) still pending,"
                    + " \(try await app.conflicts().count) conflict(s) left")
        case "watch":
            guard let until = option("--until", in: &arguments), arguments.isEmpty else {
                throw Usage("watch --until TITLE")
            }
            var answers = 0
            var fetches = 0
            for try await answer in app.observe(Self.notes, as: [Note].self) {
                answers += 1
                let how: String
                if answer.read.source == .network {
                    fetches += 1
                    how = "fetched from the server"
                } else {
                    how = answers == 1 ? "from the cache" : "changed by the feed, not fetched"
                }
                print("live list (\(how); lists fetched so far: \(fetches)):")
                for note in answer.value ?? [] { print("  [\(note.done ? "x" : " ")] \(note.id)  \(note.title)") }
                fflush(nil)  // each answer as it comes, also when the output is a file
                if answer.value?.contains(where: { $0.title == until }) == true { break }
            }
        default:
            throw Usage("unknown command \(command)")
        }
    }

    /// The notes list `list` and `watch` show.
    static let notes = PostgREST.select("notes", columns: "id,title,done", order: "id")

    static func listTasks(on app: SovariaOffline) async throws {
        let read: TypedRead<[TaskRow]>
        do {
            read = try await app.read(
                PostgREST.select("tasks", columns: "id,title,version", order: "id"), as: [TaskRow].self, maxAge: .zero)
        } catch let error as SyncTransportError where error.code == .offline {
            print("tasks: offline, and none cached or written yet")
            return
        }
        let origin = read.read.source == .network ? "from the server" : "from the cache, offline"
        print("tasks (\(origin)):")
        let waiting = Set(read.read.pendingRows.compactMap(\.key))
        let conflicted = Set(read.read.conflictedRows.map(\.key))
        for task in read.value ?? [] {
            let mark =
                conflicted.contains(task.id)
                ? "   (conflict: needs you)" : waiting.contains(JSONText.string(task.id)) ? "   (waiting to sync)" : ""
            print("  \(task.id)  v\(task.version)  \(task.title)\(mark)")
        }
    }

    static func report(_ outcome: WriteOutcome, what: String) {
        switch outcome {
        case .sent(let response): print("\(what): sent, the server answered \(response.status)")
        case .queued(let write): print("\(what): server unreachable, queued as #\(write.sequence)")
        case .rejected(let rejected): print("\(what): did not apply (\(rejected.reason)), kept as rejected")
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

/// A note as `list` shows it.
struct Note: Decodable, Sendable {
    var id: String
    var title: String
    var done: Bool
}

/// A note as `add` writes it: the server fills in `done` and `owner` unless it is given.
struct NewNote: Encodable {
    var id: String
    var title: String
    var owner: String?
}

/// A task as `tasks` shows it, and as a conflict holds the server's row.
struct TaskRow: Decodable, Sendable {
    var id: String
    var title: String
    var version: Int

    init?(json: String) {
        guard let row = try? JSONDecoder().decode(TaskRow.self, from: Data(json.utf8)) else { return nil }
        self = row
    }
}

/// A task as `task-add` writes it: the server starts its version at 1.
struct NewTask: Encodable {
    var id: String
    var title: String
}

/// The value a request's query gives a column in an `eq.` filter (`id=eq.t1` gives `t1`).
enum QueryFilter {
    static func value(of column: String, in path: String) -> String? {
        let value = URLComponents(string: path)?.queryItems?.first(where: { $0.name == column })?.value
        guard let value, value.hasPrefix("eq.") else { return nil }
        return String(value.dropFirst(3))
    }
}

/// JSON text of a value, to match ``PendingRow/key``.
enum JSONText {
    static func string(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data(), as: UTF8.self)
    }
}

/// Alice's session on the test server.
struct AliceToken: AccessTokenProvider {
    func accessToken() async throws -> String? { "token-alice" }
    func refreshAccessToken() async throws {}
}
