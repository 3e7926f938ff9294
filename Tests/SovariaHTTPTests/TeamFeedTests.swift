import Foundation
import Sovaria
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

/// Visibility by team (issue 62, item 3): `team_docs` is published through the membership table
/// `team_members` (Tests/Server/schema.sql, publish.sql). Alice's device follows it; the
/// superuser writes the teams' documents and memberships, as the other members and an admin
/// would. A user never receives a change of a team they were not in at the change's position;
/// joining brings the team's rows and leaving takes them away, and every answer then equals the
/// server's.
@Suite(.serialized) struct TeamFeedTests {
    static let docs = PostgREST.select("team_docs", columns: "id,title,team", order: "id")
    static let redDocs = PostgREST.select("team_docs", columns: "id,title", where: [.eq("team", "red")], order: "id")

    /// A cluster of these tests alone: the feed serves a change once every older transaction of
    /// the cluster has ended, and these tests count what a pull brings.
    static func cluster() async throws -> PostgresCluster {
        try await PostgresCluster.shared(named: "team-feed")
    }

    /// Alice's device following `team_docs` by hand (each test pulls).
    static func follower(_ rig: HTTPRig, _ engine: HTTPEngine, folder: TemporaryFolder) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.memoryPressure = nil
        configuration.timer = ManualTimer()
        configuration.overlay = PostgRESTOverlay(tables: ["team_docs": .init(primaryKey: "id")], textOrder: .bytes)
        configuration.changeFeed = PostgRESTChangeFeed(transport: rig.transport)
        return try await SovariaOffline(
            store: try await engine.open(folder.url), transport: rig.transport, configuration: configuration)
    }

    static func catchUp(_ offline: SovariaOffline) async throws -> [ChangeFeedPull] {
        var pulls: [ChangeFeedPull] = []
        repeat { pulls.append(try await offline.pullChanges(of: "team_docs")) } while pulls.last?.hasMore == true
        return pulls
    }

    static func parsed(_ body: String?) throws -> NSArray? {
        guard let body else { return nil }
        return try JSONSerialization.jsonObject(with: Data(body.utf8)) as? NSArray
    }

    /// What the server answers alice for `read`.
    static func serverAnswer(_ rig: HTTPRig, _ read: DataRequest) async throws -> NSArray? {
        try parsed(try await rig.transport.send(read).body)
    }

    /// Every change alice's feed holds of `team_docs` (markers left out), as `position|key`.
    static func alicesFeed(_ rig: HTTPRig) async throws -> Set<String> {
        let feed = PostgREST.select(
            "sovaria_feed", columns: "position,key,op", where: [.eq("table", "team_docs")], order: "position")
        let response = try await rig.transport.send(feed)
        struct Change: Decodable {
            var position: Int64
            var key: String
            var op: String
        }
        let changes = try JSONDecoder().decode([Change].self, from: Data(response.body.utf8))
        return Set(changes.filter { $0.op != "trimmed" }.map { "\($0.position)|\($0.key)" })
    }

    /// The log's changes of `team_docs` that alice was not in the team of at their position, as
    /// `position|key`, read by the superuser from the log and alice's periods.
    static func changesOutsideAlicesTeams(_ rig: HTTPRig) async throws -> Set<String> {
        Set(
            try await rig.server.query(
                """
                SELECT c.position || '|' || c.key FROM sovaria_changes c
                WHERE c."table" = 'team_docs' AND c.op <> 'trimmed' AND NOT EXISTS (
                    SELECT FROM sovaria_memberships m WHERE m.member = 'alice' AND m.team = c.visible_to
                        AND m.joined < c.position AND (m.left_at IS NULL OR c.position < m.left_at))
                """))
    }

    /// Alice's answers after catching up: each one the cache calls exact equals the server's, and
    /// one that is not (a must-refetch made it stale) equals it once read again.
    static func expectAnswersEqualTheServers(
        _ device: SovariaOffline, _ rig: HTTPRig, _ moment: String
    ) async throws {
        for read in [docs, redDocs] {
            var answer = try await device.read(read, policy: .cacheOnly)
            if !answer.isExact || answer.body == nil { answer = try await device.read(read, policy: .networkOnly) }
            let server = try await serverAnswer(rig, read)
            #expect(try parsed(answer.body) == server, "\(moment), \(read.path): \(answer.body ?? "nil")")
        }
    }

    @Test(arguments: HTTPEngine.all)
    func joiningBringsTheTeamsRowsAndLeavingTakesThemAway(_ engine: HTTPEngine) async throws {
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        _ = try await rig.server.query(
            """
            INSERT INTO team_members VALUES ('blue', 'alice'), ('red', 'bob');
            INSERT INTO team_docs VALUES ('b1', 'blue', 'Blue plan'), ('r1', 'red', 'Red plan');
            """)
        let folder = try TemporaryFolder()
        let device = try await Self.follower(rig, engine, folder: folder)
        _ = try await Self.catchUp(device)
        for read in [Self.docs, Self.redDocs] { _ = try await device.read(read, policy: .networkOnly) }

        // Another team's change: nothing reaches alice.
        _ = try await rig.server.query("INSERT INTO team_docs VALUES ('r2', 'red', 'Red budget')")
        var pulls = try await Self.catchUp(device)
        #expect(pulls.allSatisfy { $0.changes == 0 && !$0.mustRefetch }, "\(pulls)")
        let before = try await device.read(Self.docs, policy: .cacheOnly)
        #expect(try before.isExact && LocalFirstIDs.ids(before.body) == ["b1"])

        // Alice joins red: her answers of the table are fetched again and hold red's rows.
        _ = try await rig.server.query("INSERT INTO team_members VALUES ('red', 'alice')")
        pulls = try await Self.catchUp(device)
        #expect(pulls.contains { $0.mustRefetch && $0.staleAnswers == 2 }, "both answers fetched again: \(pulls)")
        let joined = try await device.read(Self.docs)
        #expect(try joined.source == .network && LocalFirstIDs.ids(joined.body) == ["b1", "r1", "r2"])
        _ = try await device.read(Self.redDocs)
        let beforeJoining = try await Self.changesOutsideAlicesTeams(rig)
        #expect(beforeJoining.count == 2, "r1 and r2, written before she joined: \(beforeJoining)")
        #expect(try await Self.alicesFeed(rig).isDisjoint(with: beforeJoining), "the feed of a member")

        // In red, red's changes reach her as changes, without a fetch.
        _ = try await rig.server.query("UPDATE team_docs SET title = 'Red plan, v2' WHERE id = 'r1'")
        pulls = try await Self.catchUp(device)
        #expect(pulls.reduce(0) { $0 + $1.changes } == 1 && !pulls.contains { $0.mustRefetch }, "\(pulls)")
        let updated = try await device.read(Self.docs, policy: .cacheOnly)
        #expect(updated.isExact && updated.body?.contains("Red plan, v2") == true)
        try await Self.expectAnswersEqualTheServers(device, rig, "in red")

        // A document moved to a team she is not in leaves her answers as a delete.
        _ = try await rig.server.query("UPDATE team_docs SET team = 'green' WHERE id = 'b1'")
        pulls = try await Self.catchUp(device)
        #expect(pulls.reduce(0) { $0 + $1.changes } == 1, "\(pulls)")
        let moved = try await device.read(Self.docs, policy: .cacheOnly)
        #expect(try moved.isExact && LocalFirstIDs.ids(moved.body) == ["r1", "r2"])

        // Alice leaves red: red's rows leave her answers, and red's later changes never reach her.
        _ = try await rig.server.query("DELETE FROM team_members WHERE team = 'red' AND member = 'alice'")
        _ = try await rig.server.query(
            "INSERT INTO team_docs VALUES ('r3', 'red', 'After'); UPDATE team_docs SET title = 'x' WHERE id = 'r2'")
        pulls = try await Self.catchUp(device)
        #expect(pulls.contains { $0.mustRefetch }, "\(pulls)")
        #expect(pulls.reduce(0) { $0 + $1.changes } == 0, "nothing of red after she left: \(pulls)")
        let left = try await device.read(Self.docs)
        #expect((try LocalFirstIDs.ids(left.body)).isEmpty, "\(left.body ?? "nil")")
        try await Self.expectAnswersEqualTheServers(device, rig, "after leaving red")

        let outside = try await Self.changesOutsideAlicesTeams(rig)
        #expect(outside.count >= 4, "r2 before she joined, r3 and x after she left: \(outside)")
        #expect(try await Self.alicesFeed(rig).isDisjoint(with: outside))
        await device.close()
    }

    /// Seeded: documents written, moved between three teams and deleted, alice joining and
    /// leaving teams, her device pulling and reading in between. At each quiet moment and at the
    /// end her answers equal the server's, and her feed holds exactly the changes of the teams
    /// she was in when they were made, each document's last of them: worked out by the test from
    /// its own record of what each statement did and in which transaction (``Ledger``), not from
    /// the log's policy or the periods its trigger keeps. The log is compacted at each quiet
    /// moment and at the end (`sovaria_compact_changes`), which must change none of that.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func randomMembershipChangesKeepAlicesAnswersTheServers(seed: UInt64) async throws {
        let engine = try #require(HTTPEngine.all.first)
        let rig = try await HTTPRig(engine, cluster: try await Self.cluster())
        var random = SplitMix(seed: seed)
        let teams = ["red", "blue", "green"]
        var ledger = Ledger()
        try await ledger.join("blue", rig)
        let folder = try TemporaryFolder()
        let device = try await Self.follower(rig, engine, folder: folder)
        _ = try await Self.catchUp(device)
        var joins = 0
        var quietChecks = 0
        for step in 0..<60 {
            let team = teams.randomElement(using: &random)!
            let doc = "d\(Int.random(in: 0..<8, using: &random))"
            switch Int.random(in: 0..<100, using: &random) {
            case 0..<30: try await ledger.write(doc, title: "s\(step)", team: team, rig)
            case 30..<40: try await ledger.move(doc, to: team, rig)
            case 40..<48: try await ledger.delete(doc, rig)
            case 48..<62:
                if ledger.isMember(of: team) {
                    try await ledger.leave(team, rig)
                } else {
                    try await ledger.join(team, rig)
                    joins += 1
                }
            case 62..<78: _ = try await device.pullChanges(of: "team_docs")
            case 78..<90:
                _ = try await device.read([Self.docs, Self.redDocs].randomElement(using: &random)!)
            default:
                // Compaction deletes only changes no reader is served: nothing below may tell.
                _ = try await rig.server.query("SELECT sovaria_compact_changes()")
                _ = try await Self.catchUp(device)
                try await Self.expectAnswersEqualTheServers(device, rig, "seed \(seed), step \(step)")
                quietChecks += 1
            }
        }
        let compacted = try await rig.server.query("SELECT sovaria_compact_changes()")
        _ = try await Self.catchUp(device)
        try await Self.expectAnswersEqualTheServers(device, rig, "seed \(seed), at the end")
        let feed = try await Self.alicesFeed(rig)
        let outside = ledger.changes.subtracting(ledger.alicesChanges)
        #expect(!outside.isEmpty && joins > 0, "the run wrote outside her teams and she joined one")
        #expect(feed.isDisjoint(with: outside), "seed \(seed): changes of teams she was not in")
        #expect(
            feed == Set(ledger.alicesLastChange.values),
            "seed \(seed): each document's last change of her teams, and no other, compacted (\(compacted))")
        await device.close()
    }

    /// The test's own record of what it did: each statement run as the superuser in a
    /// transaction of its own, whose id it reads back; the team of each document; alice's
    /// memberships as transactions that began and ended them; and each change the log should
    /// hold, at its position (the transaction's id times 2^22 plus the change's number in it: a
    /// move's delete is its first, its new state its second), with whether alice was in its team
    /// then. Changes are told by position and key: the feed serves each with its row's newest
    /// state, not the op it logged.
    struct Ledger {
        /// Every change of a document, as `position|key`.
        private(set) var changes: Set<String> = []
        /// Those of a team alice was in at their transaction.
        private(set) var alicesChanges: Set<String> = []
        /// Of each document, the last of ``alicesChanges``: the feed serves no change a later one
        /// of its row supersedes (here, with one statement at a time, a later position).
        private(set) var alicesLastChange: [String: String] = [:]
        private var teamOf: [String: String] = [:]
        /// Alice's periods in each team: after `joined`, before `left` (transaction ids).
        private var periods: [String: [(joined: Int64, left: Int64?)]] = [:]

        func isMember(of team: String) -> Bool { periods[team]?.last.map { $0.left == nil } ?? false }

        /// Runs `sql` in a transaction of its own; returns the transaction's id.
        private func run(_ sql: String, _ rig: HTTPRig) async throws -> Int64 {
            let lines = try await rig.server.query(sql + "; SELECT pg_current_xact_id()::text")
            return try #require(lines.last.flatMap { Int64($0) }, "a transaction id after \(sql): \(lines)")
        }

        private mutating func log(_ transaction: Int64, number: Int64 = 1, _ key: String, team: String) {
            let change = "\((transaction << 22) + number)|\(key)"
            changes.insert(change)
            let member = periods[team, default: []].contains {
                $0.joined < transaction && ($0.left.map { transaction < $0 } ?? true)
            }
            if member {
                alicesChanges.insert(change)
                alicesLastChange[key] = change
            }
        }

        mutating func join(_ team: String, _ rig: HTTPRig) async throws {
            let transaction = try await run("INSERT INTO team_members VALUES ('\(team)', 'alice')", rig)
            periods[team, default: []].append((transaction, nil))
        }

        mutating func leave(_ team: String, _ rig: HTTPRig) async throws {
            let transaction = try await run(
                "DELETE FROM team_members WHERE team = '\(team)' AND member = 'alice'", rig)
            if let open = periods[team]?.indices.last { periods[team]![open].left = transaction }
        }

        /// A new document in `team`, or a new title for one that exists (its team unchanged).
        mutating func write(_ doc: String, title: String, team: String, _ rig: HTTPRig) async throws {
            let transaction = try await run(
                "INSERT INTO team_docs VALUES ('\(doc)', '\(team)', '\(title)') ON CONFLICT (id) DO UPDATE "
                    + "SET title = excluded.title", rig)
            let held = teamOf[doc] ?? team
            teamOf[doc] = held
            log(transaction, doc, team: held)
        }

        /// A document moved to `team`: a delete its old team reads, then its new state.
        mutating func move(_ doc: String, to team: String, _ rig: HTTPRig) async throws {
            let transaction = try await run("UPDATE team_docs SET team = '\(team)' WHERE id = '\(doc)'", rig)
            guard let was = teamOf[doc] else { return }
            if was != team { log(transaction, doc, team: was) }
            teamOf[doc] = team
            log(transaction, number: was != team ? 2 : 1, doc, team: team)
        }

        mutating func delete(_ doc: String, _ rig: HTTPRig) async throws {
            let transaction = try await run("DELETE FROM team_docs WHERE id = '\(doc)'", rig)
            guard let was = teamOf.removeValue(forKey: doc) else { return }
            log(transaction, doc, team: was)
        }
    }
}
