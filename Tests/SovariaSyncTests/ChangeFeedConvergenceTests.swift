import Foundation
import Sovaria
import SovariaCache
import SovariaQueue
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaPostgREST
@_spi(Diagnostics) @testable import SovariaSync

/// Three devices on three engines follow one table's change feed while they write, go offline,
/// restart, fail a store batch mid-apply, and their transports drop, lose, duplicate and delay
/// answers; a server in the process keeps the table and its log (in commit order, as
/// `ChangeFeed.sql` serves it) and answers a fixed set of queries by its own code. At quiet
/// moments, every answer a device calls exact equals the server's; at the end, after each device
/// has synced and caught up, every answer does. Two of the devices skip backlogs past a limit
/// (their answers fetched again), one applies every change.
@Suite struct ChangeFeedConvergenceTests {
    /// The fixed queries: every column by key; a filter ordered by text; a page; `select=*` with a
    /// numeric filter; an equality on a number and one on the key (a page finds the answers a
    /// change can alter by these: one it passes over wrongly keeps an old row).
    static let queries = [
        PostgREST.select("notes", columns: "id,title,done,rank", order: "id"),
        PostgREST.select("notes", columns: "id,title", where: [.eq("done", "false")], order: "title,id"),
        PostgREST.select("notes", columns: "id,rank", order: "rank.desc,id", limit: 3),
        PostgREST.select("notes", where: [.gte("rank", "5")], order: "id"),
        PostgREST.select("notes", columns: "id,title,rank", where: [.eq("rank", "3")], order: "id"),
        PostgREST.select("notes", columns: "id,title,done", where: [.eq("id", "n2")]),
    ]

    static let overlay = PostgRESTOverlay(
        tables: ["notes": .init(primaryKey: "id", columns: ["id", "title", "done", "rank"])], textOrder: .bytes)

    @Test(arguments: Array(1...24) as [UInt64])
    func devicesOnThreeEnginesConvergeUnderFaults(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let server = FeedServer()
        for index in 0..<6 { server.change("s\(index)", &random) }
        var devices: [FeedDevice] = []
        // One device applies every change; the others skip backlogs past 4 and 7 (pages of 3).
        // The first joins full pages into one pull, the second reads one page per pull, the
        // third joins pages until about five changes' rows (a row and its key are about 50 bytes).
        for (engine, refetchPast, pullBytes) in [
            (SyncEngine.memory, nil, 1 << 20), (.sqlite(.flushed), 4, 0), (.lmdb(.flushed), 7, 250),
        ] as [(SyncEngine, Int?, Int)] {
            devices.append(
                try await FeedDevice(
                    engine, server: server, seed: random.next(), refetchPast: refetchPast, pullBytes: pullBytes))
        }
        var exactChecks = 0
        for step in 0..<240 {
            let device = devices[Int.random(in: 0..<devices.count, using: &random)]
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<28: _ = try? await device.offline.write(Self.randomWrite(device, step: step, &random))
            case 28..<42: _ = try? await device.offline.read(Self.queries.randomElement(using: &random)!)
            case 42..<62:
                let pulled = try? await device.offline.pullChanges(of: "notes")
                #expect(device.pullBytes > 0 || (pulled?.changes ?? 0) <= 3, "one page per pull: \(pulled as Any)")
            case 62..<70: _ = try? await device.offline.flush()
            case 70..<78: server.change(nil, &random)
            case 78..<84: device.transport.online.toggle()
            case 84..<89: try await device.restart()
            case 89..<93:
                // A crash in the middle of an apply: its batch fails, and the app starts again.
                device.batches.failNext()
                _ = try? await device.offline.pullChanges(of: "notes")
                device.batches.clearFailure()
                try await device.restart()
            default:
                exactChecks += try await Self.quietCheck(device, server: server)
            }
        }
        // Everything online and quiet: every write synced, then every device caught up.
        for device in devices {
            device.transport.online = true
            device.transport.faultsOn = false
            _ = try await device.offline.flush()
        }
        for device in devices { exactChecks += try await Self.quietCheck(device, server: server) }
        var fromTheFeed = 0
        for device in devices {
            for query in Self.queries {
                var answer = try await device.offline.read(query, policy: .cacheOnly)
                if answer.isExact, answer.body != nil { fromTheFeed += 1 }
                // Not cached (never read on that device), or not exact: what an app reads next.
                if !answer.isExact || answer.body == nil {
                    answer = try await device.offline.read(query, policy: .networkOnly)
                }
                #expect(
                    try Self.rows(answer.body) == Self.rows(server.answer(query.path)),
                    "seed \(seed), \(device.name), \(query.path): \(answer.body ?? "") \(answer.inexactReasons)\nserver: \(server.answer(query.path))"
                )
            }
            await device.offline.close()
        }
        #expect(exactChecks > 0 && fromTheFeed > 0, "the run checked answers the feed kept exact")
        #expect(server.skips > 0, "a device skipped a backlog (5 to 15 times a seed when written)")
    }

    /// With the faults off: the device syncs, catches up, and each answer it calls exact (with
    /// nothing pending) must equal the server's. Returns how many it compared.
    static func quietCheck(_ device: FeedDevice, server: FeedServer) async throws -> Int {
        let faults = device.transport.faultsOn
        device.transport.online = true
        device.transport.faultsOn = false
        defer { device.transport.faultsOn = faults }
        _ = try await device.offline.flush()
        while try await device.offline.pullChanges(of: "notes").hasMore {}
        var compared = 0
        for query in queries {
            let answer = try await device.offline.read(query, policy: .cacheOnly)
            guard answer.isExact, !answer.hasPendingWrites, answer.body != nil else { continue }
            #expect(
                try rows(answer.body) == rows(server.answer(query.path)),
                "\(device.name) called \(query.path) exact: \(answer.body ?? "")")
            compared += 1
        }
        return compared
    }

    /// An insert of a new row, or an update or delete of any row, by key.
    static func randomWrite(_ device: FeedDevice, step: Int, _ random: inout SplitMix64) -> DataRequest {
        let id = "n\(Int.random(in: 0..<12, using: &random))"
        switch Int.random(in: 0..<4, using: &random) {
        case 0:
            return PostgREST.insert(
                into: "notes", json: FeedServer.row(id: "\(device.name)\(step)", &random), returning: false)
        case 1: return PostgREST.update("notes", where: [.eq("id", id)], json: #"{"title":"t\#(step)"}"#)
        case 2:
            return PostgREST.update(
                "notes", where: [.eq("id", id)], json: #"{"rank":\#(Int.random(in: 0..<10, using: &random))}"#)
        default: return PostgREST.delete(from: "notes", where: [.eq("id", id)])
        }
    }

    /// An answer's rows, for comparing.
    static func rows(_ body: String?) throws -> NSArray? {
        guard let body else { return nil }
        return try JSONSerialization.jsonObject(with: Data(body.utf8)) as? NSArray
    }
}

/// One device: a controller on its own store and its own faulty transport, restarted on the
/// same store.
final class FeedDevice: @unchecked Sendable {
    let name: String
    let store: any OfflineStore
    let batches = BatchLog()
    let transport: FaultyTransport
    let folder: TemporaryFolder
    private(set) var offline: SovariaOffline

    /// A backlog past `refetchPast` changes is skipped (`nil`: every change is applied).
    let refetchPast: Int?
    let pullBytes: Int

    init(_ engine: SyncEngine, server: FeedServer, seed: UInt64, refetchPast: Int?, pullBytes: Int) async throws {
        name = engine.name
        folder = try TemporaryFolder()
        store = BatchLogStore(inner: try await engine.open(folder.url), log: batches)
        transport = FaultyTransport(server: server, seed: seed)
        self.refetchPast = refetchPast
        self.pullBytes = pullBytes
        offline = try await Self.controller(store, transport, refetchPast: refetchPast, pullBytes: pullBytes)
    }

    static func controller(
        _ store: any OfflineStore, _ transport: FaultyTransport, refetchPast: Int?, pullBytes: Int
    ) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.jitter = { 1 }
        configuration.overlay = ChangeFeedConvergenceTests.overlay
        configuration.changeFeed = PostgRESTChangeFeed(transport: transport, pageSize: 3)
        configuration.followedTables = ["notes"]
        configuration.feedFollowsAtOpen = false  // the test fires the timer
        configuration.feedRefetchPast = refetchPast
        configuration.feedPullBytes = pullBytes
        return try await SovariaOffline(store: store, transport: transport, configuration: configuration)
    }

    /// The app starts again: a new controller on the same store (what it kept in memory is gone).
    func restart() async throws {
        await offline.close()
        offline = try await Self.controller(store, transport, refetchPast: refetchPast, pullBytes: pullBytes)
    }
}

/// A transport to ``FeedServer`` that fails as networks do: drops a request, loses an answer after
/// the server acted on it, sends a request twice, and delays an answer (the server changes before
/// it arrives). Seeded; faults can be switched off.
final class FaultyTransport: SyncTransport, @unchecked Sendable {
    let server: FeedServer
    private let lock = NSLock()
    private var random: SplitMix64
    private var isOnline = true
    private var faults = true

    init(server: FeedServer, seed: UInt64) {
        self.server = server
        random = SplitMix64(seed: seed)
    }

    var online: Bool {
        get { lock.withLock { isOnline } }
        set { lock.withLock { isOnline = newValue } }
    }

    var faultsOn: Bool {
        get { lock.withLock { faults } }
        set { lock.withLock { faults = newValue } }
    }

    func send(_ request: DataRequest) async throws -> DataResponse {
        let (online, roll) = lock.withLock { (isOnline, faults ? Int.random(in: 0..<100, using: &random) : 99) }
        guard online else { throw SyncTransportError.offline("faulty: no network") }
        switch roll {
        case 0..<6: throw SyncTransportError.offline("faulty: the request was dropped")
        case 6..<10:
            _ = server.handle(request)
            throw SyncTransportError.offline("faulty: the answer was lost")
        case 10..<15:
            _ = server.handle(request)
            return server.handle(request)
        case 15..<22:
            let answer = server.handle(request)
            var delayed = lock.withLock { SplitMix64(seed: random.next()) }
            server.change(nil, &delayed)
            return answer
        default: return server.handle(request)
        }
    }
}

/// The table `notes` (id, title, done, rank) and its change log, as PostgreSQL with
/// `ChangeFeed.sql` and PostgREST would serve them: writes applied once per idempotency key,
/// each change logged at the next position (one transaction at a time: commit order), the feed
/// read after a position, and the fixed queries answered by code of its own.
final class FeedServer: @unchecked Sendable {
    struct Row {
        var id: String
        var title: String
        var done: Bool
        var rank: Int

        var json: String { #"{"id":"\#(id)","title":"\#(title)","done":\#(done),"rank":\#(rank)}"# }
    }

    private let lock = NSLock()
    private var rows: [String: Row] = [:]
    private var log: [(position: Int64, key: String, row: Row?)] = []
    private var responses: [String: DataResponse] = [:]
    private var latestAsked = 0

    /// How many times a device asked for the latest position (to skip a backlog).
    var skips: Int { lock.withLock { latestAsked } }

    /// A random row's JSON for `id`.
    static func row(id: String, _ random: inout SplitMix64) -> String {
        Row(
            id: id, title: "t\(Int.random(in: 0..<50, using: &random))", done: Bool.random(using: &random),
            rank: Int.random(in: 0..<10, using: &random)
        ).json
    }

    /// Another client's change, straight on the server: `id`'s row (a random one when `nil`) set
    /// to random values, or deleted.
    func change(_ id: String?, _ random: inout SplitMix64) {
        let key = id ?? "n\(Int.random(in: 0..<12, using: &random))"
        let delete = id == nil && Int.random(in: 0..<4, using: &random) == 0
        let row = Row(
            id: key, title: "s\(Int.random(in: 0..<50, using: &random))", done: Bool.random(using: &random),
            rank: Int.random(in: 0..<10, using: &random))
        lock.withLock { delete ? remove(key) : put(row) }
    }

    private func put(_ row: Row) {
        rows[row.id] = row
        log.append((Int64(log.count + 1) * 7, row.id, row))
    }

    private func remove(_ key: String) {
        guard rows.removeValue(forKey: key) != nil else { return }
        log.append((Int64(log.count + 1) * 7, key, nil))
    }

    func handle(_ request: DataRequest) -> DataResponse {
        lock.withLock {
            if let key = request.header("Idempotency-Key"), let done = responses[key] { return done }
            let response = answer(request)
            if let key = request.header("Idempotency-Key") { responses[key] = response }
            return response
        }
    }

    /// The answer to a `GET` of `path` now.
    func answer(_ path: String) -> String {
        lock.withLock { answer(DataRequest(method: "GET", path: path)).body }
    }

    private func answer(_ request: DataRequest) -> DataResponse {
        let components = URLComponents(string: request.path)!
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let key = query["id"].map { String($0.dropFirst("eq.".count)) }
        let body = request.body.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        switch (request.method, components.path) {
        case ("GET", "/rest/v1/sovaria_feed") where query["order"] == "position.desc":
            latestAsked += 1
            return DataResponse(status: 200, body: log.last.map { #"[{"position":\#($0.position)}]"# } ?? "[]")
        case ("GET", "/rest/v1/sovaria_feed"):
            let after = query["position"].flatMap { Int64($0.dropFirst("gt.".count)) } ?? 0
            let limit = Int(query["limit"] ?? "") ?? 500
            let waiting = log.filter { $0.position > after }
            let page = waiting.prefix(limit).map { entry in
                let change = entry.row.map { #""op":"upsert","row":\#($0.json)"# } ?? #""op":"delete","row":null"#
                return #"{"position":\#(entry.position),"table":"notes","key":"\#(entry.key)",\#(change)}"#
            }
            var headers: [String: String] = [:]
            if request.header("Prefer")?.contains("count=exact") == true {  // as PostgREST counts
                headers["Content-Range"] = page.isEmpty ? "*/\(waiting.count)" : "0-\(page.count - 1)/\(waiting.count)"
            }
            return DataResponse(status: 200, headers: headers, body: "[" + page.joined(separator: ",") + "]")
        case ("GET", "/rest/v1/notes"):  // with the position it is current to, as sovaria_pre_request says
            return DataResponse(
                status: 200, headers: log.last.map { ["Sovaria-Position": String($0.position)] } ?? [:],
                body: select(request.path))
        case ("POST", "/rest/v1/notes"):
            guard let body, let id = body["id"] as? String, rows[id] == nil else {
                return DataResponse(status: 409, body: #"{"code":"23505","message":"duplicate key"}"#)
            }
            let row = Row(
                id: id, title: body["title"] as? String ?? "", done: body["done"] as? Bool ?? false,
                rank: body["rank"] as? Int ?? 0)
            put(row)
            return DataResponse(status: 201, body: "[" + row.json + "]")
        case ("PATCH", "/rest/v1/notes"):
            guard let key, var row = rows[key] else { return DataResponse(status: 200, body: "[]") }
            if let title = body?["title"] as? String { row.title = title }
            if let rank = body?["rank"] as? Int { row.rank = rank }
            put(row)
            return DataResponse(status: 200, body: "[" + row.json + "]")
        case ("DELETE", "/rest/v1/notes"):
            guard let key, let row = rows[key] else { return DataResponse(status: 200, body: "[]") }
            remove(key)
            return DataResponse(status: 200, body: "[" + row.json + "]")
        default:
            return DataResponse(status: 404, body: #"{"message":"not found"}"#)
        }
    }

    /// The fixed queries, answered by hand.
    private func select(_ path: String) -> String {
        let byID = rows.values.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
        let queries = ChangeFeedConvergenceTests.queries.map(\.path)
        let rows: [String]
        switch path {
        case queries[0]: rows = byID.map(\.json)
        case queries[1]:
            rows = byID.filter { !$0.done }
                .sorted {
                    $0.title != $1.title
                        ? $0.title.utf8.lexicographicallyPrecedes($1.title.utf8)
                        : $0.id.utf8.lexicographicallyPrecedes($1.id.utf8)
                }
                .map { #"{"id":"\#($0.id)","title":"\#($0.title)"}"# }
        case queries[2]:
            rows = byID.sorted {
                $0.rank != $1.rank ? $0.rank > $1.rank : $0.id.utf8.lexicographicallyPrecedes($1.id.utf8)
            }
            .prefix(3).map { #"{"id":"\#($0.id)","rank":\#($0.rank)}"# }
        case queries[3]: rows = byID.filter { $0.rank >= 5 }.map(\.json)
        case queries[4]:
            rows = byID.filter { $0.rank == 3 }.map { #"{"id":"\#($0.id)","title":"\#($0.title)","rank":3}"# }
        case queries[5]:
            rows = byID.filter { $0.id == "n2" }
                .map { #"{"id":"\#($0.id)","title":"\#($0.title)","done":\#($0.done)}"# }
        default: rows = []
        }
        return "[" + rows.joined(separator: ",") + "]"
    }
}
