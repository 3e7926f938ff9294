import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import Synchronization

/// The crash writer's change-feed mode (`feed-<engine>`): follows an endless, fixed log of
/// changes to `notes` and applies it page by page to two cached answers, until it is killed.
///
/// The kill comes from the test (after some acknowledgements) or from the store itself
/// (``SelfKillingStore``): inside the `FIRST % 5 + 2`-th store batch, before it reaches the store
/// when FIRST is even, after when it is odd. A fresh store fetches both answers first (the table
/// is empty at position 0). Prints `pulling C` and `pulled C` around each page (C: the
/// checkpoint before and after it).
enum FeedCrashWorkload {
    static let enginePrefix = "feed-"
    /// The changes a page holds.
    static let pageSize = 40
    /// Every row, ordered by id.
    static let all = PostgREST.select("notes", columns: "id,title,done", order: "id")
    /// The rows not done, by title, without `done`.
    static let open = PostgREST.select("notes", columns: "id,title", where: [.eq("done", "false")], order: "title")

    static func run(_ store: any OfflineStore, first: Int) async throws -> Never {
        let killing = SelfKillingStore(
            store, countdown: first % 5 + 2, deletionsOnly: false, afterWrite: first % 2 == 1)
        let offline = try await SovariaOffline(
            store: killing, transport: LogFeedServer(), configuration: configuration())
        CrashWriter.acknowledge("ready")
        if try await offline.feedCheckpoint(of: "notes") == nil {
            for read in [all, open] { _ = try await offline.read(read, policy: .networkOnly) }
        }
        while true {
            let before = try await offline.feedCheckpoint(of: "notes") ?? 0
            CrashWriter.acknowledge("pulling \(before)")
            let pull = try await offline.pullChanges(of: "notes")
            CrashWriter.acknowledge("pulled \(pull.position ?? before)")
        }
    }

    /// The controller's configuration, in the child and in the test that checks what it left.
    static func configuration() -> SovariaOffline.Configuration {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = NeverFiringTimer()
        configuration.memoryPressure = nil
        configuration.overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        configuration.changeFeed = PostgRESTChangeFeed(transport: LogFeedServer())
        return configuration
    }

    /// The change at `position` (1, 2, …): one of 13 rows upserted (titled by the position, so
    /// no two rows tie in the title order; `done` flipping) or, at every fifth position, deleted.
    static func change(at position: Int) -> (key: String, row: Row?) {
        let key = "n\(String(position % 13, radix: 10))"
        guard !position.isMultiple(of: 5) else { return (key, nil) }
        return (key, Row(id: key, title: "t\(position)", done: position.isMultiple(of: 2)))
    }

    /// The table after the changes up to `position`, by id.
    static func rows(at position: Int) -> [String: Row] {
        var rows: [String: Row] = [:]
        for index in stride(from: 1, through: position, by: 1) {
            let (key, row) = change(at: index)
            rows[key] = row
        }
        return rows
    }

    /// A row of `notes`.
    struct Row: Codable, Equatable {
        var id: String
        var title: String
        var done: Bool
    }
}

/// The server of ``FeedCrashWorkload``: the feed's pages of ``FeedCrashWorkload/change(at:)``
/// (never ending), and an empty `notes` table for the first fetch.
struct LogFeedServer: SyncTransport {
    func send(_ request: DataRequest) async throws -> DataResponse {
        guard request.path.hasPrefix("/rest/v1/sovaria_feed?") else { return DataResponse(status: 200, body: "[]") }
        let after =
            request.path.split(separator: "&").first { $0.hasPrefix("position=gt.") }
            .flatMap { Int($0.dropFirst("position=gt.".count)) } ?? 0
        let changes = (after + 1...after + FeedCrashWorkload.pageSize).map { position in
            let (key, row) = FeedCrashWorkload.change(at: position)
            let body =
                row.map { #""op":"upsert","row":{"id":"\#($0.id)","title":"\#($0.title)","done":\#($0.done)}"# }
                ?? #""op":"delete","row":null"#
            return #"{"position":\#(position),"key":"\#(key)",\#(body)}"#
        }
        return DataResponse(status: 200, body: "[" + changes.joined(separator: ",") + "]")
    }
}
