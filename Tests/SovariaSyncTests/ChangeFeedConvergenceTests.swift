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
/// (their answers fetched again), one applies every change. The same runs over a table whose
/// rows are each a team's, the three devices three users whose memberships change (issue 62).
/// A page that passes over an answer a change alters fails both (its old row stays).
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
        let (exactChecks, fromTheFeed) = try await Self.exercise(devices, server: server, seed: seed, &random)
        #expect(exactChecks > 0 && fromTheFeed > 0, "the run checked answers the feed kept exact")
        #expect(server.skips > 0, "a device skipped a backlog (5 to 15 times a seed when written)")
    }

    /// Issue 62's teams under the same faults: three users on three engines, each device its
    /// user's, over a table whose rows are each a team's (published through a membership
    /// table). Besides the writes and faults above, rows move between teams (by the server, and
    /// by the devices: a move to a team the writer is not in is refused by the table's policy),
    /// and an admin adds and removes memberships, each a must-refetch marker for its user alone.
    /// At quiet moments every answer a device calls exact equals the server's answer to its
    /// user; at the end, after each has synced and caught up, every answer does.
    @Test(arguments: Array(1...16) as [UInt64])
    func devicesOfThreeUsersConvergeUnderFaultsWhileTheirTeamsChange(seed: UInt64) async throws {
        var random = SplitMix64(seed: seed)
        let server = FeedServer(
            teams: ["red", "blue", "green"], users: ["alice": ["red"], "bob": ["blue"], "carol": ["red", "green"]])
        for index in 0..<9 { server.change("s\(index)", &random) }
        var devices: [FeedDevice] = []
        for (engine, user, refetchPast, pullBytes) in [
            (SyncEngine.memory, "alice", nil, 1 << 20), (.sqlite(.flushed), "bob", 4, 0),
            (.lmdb(.flushed), "carol", 7, 250),
        ] as [(SyncEngine, String, Int?, Int)] {
            devices.append(
                try await FeedDevice(
                    engine, server: server, seed: random.next(), refetchPast: refetchPast, pullBytes: pullBytes,
                    user: user, overlay: Self.teamOverlay))
        }
        let (exactChecks, fromTheFeed) = try await Self.exercise(devices, server: server, seed: seed, &random)
        #expect(exactChecks > 0 && fromTheFeed > 0, "the run checked answers the feed kept exact")
        #expect(server.membershipMarkers > 0, "memberships changed during the run")
    }

    /// `notes` with its `team` column.
    static let teamOverlay = PostgRESTOverlay(
        tables: ["notes": .init(primaryKey: "id", columns: ["id", "title", "done", "rank", "team"])],
        textOrder: .bytes)

    /// 240 random steps over `devices` (writes, reads, pulls, flushes, the server's own changes
    /// and, on a server with teams, memberships toggled; a network going away, restarts, an apply
    /// whose batch fails, quiet checks), then every device synced and caught up, and each of its
    /// answers compared with the server's. Returns the answers quiet checks compared, and how
    /// many answers were exact from the cache at the end.
    static func exercise(
        _ devices: [FeedDevice], server: FeedServer, seed: UInt64, _ random: inout SplitMix64
    ) async throws -> (exactChecks: Int, fromTheFeed: Int) {
        let users = devices.compactMap(\.transport.user)
        var exactChecks = 0
        for step in 0..<240 {
            let device = devices[Int.random(in: 0..<devices.count, using: &random)]
            let roll = Int.random(in: 0..<100, using: &random)
            switch roll {
            case 0..<28:
                _ = try? await device.offline.write(Self.randomWrite(device, step: step, teams: server.teams, &random))
            case 28..<42: _ = try? await device.offline.read(queries.randomElement(using: &random)!)
            case 42..<62:
                let pulled = try? await device.offline.pullChanges(of: "notes")
                #expect(device.pullBytes > 0 || (pulled?.changes ?? 0) <= 3, "one page per pull: \(pulled as Any)")
            case 62..<70: _ = try? await device.offline.flush()
            case 70..<78 where !users.isEmpty && roll >= 74:
                // An admin adds or removes one of the users' memberships.
                server.toggleMembership(
                    of: users.randomElement(using: &random)!, in: server.teams.randomElement(using: &random)!)
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
                exactChecks += try await quietCheck(device, server: server)
            }
        }
        // Everything online and quiet: every write synced, then every device caught up.
        for device in devices {
            device.transport.online = true
            device.transport.faultsOn = false
            _ = try await device.offline.flush()
        }
        for device in devices { exactChecks += try await quietCheck(device, server: server) }
        for device in devices {
            for query in queries {
                var answer = try await device.offline.read(query, policy: .cacheOnly)
                // Not cached (never read on that device), or not exact: what an app reads next.
                if !answer.isExact || answer.body == nil {
                    answer = try await device.offline.read(query, policy: .networkOnly)
                }
                let server = server.answer(query.path, as: device.transport.user)
                #expect(
                    try rows(answer.body) == rows(server),
                    "seed \(seed), \(device.name), \(query.path): \(answer.body ?? "") \(answer.inexactReasons)\nserver: \(server)"
                )
            }
        }
        // And the feed keeps them so: two more changes on the server (at most four log entries,
        // a move being two: no device skips them), each device pulls them, and every answer it
        // then calls exact without a fetch equals the server's.
        for _ in 0..<2 { server.change(nil, &random) }
        var fromTheFeed = 0
        for device in devices {
            while try await device.offline.pullChanges(of: "notes").hasMore {}
            for query in queries {
                let answer = try await device.offline.read(query, policy: .cacheOnly)
                guard answer.isExact, answer.body != nil else { continue }
                fromTheFeed += 1
                #expect(
                    try rows(answer.body) == rows(server.answer(query.path, as: device.transport.user)),
                    "seed \(seed), \(device.name), after the last pull, \(query.path): \(answer.body ?? "")")
            }
            await device.offline.close()
        }
        return (exactChecks, fromTheFeed)
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
                try rows(answer.body) == rows(server.answer(query.path, as: device.transport.user)),
                "\(device.name) called \(query.path) exact: \(answer.body ?? "")")
            compared += 1
        }
        return compared
    }

    /// An insert of a new row, or an update or delete of any row, by key; with `teams`, a new
    /// row is one team's, and a write may move a row to another team.
    static func randomWrite(
        _ device: FeedDevice, step: Int, teams: [String] = [], _ random: inout SplitMix64
    ) -> DataRequest {
        let id = "n\(Int.random(in: 0..<12, using: &random))"
        switch Int.random(in: 0..<(teams.isEmpty ? 4 : 5), using: &random) {
        case 0:
            return PostgREST.insert(
                into: "notes", json: FeedServer.row(id: "\(device.name)\(step)", teams: teams, &random),
                returning: false)
        case 4:
            let team = teams.randomElement(using: &random)!
            return PostgREST.update("notes", where: [.eq("id", id)], json: #"{"team":"\#(team)"}"#)
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
    let overlay: PostgRESTOverlay

    /// `user`: whom the server answers this device (`nil`: a server without users).
    init(
        _ engine: SyncEngine, server: FeedServer, seed: UInt64, refetchPast: Int?, pullBytes: Int,
        user: String? = nil, overlay: PostgRESTOverlay = ChangeFeedConvergenceTests.overlay
    ) async throws {
        name = user ?? engine.name
        folder = try TemporaryFolder()
        store = BatchLogStore(inner: try await engine.open(folder.url), log: batches)
        transport = FaultyTransport(server: server, seed: seed, user: user)
        self.refetchPast = refetchPast
        self.pullBytes = pullBytes
        self.overlay = overlay
        offline = try await Self.controller(
            store, transport, refetchPast: refetchPast, pullBytes: pullBytes, overlay: overlay)
    }

    static func controller(
        _ store: any OfflineStore, _ transport: FaultyTransport, refetchPast: Int?, pullBytes: Int,
        overlay: PostgRESTOverlay
    ) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.jitter = { 1 }
        configuration.overlay = overlay
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
        offline = try await Self.controller(
            store, transport, refetchPast: refetchPast, pullBytes: pullBytes, overlay: overlay)
    }
}

/// A transport to ``FeedServer`` that fails as networks do: drops a request, loses an answer after
/// the server acted on it, sends a request twice, and delays an answer (the server changes before
/// it arrives). Seeded; faults can be switched off.
final class FaultyTransport: SyncTransport, @unchecked Sendable {
    let server: FeedServer
    /// Whom the server answers (`nil`: a server without users).
    let user: String?
    private let lock = NSLock()
    private var random: SplitMix64
    private var isOnline = true
    private var faults = true

    init(server: FeedServer, seed: UInt64, user: String? = nil) {
        self.server = server
        self.user = user
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
            _ = server.handle(request, as: user)
            throw SyncTransportError.offline("faulty: the answer was lost")
        case 10..<15:
            _ = server.handle(request, as: user)
            return server.handle(request, as: user)
        case 15..<22:
            let answer = server.handle(request, as: user)
            var delayed = lock.withLock { SplitMix64(seed: random.next()) }
            server.change(nil, &delayed)
            return answer
        default: return server.handle(request, as: user)
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
        /// The team the row is shared with (a server with teams), `nil` on one without.
        var team: String?

        var json: String {
            let shared = team.map { #","team":"\#($0)""# } ?? ""
            return #"{"id":"\#(id)","title":"\#(title)","done":\#(done),"rank":\#(rank)\#(shared)}"#
        }
    }

    /// A logged change: a row's new state (`row`), its delete (`row` `nil`), or a must-refetch
    /// marker for one user (`markerFor`, a membership of theirs began or ended).
    struct Entry {
        var position: Int64
        var key: String
        var row: Row?
        /// The team of the row the change is of: its members at `position` read it.
        var team: String?
        var markerFor: String?
    }

    /// The teams rows are shared with: empty for a table every reader sees whole.
    let teams: [String]
    private let lock = NSLock()
    private var rows: [String: Row] = [:]
    private var log: [Entry] = []
    /// Each user's teams now, and every membership's period (after `joined`, before `left`), as
    /// `sovaria_memberships` keeps them.
    private var members: [String: Set<String>] = [:]
    private var periods: [(user: String, team: String, joined: Int64, left: Int64?)] = []
    private var responses: [String: DataResponse] = [:]
    private var latestAsked = 0
    private var markers = 0

    /// A server of `notes` for every reader, or, with `teams`, one whose rows are each a team's
    /// (published through a membership table), each of `users` a member of the teams it gives
    /// from the start.
    init(teams: [String] = [], users: [String: Set<String>] = [:]) {
        self.teams = teams
        members = users
        for (user, joined) in users { for team in joined { periods.append((user, team, 0, nil)) } }
    }

    /// How many must-refetch markers memberships logged.
    var membershipMarkers: Int { lock.withLock { markers } }

    /// How many times a device asked for the latest position (to skip a backlog).
    var skips: Int { lock.withLock { latestAsked } }

    /// A random row's JSON for `id`.
    /// A random row's JSON for `id`, in one of `teams` when there are any.
    static func row(id: String, teams: [String] = [], _ random: inout SplitMix64) -> String {
        Row(
            id: id, title: "t\(Int.random(in: 0..<50, using: &random))", done: Bool.random(using: &random),
            rank: Int.random(in: 0..<10, using: &random), team: teams.randomElement(using: &random)
        ).json
    }

    /// Another client's change, straight on the server: `id`'s row (a random one when `nil`) set
    /// to random values, or deleted.
    func change(_ id: String?, _ random: inout SplitMix64) {
        let key = id ?? "n\(Int.random(in: 0..<12, using: &random))"
        let delete = id == nil && Int.random(in: 0..<4, using: &random) == 0
        let moves = !teams.isEmpty && Int.random(in: 0..<4, using: &random) == 0
        let team = teams.randomElement(using: &random)
        lock.withLock {
            // With teams, a row keeps its team unless the change moves it (a new row takes one).
            let row = Row(
                id: key, title: "s\(Int.random(in: 0..<50, using: &random))", done: Bool.random(using: &random),
                rank: Int.random(in: 0..<10, using: &random), team: moves ? team : rows[key]?.team ?? team)
            delete ? remove(key) : put(row)
        }
    }

    /// A membership inserted or deleted by an admin: `user` joins `team` or leaves it. Each logs
    /// a must-refetch marker for the user alone, at the position its period begins or ends.
    func toggleMembership(of user: String, in team: String) {
        lock.withLock {
            let position = nextPosition
            if members[user, default: []].remove(team) != nil {
                if let open = periods.lastIndex(where: { $0.user == user && $0.team == team && $0.left == nil }) {
                    periods[open].left = position
                }
            } else {
                members[user, default: []].insert(team)
                periods.append((user, team, position, nil))
            }
            log.append(Entry(position: position, key: "", markerFor: user))
            markers += 1
        }
    }

    private var nextPosition: Int64 { Int64(log.count + 1) * 7 }

    /// A row's new state: on a server with teams, a row that moves to another team leaves the
    /// old one first (a delete its members read), as `ChangeFeed.sql`'s trigger logs it.
    private func put(_ row: Row) {
        if let was = rows[row.id], was.team != row.team {
            log.append(Entry(position: nextPosition, key: row.id, team: was.team))
        }
        rows[row.id] = row
        log.append(Entry(position: nextPosition, key: row.id, row: row, team: row.team))
    }

    private func remove(_ key: String) {
        guard let row = rows.removeValue(forKey: key) else { return }
        log.append(Entry(position: nextPosition, key: key, team: row.team))
    }

    /// Whether `user` (`nil`: a server without users) reads `entry`: a marker of theirs, or a
    /// change of a team they were in at its position (every change without teams).
    private func reads(_ entry: Entry, as user: String?) -> Bool {
        guard !teams.isEmpty, let user else { return true }
        if let owner = entry.markerFor { return owner == user }
        guard let team = entry.team else { return false }
        return periods.contains {
            $0.user == user && $0.team == team && $0.joined < entry.position
                && ($0.left.map { entry.position < $0 } ?? true)
        }
    }

    /// Whether `user` sees `row` now (RLS on the table: a member of its team).
    private func sees(_ row: Row, as user: String?) -> Bool {
        guard !teams.isEmpty, let user else { return true }
        return row.team.map { members[user, default: []].contains($0) } ?? false
    }

    func handle(_ request: DataRequest, as user: String? = nil) -> DataResponse {
        lock.withLock {
            if let key = request.header("Idempotency-Key"), let done = responses[key] { return done }
            let response = answer(request, as: user)
            if let key = request.header("Idempotency-Key") { responses[key] = response }
            return response
        }
    }

    /// The answer to a `GET` of `path` now, as `user` reads it.
    func answer(_ path: String, as user: String? = nil) -> String {
        lock.withLock { answer(DataRequest(method: "GET", path: path), as: user).body }
    }

    private func answer(_ request: DataRequest, as user: String?) -> DataResponse {
        let components = URLComponents(string: request.path)!
        var query: [String: String] = [:]
        for item in components.queryItems ?? [] { query[item.name] = item.value ?? "" }
        let key = query["id"].map { String($0.dropFirst("eq.".count)) }
        let body = request.body.flatMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        switch (request.method, components.path) {
        case ("GET", "/rest/v1/sovaria_feed") where query["order"] == "position.desc":
            latestAsked += 1
            let latest = log.last { reads($0, as: user) }
            return DataResponse(status: 200, body: latest.map { #"[{"position":\#($0.position)}]"# } ?? "[]")
        case ("GET", "/rest/v1/sovaria_feed"):
            let after = query["position"].flatMap { Int64($0.dropFirst("gt.".count)) } ?? 0
            let limit = Int(query["limit"] ?? "") ?? 500
            let waiting = log.filter { $0.position > after && reads($0, as: user) }
            let page = waiting.prefix(limit).map { entry in
                let change =
                    entry.markerFor != nil
                    ? #""op":"trimmed","row":null"#
                    : entry.row.map { #""op":"upsert","row":\#($0.json)"# } ?? #""op":"delete","row":null"#
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
                body: select(request.path, as: user))
        case ("POST", "/rest/v1/notes"):
            guard let body, let id = body["id"] as? String, rows[id] == nil else {
                return DataResponse(status: 409, body: #"{"code":"23505","message":"duplicate key"}"#)
            }
            let row = Row(
                id: id, title: body["title"] as? String ?? "", done: body["done"] as? Bool ?? false,
                rank: body["rank"] as? Int ?? 0, team: body["team"] as? String)
            guard sees(row, as: user) else { return Self.rowSecurityViolation }
            put(row)
            return DataResponse(status: 201, body: "[" + row.json + "]")
        case ("PATCH", "/rest/v1/notes"):
            guard let key, var row = rows[key], sees(row, as: user) else {
                return DataResponse(status: 200, body: "[]")
            }
            if let title = body?["title"] as? String { row.title = title }
            if let rank = body?["rank"] as? Int { row.rank = rank }
            if let team = body?["team"] as? String { row.team = team }
            guard sees(row, as: user) else { return Self.rowSecurityViolation }
            put(row)
            return DataResponse(status: 200, body: "[" + row.json + "]")
        case ("DELETE", "/rest/v1/notes"):
            guard let key, let row = rows[key], sees(row, as: user) else {
                return DataResponse(status: 200, body: "[]")
            }
            remove(key)
            return DataResponse(status: 200, body: "[" + row.json + "]")
        default:
            return DataResponse(status: 404, body: #"{"message":"not found"}"#)
        }
    }

    /// PostgREST's answer to a row its policy's `WITH CHECK` refuses.
    private static let rowSecurityViolation = DataResponse(
        status: 403,
        body: #"{"code":"42501","message":"new row violates row-level security policy for table \"notes\""}"#)

    /// The fixed queries, answered by hand over the rows `user` sees.
    private func select(_ path: String, as user: String?) -> String {
        let byID = rows.values.filter { sees($0, as: user) }.sorted { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }
        let queries = ChangeFeedConvergenceTests.queries.map(\.path)
        let rows: [String]
        switch path {
        case queries[0]: rows = byID.map { Row(id: $0.id, title: $0.title, done: $0.done, rank: $0.rank).json }
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
