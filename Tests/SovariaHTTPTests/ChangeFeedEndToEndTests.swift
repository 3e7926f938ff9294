import Foundation
import Sovaria
import SovariaCache
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

/// Changes from other devices against the real PostgreSQL: the log `ChangeFeed.sql` keeps, read
/// through the test server by `PostgRESTChangeFeed`. Device A writes through its controller;
/// device B (the same user, another store) follows the feed and never fetches its lists.
@Suite(.serialized) struct ChangeFeedEndToEndTests {
    static let byTitle = PostgREST.select("notes", columns: "id,title,done", order: "title")
    static let open = PostgREST.select("notes", columns: "id,title", where: [.eq("done", "false")], order: "id")
    static let firstTwo = PostgREST.select("notes", columns: "id,title", order: "id", limit: 2)
    static let reads = [byTitle, open, firstTwo]

    /// A cluster of these tests alone: the feed serves a change once every older transaction has
    /// ended, and these tests count the changes a pull brings, so a transaction another suite runs
    /// meanwhile on the shared cluster held changes back (CI saw one change of two). The suite is
    /// serialized, so each test sees its own transactions only.
    static func cluster() async throws -> PostgresCluster {
        try await PostgresCluster.shared(named: "change-feed")
    }

    /// Device B: a controller following `notes`, with the overlay that brings answers up to date.
    /// With `following`, it follows `notes` on its own (a real timer, long-polling); `view` is
    /// where it reads the log.
    static func follower(
        _ rig: HTTPRig, _ engine: HTTPEngine, folder: TemporaryFolder, following: Bool = false,
        view: String = "sovaria_feed", pageSize: Int = 500, refetchPast: Int? = 5_000, pullBytes: Int = 1 << 20
    ) async throws -> SovariaOffline {
        let transport = URLSessionTransport(
            baseURL: rig.server.baseURL, apiKey: "test-anon-key", tokens: TestTokens(), configuration: .testServer)
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.memoryPressure = nil
        configuration.timer = ManualTimer()
        configuration.overlay = PostgRESTOverlay(
            tables: ["notes": .init(primaryKey: "id", defaults: ["done": "false"])], textOrder: .bytes)
        configuration.changeFeed = PostgRESTChangeFeed(
            transport: transport, view: view, pageSize: pageSize)
        configuration.feedRefetchPast = refetchPast
        configuration.feedPullBytes = pullBytes
        if following {
            configuration.timer = TaskSyncTimer()
            configuration.followedTables = ["notes"]
            configuration.feedPollInterval = .milliseconds(50)
        }
        return try await SovariaOffline(
            store: try await engine.open(folder.url), transport: transport, configuration: configuration)
    }

    /// A server holding note n1 ("Start"), and a follower in `folder` that has caught up and
    /// fetched ``byTitle``.
    static func followingOneNote(
        _ engine: HTTPEngine, folder: TemporaryFolder
    ) async throws -> (HTTPRig, SovariaOffline) {
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        _ = try await rig.offline.write(insertNote("n1", title: "Start"))
        let device = try await follower(rig, engine, folder: folder)
        _ = try await catchUp(device)
        _ = try await device.read(byTitle, policy: .networkOnly)
        return (rig, device)
    }

    /// Pulls until the feed has nothing more.
    static func catchUp(_ offline: SovariaOffline) async throws -> [ChangeFeedPull] {
        var pulls: [ChangeFeedPull] = []
        repeat { pulls.append(try await offline.pullChanges(of: "notes")) } while pulls.last?.hasMore == true
        return pulls
    }

    /// The server's own answer to `read` for alice, parsed.
    static func serverAnswer(_ rig: HTTPRig, _ read: DataRequest) async throws -> NSArray? {
        let response = try await rig.transport.send(read)
        return try JSONSerialization.jsonObject(with: Data(response.body.utf8)) as? NSArray
    }

    static func parsed(_ body: String?) throws -> NSArray? {
        guard let body else { return nil }
        return try JSONSerialization.jsonObject(with: Data(body.utf8)) as? NSArray
    }

    @Test(arguments: HTTPEngine.all)
    func aDevicesInsertUpdateAndDeleteReachAnotherDeviceWithoutItFetchingItsLists(
        _ engine: HTTPEngine
    )
        async throws
    {
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        for (id, title) in [("n1", "Milk"), ("n2", "Bread"), ("n3", "Eggs")] {
            _ = try await rig.offline.write(insertNote(id, title: title))
        }
        let folder = try TemporaryFolder()
        let device = try await Self.follower(rig, engine, folder: folder)
        _ = try await Self.catchUp(device)  // the inserts before the lists were fetched: nothing changes
        for read in Self.reads { _ = try await device.read(read, policy: .networkOnly) }
        let before = try await rig.server.requests().count

        _ = try await rig.offline.write(insertNote("n4", title: "Apples"))
        _ = try await rig.offline.write(
            PostgREST.update("notes", where: [.eq("id", "n2")], json: #"{"title":"Rye bread","done":true}"#))
        _ = try await rig.offline.write(PostgREST.delete(from: "notes", where: [.eq("id", "n1")]))
        let pulls = try await Self.catchUp(device)
        #expect(pulls.reduce(0) { $0 + $1.changes } == 3, "\(pulls)")

        let asked = try await rig.server.requests().dropFirst(before).filter { $0.method == "GET" }.map(\.path)
        #expect(asked.allSatisfy { $0.hasPrefix("/rest/v1/sovaria_feed?") }, "only feed reads: \(asked)")
        for read in [Self.byTitle, Self.open] {
            let local = try await device.read(read, policy: .cacheOnly)
            #expect(local.isExact && local.source != .network, "\(local.inexactReasons) \(pulls)")
            #expect(try Self.parsed(local.body) == (try await Self.serverAnswer(rig, read)), "\(read.path)")
        }
        // The page lost its first row: stale, then fetched once by a network-policy read.
        let page = try await device.read(Self.firstTwo)
        #expect(page.source == .network)
        #expect(try Self.parsed(page.body) == (try await Self.serverAnswer(rig, Self.firstTwo)))
        await device.close()
    }

    @Test(arguments: HTTPEngine.all)
    func aLiveQueryFollowingTheFeedShowsAnotherDevicesWriteWithoutAFetch(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        _ = try await rig.offline.write(insertNote("n1", title: "Before"))
        let folder = try TemporaryFolder()
        let device = try await Self.follower(rig, engine, folder: folder, following: true)
        var answers = device.observe(Self.byTitle).makeAsyncIterator()
        while let answer = try await answers.next(), answer.body?.contains("Before") != true {}
        let before = try await rig.server.requests().count

        _ = try await rig.offline.write(
            PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"title":"After"}"#))
        var shown: LocalRead?
        while let answer = try await answers.next() {
            shown = answer
            if answer.body?.contains("After") == true { break }
        }
        #expect(shown?.isExact == true && shown?.body?.contains("Before") == false)
        let asked = try await rig.server.requests().dropFirst(before).filter { $0.method == "GET" }.map(\.path)
        #expect(asked.allSatisfy { $0.hasPrefix("/rest/v1/sovaria_feed?") }, "only feed reads: \(asked)")
        #expect(device.status.changeFeeds["notes"]?.isCaughtUp == true)
        await device.close()
    }

    @Test(arguments: HTTPEngine.all)
    func bobsChangesNeverReachAliceAndARowGivenToBobLeavesHerAnswers(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        _ = try await rig.offline.write(insertNote("n1", title: "Alice's"))
        _ = try await rig.offline.write(insertNote("n2", title: "Alice's, then Bob's"))
        let folder = try TemporaryFolder()
        let device = try await Self.follower(rig, engine, folder: folder)
        _ = try await Self.catchUp(device)
        _ = try await device.read(Self.byTitle, policy: .networkOnly)

        _ = try await rig.server.query("INSERT INTO notes (id, owner, title) VALUES ('b1', 'bob', 'Bob''s')")
        _ = try await rig.server.query("UPDATE notes SET owner = 'bob' WHERE id = 'n2'")
        let pulls = try await Self.catchUp(device)
        #expect(pulls.reduce(0) { $0 + $1.changes } == 1, "n2's delete for alice, nothing of b1: \(pulls)")
        let local = try await device.read(Self.byTitle, policy: .cacheOnly)
        let ids = try LocalFirstIDs.ids(local.body)
        #expect(ids == ["n1"] && local.isExact)
        #expect(try Self.parsed(local.body) == (try await Self.serverAnswer(rig, Self.byTitle)))
        await device.close()
    }

    /// The first transaction takes its position before the second and commits after it. A
    /// device reading `sovaria_feed` gets both; one reading the log by position alone (the table
    /// `sovaria_changes` itself, as every log-based feed first did) moves its checkpoint past the
    /// first while it is uncommitted and never gets it: the test this reader must fail.
    @Test(arguments: HTTPEngine.all)
    func twoTransactionsCommittedOutOfOrderBothReachTheDevice(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        let folders = (try TemporaryFolder(), try TemporaryFolder())
        let device = try await Self.follower(rig, engine, folder: folders.0)
        let naive = try await Self.follower(rig, engine, folder: folders.1, view: "sovaria_changes")
        for follower in [device, naive] { _ = try await follower.read(Self.byTitle, policy: .networkOnly) }
        let first = try PostgresSession(conninfo: rig.server.conninfo)
        let second = try PostgresSession(conninfo: rig.server.conninfo)

        // The first takes its transaction id (the position's high part) with a write elsewhere.
        try first.execute(
            "BEGIN; SET LOCAL ROLE alice; INSERT INTO lists (id, name) VALUES ('l-first', 'List');"
                + " INSERT INTO notes (id, title) VALUES ('f1', 'First')")
        try second.execute(
            "BEGIN; SET LOCAL ROLE alice; INSERT INTO notes (id, title) VALUES ('f2', 'Second'); COMMIT")
        let between = try await Self.catchUp(device)
        #expect(between.reduce(0) { $0 + $1.changes } == 0, "held back while the first runs: \(between)")
        let naiveBetween = try await Self.catchUp(naive)
        #expect(naiveBetween.reduce(0) { $0 + $1.changes } == 1, "the naive reader takes the second: \(naiveBetween)")
        try first.execute("COMMIT")

        let after = try await Self.catchUp(device)
        #expect(after.reduce(0) { $0 + $1.changes } == 2, "\(after)")
        let local = try await device.read(Self.byTitle, policy: .cacheOnly)
        #expect(try LocalFirstIDs.ids(local.body) == ["f1", "f2"] && local.isExact)
        #expect(try Self.parsed(local.body) == (try await Self.serverAnswer(rig, Self.byTitle)))
        _ = try await Self.catchUp(naive)
        let skipped = try await naive.read(Self.byTitle, policy: .cacheOnly)
        #expect(try LocalFirstIDs.ids(skipped.body) == ["f2"], "the naive reader skipped the first for good")
        await device.close()
        await naive.close()
    }

    /// One row changed by two transactions, the one with the earlier position last (it took its
    /// transaction id with a write elsewhere): the device ends with the row as the server has it,
    /// not with the state the later position logged.
    @Test(arguments: HTTPEngine.all)
    func oneRowChangedByTwoTransactionsOutOfOrderEndsAsTheServerHasIt(_ engine: HTTPEngine) async throws {
        let folder = try TemporaryFolder()
        let (rig, device) = try await Self.followingOneNote(engine, folder: folder)
        let first = try PostgresSession(conninfo: rig.server.conninfo)
        let second = try PostgresSession(conninfo: rig.server.conninfo)

        try first.execute("BEGIN; SET LOCAL ROLE alice; INSERT INTO lists (id, name) VALUES ('l-first', 'List')")
        try second.execute("BEGIN; SET LOCAL ROLE alice; UPDATE notes SET title = 'Second' WHERE id = 'n1'; COMMIT")
        try first.execute("UPDATE notes SET title = 'Renamed last' WHERE id = 'n1'; COMMIT")
        let pulls = try await Self.catchUp(device)
        #expect(pulls.reduce(0) { $0 + $1.changes } == 2, "\(pulls)")
        let local = try await device.read(Self.byTitle, policy: .cacheOnly)
        #expect(local.body?.contains("Renamed last") == true && local.isExact, "\(local.body ?? "")")
        #expect(try Self.parsed(local.body) == (try await Self.serverAnswer(rig, Self.byTitle)))
        await device.close()
    }

    /// The device's own write, synced while another transaction runs: the feed holds its change
    /// back, and the device keeps showing the write (exact) until the feed brings its echo.
    @Test(arguments: HTTPEngine.all)
    func anOwnWriteHeldBackByARunningTransactionDoesNotFlicker(_ engine: HTTPEngine) async throws {
        let folder = try TemporaryFolder()
        let (rig, device) = try await Self.followingOneNote(engine, folder: folder)
        let running = try PostgresSession(conninfo: rig.server.conninfo)
        try running.execute("BEGIN; INSERT INTO lists (id, name, owner) VALUES ('l-running', 'List', 'bob')")

        _ = try await device.write(PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"title":"Mine"}"#))
        let held = try await Self.catchUp(device)
        #expect(held.reduce(0) { $0 + $1.changes } == 0, "held back: \(held)")
        let shown = try await device.read(Self.byTitle, policy: .cacheOnly)
        #expect(shown.body?.contains("Mine") == true && shown.isExact, "\(shown.body ?? "")")
        try running.execute("COMMIT")
        let echoed = try await Self.catchUp(device)
        #expect(echoed.reduce(0) { $0 + $1.changes } == 1, "\(echoed)")
        let local = try await device.read(Self.byTitle, policy: .cacheOnly)
        let server = try await Self.serverAnswer(rig, Self.byTitle)
        #expect(local.isExact)
        #expect(try Self.parsed(local.body) == server)
        await device.close()
    }

    /// The server counts the changes after each page (`Prefer: count=exact`): the status says
    /// how far behind the device is, page by page.
    @Test func theStatusSaysHowFarBehindTheDeviceIs() async throws {
        let engine = HTTPEngine.all[0]
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        for index in 1...5 { _ = try await rig.offline.write(insertNote("n\(index)", title: "Note \(index)")) }
        // A write the transport gave up on (a slow machine) waits in the queue: all five are on
        // the server before the device counts them.
        _ = try await rig.offline.flush()
        try #require(try await rig.offline.pendingWrites().isEmpty)
        let folder = try TemporaryFolder()
        // One page per pull: the status after each.
        let device = try await Self.follower(rig, engine, folder: folder, pageSize: 2, pullBytes: 0)
        var behind: [Int?] = []
        var pulled: ChangeFeedPull
        repeat {
            pulled = try await device.pullChanges(of: "notes")
            behind.append(device.status.changeFeeds["notes"]?.behindBy)
        } while pulled.hasMore
        #expect(behind == [3, 1, 0])
        await device.close()
        // Pages joined: one pull reads the three and is caught up.
        let joining = try TemporaryFolder()
        let catchingUp = try await Self.follower(rig, engine, folder: joining, pageSize: 2)
        let all = try await catchingUp.pullChanges(of: "notes")
        #expect(all.changes == 5 && !all.hasMore && catchingUp.status.changeFeeds["notes"]?.behindBy == 0, "\(all)")
        await catchingUp.close()
    }

    /// Five changes behind with a limit of three: the device asks for one page and the latest
    /// position, applies nothing, and fetches its list again at its next read.
    @Test(arguments: HTTPEngine.all)
    func aBacklogPastTheLimitIsSkippedAndTheListFetchedAgain(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        let folder = try TemporaryFolder()
        let device = try await Self.follower(rig, engine, folder: folder, pageSize: 2, refetchPast: 3)
        _ = try await device.read(Self.byTitle, policy: .networkOnly)
        for index in 1...5 { _ = try await rig.offline.write(insertNote("n\(index)", title: "Note \(index)")) }
        let before = try await rig.server.requests().count

        let pulled = try await device.pullChanges(of: "notes")
        #expect(pulled.skippedChanges == 5 && pulled.changes == 0 && !pulled.hasMore, "\(pulled)")
        let latest = try await rig.server.query(#"SELECT max(position) FROM sovaria_changes WHERE "table" = 'notes'"#)
        #expect(try await device.feedCheckpoint(of: "notes").map(String.init) == latest.first)
        let asked = try await rig.server.requests().dropFirst(before).map(\.path)
        #expect(asked.count == 2 && asked.allSatisfy { $0.hasPrefix("/rest/v1/sovaria_feed?") }, "\(asked)")
        let fetched = try await device.read(Self.byTitle)
        #expect(fetched.source == .network && fetched.isExact)
        #expect(try Self.parsed(fetched.body) == (try await Self.serverAnswer(rig, Self.byTitle)))
        await device.close()
    }

    /// The test server runs `sovaria_pre_request` as PostgREST's `db-pre-request`: a fetched
    /// answer records the position it is current to, and the pages a device reads while it is
    /// behind do not set back a row that answer holds newer.
    @Test(arguments: HTTPEngine.all)
    func aFetchedAnswerIsNotSetBackByThePagesBehindIt(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        let folder = try TemporaryFolder()
        // One page per pull: the first page is applied alone.
        let device = try await Self.follower(rig, engine, folder: folder, pageSize: 1, refetchPast: nil, pullBytes: 0)
        // n1's insert is superseded by its update: the feed serves n2's insert, then n1's update.
        _ = try await rig.offline.write(insertNote("n1", title: "First"))
        _ = try await rig.offline.write(insertNote("n2", title: "Other"))
        _ = try await rig.offline.write(
            PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"title":"Second"}"#))
        let fetched = try await device.read(Self.byTitle, policy: .networkOnly)
        let latest = try await rig.server.query(#"SELECT max(position) FROM sovaria_changes WHERE "table" = 'notes'"#)
        let position = fetched.response?.position
        let logged = try #require(latest.first.flatMap { Int64($0) })
        #expect((position ?? 0) >= logged, "\(position as Any) \(latest)")
        #expect(fetched.body?.contains("Second") == true)

        let first = try await device.pullChanges(of: "notes")  // n2's insert alone: older than the answer
        #expect(first.changes == 1 && first.hasMore, "\(first)")
        let local = try await device.read(Self.byTitle, policy: .cacheOnly)
        #expect(local.body?.contains("Second") == true && local.isExact, "not set back to the insert's title")
        _ = try await Self.catchUp(device)
        #expect(
            try Self.parsed(try await device.read(Self.byTitle, policy: .cacheOnly).body)
                == (try await Self.serverAnswer(rig, Self.byTitle)))
        await device.close()
    }

    @Test(arguments: HTTPEngine.all)
    func aCheckpointPastTheRetentionMustRefetch(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        _ = try await rig.offline.write(insertNote("n1", title: "Kept"))
        let folder = try TemporaryFolder()
        let device = try await Self.follower(rig, engine, folder: folder)
        _ = try await Self.catchUp(device)
        _ = try await device.read(Self.byTitle, policy: .networkOnly)
        _ = try await rig.offline.write(insertNote("n2", title: "Trimmed away"))
        _ = try await rig.server.query("SELECT sovaria_trim_changes('0 seconds')")

        let pulls = try await Self.catchUp(device)
        #expect(pulls.contains { $0.mustRefetch && $0.staleAnswers == 1 }, "\(pulls)")
        #expect(device.status.changeFeeds["notes"]?.mustRefetchCount == 1)
        let local = try await device.read(Self.byTitle, policy: .cacheOnly)
        #expect(!local.isExact, "stale until fetched")
        let fetched = try await device.read(Self.byTitle)
        let ids = try LocalFirstIDs.ids(fetched.body)
        #expect(fetched.source == .network && ids == ["n1", "n2"])
        await device.close()
    }
}

/// The ids of a JSON array of rows.
enum LocalFirstIDs {
    static func ids(_ body: String?) throws -> [String] {
        struct Row: Decodable { var id: String }
        guard let body else { return [] }
        return try JSONDecoder().decode([Row].self, from: Data(body.utf8)).map(\.id)
    }
}
