import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaPostgres

/// The whole contract on a store reading from two standbys whenever they have caught up.
@Suite struct PostgresStandbyConformanceTests {
    @Test(arguments: OfflineStoreConformance.checks)
    func conformsReadingFromStandbysThatCaughtUp(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("postgres(standbys)", persistent: true) { folder in
                let rig = try await PostgresStandbyCluster.shared()
                return try PostgresOfflineStore(
                    primary: rig.primary, standbys: rig.standbys, table: PostgresCluster.tableName(for: folder),
                    configuration: StandbyRig.configuration(.standbyIfCaughtUp))
            })
    }
}

/// Reads from streaming standbys on a real primary and two standbys (``PostgresStandbyCluster``):
/// the second standby replays an hour late, so whatever was written after it started is never
/// on it, and a read there is deterministically behind.
@Suite struct PostgresStandbyReadTests {
    /// Three store instances write and read at once, each through the two standbys: no read misses
    /// a write its own store acknowledged before the read began, and no read answers an older
    /// value than a read of the same store that ended before it began.
    @Test func noReadMissesItsStoresWritesOrGoesBackInTime() async throws {
        try await StandbyRig.withDelayedSecondStandby { rig in
            let stores = try (0..<3).map { _ in try rig.store(.standbyIfCaughtUp) }
            let violations = try await withThrowingTaskGroup(of: [String].self) { group in
                for (index, store) in stores.enumerated() {
                    let history = ReadHistory()
                    group.addTask {
                        var random = SplitMix(seed: UInt64(index + 1))
                        var counters = [Int](repeating: 0, count: 4)
                        var problems: [String] = []
                        for _ in 0..<40 {
                            let slot = Int.random(in: 0..<4, using: &random)
                            counters[slot] += 1
                            let key = "s\(index):\(slot)"
                            try await store.set(key, String(counters[slot]))
                            history.acknowledged(key, counters[slot])
                            if let problem = try await history.read(key, from: store) { problems.append(problem) }
                        }
                        return problems
                    }
                    group.addTask {
                        var random = SplitMix(seed: UInt64(index + 100))
                        var problems: [String] = []
                        for _ in 0..<80 {
                            let key =
                                "s\(Int.random(in: 0..<3, using: &random)):\(Int.random(in: 0..<4, using: &random))"
                            if let problem = try await history.read(key, from: store) { problems.append(problem) }
                        }
                        return problems
                    }
                }
                return try await group.reduce(into: []) { $0 += $1 }
            }
            #expect(violations == [])
            // A store opened now sees every write made before: its floor starts at the primary's
            // position. Once the synchronous standby has applied past it, a standby answers.
            let fresh = try rig.store(.standbyIfCaughtUp)
            try await fresh.checkServers()
            try await rig.cluster.waitForFirstStandby()
            let latest = try await stores[2].get("s2:3")
            #expect(try await fresh.get("s2:3") == latest)
            #expect(fresh.readCounts.standbys.map(\.reads).reduce(0, +) == 1)
            #expect(fresh.readCounts.primary == 0)
        }
    }

    /// `.anyStandby` answers from a standby however far behind: the late standby answers the value
    /// written before it started, not the one the same store just wrote. `.standbyIfCaughtUp`
    /// on the same standby answers the new value (from the primary).
    @Test func anyStandbyReadsCanBeStaleAndStandbyIfCaughtUpReadsAreNot() async throws {
        try await StandbyRig.withDelayedSecondStandby { rig in
            let stale = try rig.store(.anyStandby, standbys: [2])
            try await stale.set("before", "new")
            #expect(try await stale.get("before") == "old")
            #expect(try await stale.keys("after").isEmpty)
            try await stale.set("after", "1")
            #expect(try await stale.keys("after").isEmpty)
            #expect(stale.readCounts.standbys.map(\.reads) == [3])

            let caughtUp = try rig.store(.standbyIfCaughtUp, standbys: [2])
            try await caughtUp.set("before", "newer")
            #expect(try await caughtUp.get("before") == "newer")
            #expect(try await caughtUp.keys("after") == ["after"])
        }
    }

    /// A standby that answers but stays behind: reads wait the whole wait for it, then the primary
    /// answers, until three reads in a row did (though the store's clock says it has been behind
    /// for no time at all); from then on it is left out and reads go to the primary without
    /// waiting. When its time is up, one read tries it again: short of the same floor for longer
    /// than the time bound by then, it is left out at once, without a wait. No error reaches the
    /// caller. (The store's clock is the test's: it moves only when the test moves it.)
    @Test func aStandbyThatMakesReadsWaitInVainIsLeftOutOfTheReads() async throws {
        try await StandbyRig.withDelayedSecondStandby { rig in
            let clock = TestClock()
            let store = try rig.store(.standbyIfCaughtUp, standbys: [2], wait: .milliseconds(5), clock: clock)
            for round in 0..<5 {
                try await store.write([.set(key: "k\(round)", value: "\(round)"), .set(key: "last", value: "\(round)")])
                #expect(try await store.get("last") == "\(round)")
                #expect(try await store.entries("k", after: nil, limit: 10).count == round + 1)
            }
            #expect(store.readCounts.primary == 10)
            #expect(store.readCounts.waited == PostgresStandbyReads.vainWaitsBound, "only the first three reads waited")
            #expect(store.readCounts.standbys.map(\.reads) == [0])
            clock.advance(by: PostgresStandbyReads.retryInterval)
            #expect(try await store.get("last") == "4")
            #expect(store.readCounts.waited == PostgresStandbyReads.vainWaitsBound)
            #expect(store.readCounts.primary == 11)
        }
    }

    /// Primary, synchronous standby 1, asynchronous standby 2 (issue 59): the primary is killed
    /// and standby 1 promoted; standby 2 still follows the dead primary, on the old timeline. The
    /// store's reads go to standby 1 as the primary's, and standby 2 is left out as soon as a read
    /// finds it on another timeline than the new primary's: no read waits for it, and one read
    /// tries it again when its time is up.
    @Test func afterAFailoverReadsGoToThePromotedStandbyAndTheStrandedOneIsLeftOut() async throws {
        try await StandbyRig.withCluster { rig in
            let clock = TestClock()
            let store = try rig.store(.standbyIfCaughtUp, connectTimeout: .seconds(2), clock: clock)
            for index in 0..<10 { try await store.set("k\(index)", "\(index)") }
            for index in 0..<10 { #expect(try await store.get("k\(index)") == "\(index)") }
            let names = try rig.cluster.conninfos.map { try PostgresConninfo($0).description }
            let before = store.readCounts
            #expect(before.primaryServer == names[0])
            #expect(before.standbys.map(\.server) == [names[1], names[2]])

            try await rig.cluster.failOver()
            // Written on standby 1's new timeline, which standby 2 does not follow.
            try await store.set("after", "failover")
            // Standby 2 is on the old timeline: left out at once, the primary answers.
            #expect(try await store.get("after") == "failover")
            clock.advance(by: PostgresStandbyReads.behindBound)
            for index in 0..<10 { #expect(try await store.get("k\(index)") == "\(index)") }
            let after = store.readCounts
            #expect(after.primaryServer == names[1], "the promoted standby answers the primary's reads")
            #expect(after.standbys.map(\.server) == [names[2]], "the promoted standby is no longer a standby")
            #expect(after.standbys.map(\.reads) == [before.standbys[1].reads])
            #expect(after.primary == before.primary + 11)
            #expect(after.waited == before.waited, "no read waited for the standby on the old timeline")

            // Its time up, one read tries standby 2 again: still on the old timeline, left out at once.
            clock.advance(by: PostgresStandbyReads.retryInterval)
            #expect(try await store.get("after") == "failover")
            #expect(store.readCounts.waited == before.waited)
            #expect(store.readCounts.primary == before.primary + 12)
        }
    }

    /// The asynchronous standby 2 has replayed WAL of the old timeline that the synchronous
    /// standby 1 never received (standby 1 was down while the primary wrote it). The primary is
    /// killed and standby 1 promoted: its new timeline starts below what standby 2 replayed, so the
    /// store's next write commits at a position standby 2 has passed without having the write. No
    /// read of the store, nor of a store opened after the failover, answers from standby 2.
    @Test func aStandbyAheadOnTheOldTimelineNeverAnswersAfterAFailover() async throws {
        try await StandbyRig.withCluster { rig in
            let clock = TestClock()
            let store = try rig.store(.standbyIfCaughtUp, connectTimeout: .seconds(2), clock: clock)
            for index in 0..<10 { try await store.set("k\(index)", "\(index)") }
            for index in 0..<10 { #expect(try await store.get("k\(index)") == "\(index)") }
            let before = store.readCounts
            #expect(before.standbys[1].reads > 0, "standby 2 answered before the failover")

            // Standby 1 down, the primary writes 2 MB only standby 2 receives and replays.
            try await rig.cluster.stopStandby(1)
            try await rig.cluster.psql(
                "SET synchronous_commit = local; SELECT pg_logical_emit_message(true, 'filler', repeat('x', 2000000))")
            try await rig.cluster.waitForStandby(2)
            try await rig.cluster.killPrimary()
            try await rig.cluster.startStandby(1)
            try await rig.cluster.promoteFirstStandby()

            try await store.set("after", "failover")
            let written = try await rig.cluster.psql("SELECT pg_current_wal_flush_lsn()", on: 1)
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let passed = try await rig.cluster.psql("SELECT pg_last_wal_replay_lsn() >= '\(written)'", on: 2)
            #expect(passed.trimmingCharacters(in: .whitespacesAndNewlines) == "t", "standby 2 replayed past the write")
            #expect(try await rig.cluster.psql("SELECT count(*) FROM kv", on: 2).hasPrefix("11"))

            #expect(try await store.get("after") == "failover")
            #expect(try await store.keys("") == ["after", "before"] + (0..<10).map { "k\($0)" })
            let after = store.readCounts
            #expect(after.standbys.map(\.reads) == [before.standbys[1].reads], "standby 2 answered nothing more")
            #expect(after.primary == before.primary + 2)
            #expect(after.waited == before.waited)

            // A store opened now: its floor is on the new timeline from the start.
            let reopened = try rig.store(.standbyIfCaughtUp, connectTimeout: .seconds(2), clock: clock)
            try await reopened.checkServers()
            #expect(try await reopened.get("after") == "failover")
            #expect(reopened.readCounts.standbys.map(\.reads) == [0])
            #expect(reopened.readCounts.primary == 1)
        }
    }

    /// The standby that answers stops under a running store: every later read is answered (by the
    /// late standby when it may, else the primary) and every acknowledged write is read back.
    /// `.flushed`, because commits of `.synced` writes wait for the stopped synchronous standby.
    @Test func aStoppedStandbyIsLeftOutWithoutAnError() async throws {
        try await StandbyRig.withDelayedSecondStandby { rig in
            let store = try rig.store(.standbyIfCaughtUp, durability: .flushed)
            for index in 0..<20 { try await store.set("k\(index)", "\(index)") }
            try await rig.cluster.waitForFirstStandby()
            #expect(try await store.get("k19") == "19")
            try await rig.cluster.stopStandby(1)
            for index in 0..<20 {
                #expect(try await store.get("k\(index)") == "\(index)")
                try await store.set("k\(index)", "\(index + 100)")
                #expect(try await store.get("k\(index)") == "\(index + 100)")
            }
            #expect(try await store.keys("k").count == 20)
            // A store opened while the standby is down: not an error; it is left out.
            let opened = try rig.store(.standbyIfCaughtUp, durability: .flushed)
            try await opened.checkServers()
            #expect(try await opened.get("k19") == "119")
        }
    }

    /// The primary dies and the synchronous standby is promoted: the store's reads and writes go on
    /// with no action, on the new primary, and every write acknowledged before is there.
    @Test func aPromotedStandbyIsTheNewPrimaryAndNoAcknowledgedWriteIsLost() async throws {
        try await StandbyRig.withDelayedSecondStandby { rig in
            let store = try rig.store(.standbyIfCaughtUp, connectTimeout: .seconds(2))
            for index in 0..<30 { try await store.set("k\(index)", "\(index)") }
            try await store.write((0..<30).map { .set(key: "batch:\($0)", value: "\($0)") })
            try await rig.cluster.failOver()
            for index in 0..<30 {
                #expect(try await store.get("k\(index)") == "\(index)")
            }
            #expect(try await store.keys("batch:").count == 30)
            try await store.set("after", "failover")
            #expect(try await store.get("after") == "failover")
            #expect(try await store.entries("", after: nil, limit: 100).count == 62)
            // A store opened now, with the same servers: the named primary is down and the
            // promoted standby is the primary.
            let reopened = try rig.store(.standbyIfCaughtUp, connectTimeout: .seconds(2))
            try await reopened.checkServers()
            #expect(try await reopened.get("after") == "failover")
            try await reopened.set("reopened", "1")
            #expect(try await reopened.keys("k").count == 30)
        }
    }

    /// `waitsForStandbyApply` makes `.synced` writes `remote_apply`; `.flushed` keeps `off`.
    @Test func waitingForStandbyApplyIsRemoteApply() async throws {
        let rig = try await PostgresStandbyCluster.shared()
        var configuration = StandbyRig.configuration(.standbyIfCaughtUp)
        configuration.waitsForStandbyApply = true
        for (durability, expected) in [(Durability.synced, "remote_apply"), (.flushed, "off")] {
            let store = try PostgresOfflineStore(
                primary: rig.primary, standbys: rig.standbys, table: "apply_\(expected)", durability: durability,
                configuration: configuration)
            try await store.set("k", "v")
            #expect(try await store.get("k") == "v")
            let setting = try await store.pool.withConnection(retryable: true) { connection throws(OfflineStoreError) in
                try connection.query("SHOW synchronous_commit", [], while: "test")
                    .string(row: 0, column: 0, what: "setting", table: "-")
            }
            #expect(setting == expected)
        }
    }
}

/// Configurations that do not fit together: a typed error when the store opens, naming the server.
@Suite struct PostgresStandbyConfigurationTests {
    @Test func aStandbyThatIsAPrimaryIsMisconfigured() async throws {
        let rig = try await PostgresStandbyCluster.shared()
        let store = try PostgresOfflineStore(primary: rig.primary, standbys: [rig.standbys[0], rig.primary])
        let error = await offlineStoreError { try await store.checkServers() }
        #expect(error?.code == .misconfigured)
        #expect(error?.message.contains("named as a standby but is a primary") == true, "\(String(describing: error))")
        #expect(error?.message.contains(Self.port(of: rig.primary)) == true, "\(String(describing: error))")
        // Every call throws it, reads and writes alike, and nothing was written.
        #expect(await offlineStoreError { try await store.set("k", "v") }?.code == .misconfigured)
        #expect(await offlineStoreError { _ = try await store.get("k") }?.code == .misconfigured)
    }

    @Test func noPrimaryIsMisconfigured() async throws {
        let rig = try await PostgresStandbyCluster.shared()
        let store = try PostgresOfflineStore(primary: rig.standbys[0], standbys: [rig.standbys[1]])
        let error = await offlineStoreError { try await store.checkServers() }
        #expect(error?.code == .misconfigured)
        #expect(error?.message.contains("is named as the primary but is a standby") == true)
        #expect(error?.message.contains(Self.port(of: rig.standbys[0])) == true, "\(String(describing: error))")

        let onlyStandbys = try PostgresOfflineStore(servers: Self.multiHost(rig.standbys))
        let none = await offlineStoreError { try await onlyStandbys.checkServers() }
        #expect(none?.code == .misconfigured)
        #expect(none?.message.contains("No server of") == true, "\(String(describing: none))")
    }

    @Test func aStandbyOfAnotherClusterIsMisconfigured() async throws {
        let rig = try await PostgresStandbyCluster.shared()
        let other = try await PostgresCluster.shared()
        // Two primaries among a multi-host conninfo's hosts.
        let store = try PostgresOfflineStore(servers: Self.multiHost([rig.primary, other.conninfo]))
        let error = await offlineStoreError { try await store.checkServers() }
        #expect(error?.code == .misconfigured)
        #expect(error?.message.contains("are all primaries") == true, "\(String(describing: error))")

        // A real standby, of another primary.
        let pair = try await PostgresFailoverPair.start()
        let port = try String(contentsOf: pair.standby.appendingPathComponent("port"), encoding: .utf8)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        let foreign = "host=\(pair.standby.path) port=\(port) user=postgres dbname=postgres"
        let mixed = try PostgresOfflineStore(primary: rig.primary, standbys: [rig.standbys[0], foreign])
        let mismatch = await offlineStoreError { try await mixed.checkServers() }
        try await pair.destroy()
        #expect(mismatch?.code == .misconfigured)
        #expect(mismatch?.message.contains("belongs to another cluster") == true, "\(String(describing: mismatch))")
        #expect(mismatch?.message.contains("port=\(port)") == true, "\(String(describing: mismatch))")
    }

    /// The URL form: one multi-host conninfo and `read=`; its servers are checked as it opens.
    @Test func aStoreURLNamesThePrimaryAndItsStandbys() async throws {
        let rig = try await PostgresStandbyCluster.shared()
        let hosts = Self.multiHost([rig.standbys[1], rig.primary, rig.standbys[0]])
        let url = "postgres:\(hosts)?read=standby-if-caught-up&table=url_form"
        let store = try #require(try await OfflineStores.open(url, using: [.postgres]) as? PostgresOfflineStore)
        #expect(store.configuration.readPolicy == .standbyIfCaughtUp)
        try await store.set("k", "v")
        #expect(try await store.get("k") == "v")
        // Every host but the one found to be the primary.
        #expect(store.readCounts.standbys.map(\.server).sorted() == rig.standbys.map(Self.hostAndPort).sorted())

        let bad = await #expect(throws: StoreURLError.self) {
            _ = try await OfflineStores.open("postgres:\(hosts)?read=sometimes", using: [.postgres])
        }
        #expect(bad?.part == "sometimes")
        let standbysOnly = await offlineStoreError {
            _ = try await OfflineStores.open(
                "postgres:\(Self.multiHost(rig.standbys))?read=any-standby", using: [.postgres])
        }
        #expect(standbysOnly?.code == .misconfigured)
    }

    /// A `read=` that names no policy is refused by `validate` as by `open` (issue 59: it passed
    /// `validate` and was refused only at open), before any server is asked.
    @Test func aReadPolicyNoneHasIsRefusedByValidateAsByOpen() async throws {
        let url = try OfflineStores.parse("postgres:host=/nonexistent port=1?read=nearest", using: [.postgres])
        let validated = await #expect(throws: StoreURLError.self) {
            try await OfflineStores.validate(url, using: [.postgres])
        }
        #expect(
            validated?.reason == .badValue(option: "read", allowed: ["primary", "standby-if-caught-up", "any-standby"]))
        #expect(validated?.part == "nearest")
        #expect(validated?.description.contains("read=standby-if-caught-up") == true)
        let opened = await #expect(throws: StoreURLError.self) {
            _ = try await OfflineStores.open(url, using: [.postgres])
        }
        #expect(opened?.reason == validated?.reason)
        // A policy's name in any case is one.
        try await OfflineStores.validate(
            OfflineStores.parse("postgres:host=a?read=Any-Standby", using: [.postgres]), using: [.postgres])
    }

    /// A plain store pointed at a standby checks the table instead of creating it: it reads, and
    /// its writes throw `.permissionDenied`; a table the standby does not have is `.unsupported`.
    @Test func aPlainStoreOnAStandbyReadsAndCannotWrite() async throws {
        let rig = try await PostgresStandbyCluster.shared()
        let primary = try PostgresOfflineStore(connection: rig.primary, table: "plain_on_standby")
        try await primary.set("k", "v")
        try await rig.waitForFirstStandby()
        let standby = try PostgresOfflineStore(connection: rig.standbys[0], table: "plain_on_standby")
        #expect(try await standby.get("k") == "v")
        #expect(await offlineStoreError { try await standby.set("k", "w") }?.code == .permissionDenied)
        #expect(try await primary.get("k") == "v")
        let missing = try PostgresOfflineStore(connection: rig.standbys[0], table: "never_created")
        let error = await offlineStoreError { _ = try await missing.get("k") }
        #expect(error?.code == .unsupported)
        #expect(error?.message.contains("does not exist on this standby") == true, "\(String(describing: error))")
    }

    @Test func multiHostConninfosSplitIntoOneServerEach() throws {
        let servers = try PostgresServer.servers(in: "host=a,b,c port=1,2,3 dbname=app target_session_attrs=read-write")
        #expect(
            servers.map(\.description) == [
                "host=a port=1 dbname=app", "host=b port=2 dbname=app", "host=c port=3 dbname=app",
            ])
        #expect(servers.allSatisfy { !$0.conninfo.contains("target_session_attrs") })
        let shared = try PostgresServer.servers(in: "postgresql://u@a,b:7/app")
        #expect(shared.map(\.description) == ["host=a dbname=app user=u", "host=b port=7 dbname=app user=u"])
        let error = #expect(throws: OfflineStoreError.self) {
            try PostgresServer.servers(in: "host=a,b,c port=1,2")
        }
        #expect(error?.code == .unsupported)
        #expect(try PostgresServer.servers(in: "host=a user='o\\'k'").first?.conninfo.contains("o\\'k") == true)
    }

    /// `host=… port=…` of a conninfo, as the store describes a server of a multi-host conninfo.
    static func hostAndPort(_ conninfo: String) -> String {
        let fields = conninfo.split(separator: " ")
        let host = fields.first { $0.hasPrefix("host=") } ?? ""
        return "\(host) \(Self.port(of: conninfo)) dbname=postgres user=postgres"
    }

    private static func port(of conninfo: String) -> String {
        String(conninfo.split(separator: " ").first { $0.hasPrefix("port=") } ?? "")
    }

    /// One conninfo naming the servers of `conninfos` (each `host=… port=… user=… dbname=…`), on
    /// the database `postgres`, which every cluster has.
    static func multiHost(_ conninfos: [String]) -> String {
        func field(_ name: String, _ conninfo: String) -> String {
            String(conninfo.split(separator: " ").first { $0.hasPrefix(name + "=") }?.dropFirst(name.count + 1) ?? "")
        }
        let hosts = conninfos.map { field("host", $0) }.joined(separator: ",")
        let ports = conninfos.map { field("port", $0) }.joined(separator: ",")
        return "host=\(hosts) port=\(ports) user=postgres dbname=postgres"
    }
}

/// Stores on a ``PostgresStandbyCluster`` whose second standby replays an hour late.
struct StandbyRig {
    let cluster: PostgresStandbyCluster

    /// Runs `body` on a new cluster whose table `kv` holds `before = old` on every server (written
    /// before the standbys copied the primary) and whose second standby replays an hour late, then
    /// destroys it.
    static func withDelayedSecondStandby(_ body: (StandbyRig) async throws -> Void) async throws {
        try await withCluster(secondStandbyOptions: "-c recovery_min_apply_delay=1h", body)
    }

    /// Runs `body` on a new cluster whose table `kv` holds `before = old` on every server, with
    /// `secondStandbyOptions` for the second standby, then destroys it.
    static func withCluster(
        secondStandbyOptions: String = "", _ body: (StandbyRig) async throws -> Void
    ) async throws {
        let cluster = try await PostgresStandbyCluster.start(secondStandbyOptions: secondStandbyOptions) { conninfo in
            try await PostgresOfflineStore(connection: conninfo, table: "kv").set("before", "old")
        }
        do {
            try await body(StandbyRig(cluster: cluster))
        } catch {
            try? await cluster.destroy()
            throw error
        }
        try await cluster.destroy()
    }

    /// A store on table `kv` reading by `policy` from the standbys numbered `standbys` (1, 2);
    /// with `clock`, the rules that leave a standby out run on it.
    func store(
        _ policy: PostgresOfflineStore.ReadPolicy, standbys: [Int] = [1, 2], wait: Duration = .milliseconds(100),
        durability: Durability = .synced, connectTimeout: Duration = .seconds(10), clock: TestClock? = nil
    ) throws -> PostgresOfflineStore {
        var configuration = Self.configuration(policy)
        configuration.standbyWait = wait
        configuration.connectTimeout = connectTimeout
        guard let clock else {
            return try PostgresOfflineStore(
                primary: cluster.primary, standbys: standbys.map { cluster.conninfos[$0] }, table: "kv",
                durability: durability, configuration: configuration)
        }
        let servers =
            try [PostgresServer(conninfo: cluster.primary, role: .primary)]
            + standbys.map { try PostgresServer(conninfo: cluster.conninfos[$0], role: .standby) }
        return try PostgresOfflineStore(
            servers: .several(servers), table: "kv", durability: durability, configuration: configuration,
            standbyClock: { clock.now() })
    }

    static func configuration(_ policy: PostgresOfflineStore.ReadPolicy) -> PostgresOfflineStore.Configuration {
        var configuration = PostgresOfflineStore.Configuration()
        configuration.readPolicy = policy
        return configuration
    }
}

/// A clock that stands still until the test moves it: the store's rules about leaving a standby
/// out see only the time the test gives them.
final class TestClock: Sendable {
    private let start = ContinuousClock.now
    private let elapsed = Mutex<Duration>(.zero)

    func now() -> ContinuousClock.Instant { start + elapsed.withLock { $0 } }

    func advance(by duration: Duration) { elapsed.withLock { $0 += duration } }
}

/// What one store acknowledged and read, to hold each read against it.
private final class ReadHistory: Sendable {
    private let state = Mutex<(acknowledged: [String: Int], seen: [String: Int])>(([:], [:]))

    func acknowledged(_ key: String, _ value: Int) {
        state.withLock { $0.acknowledged[key] = max($0.acknowledged[key] ?? 0, value) }
    }

    /// Reads `key` and returns what is wrong with the answer, or `nil`.
    func read(_ key: String, from store: PostgresOfflineStore) async throws -> String? {
        let (written, seen) = state.withLock { ($0.acknowledged[key] ?? 0, $0.seen[key] ?? 0) }
        let value = try await store.get(key).flatMap { Int($0) } ?? 0
        state.withLock { $0.seen[key] = max($0.seen[key] ?? 0, value) }
        if value < written { return "\(key): read \(value) after its store acknowledged \(written)" }
        if value < seen { return "\(key): read \(value) after a read of \(seen)" }
        return nil
    }
}

/// The floor's rules, without a server.
@Suite struct PostgresReadFloorTests {
    /// A new timeline of the primary starts the floor again at the new primary's position; a
    /// standby's position on the timeline the primary left does not raise it.
    @Test func aNewTimelineStartsTheFloorAgainAndOldTimelinePositionsDoNotRaiseIt() {
        var floor = PostgresReadFloor()
        floor.primaryFound(onTimeline: 1, at: 500)
        floor.raise(to: 900, onTimeline: 1)
        #expect(floor.required == 900 && floor.timeline == 1)
        floor.primaryFound(onTimeline: 1, at: 600)
        #expect(floor.required == 900)
        floor.primaryFound(onTimeline: 2, at: 700)
        #expect(floor.required == 700 && floor.timeline == 2)
        floor.raise(to: 2_000, onTimeline: 1)
        #expect(floor.required == 700)
        floor.raise(to: 800, onTimeline: 2)
        #expect(floor.required == 800)
    }

    @Test func aWriteWhosePositionIsLostKeepsReadsOnThePrimaryUntilALaterWriteLearnsOne() {
        var floor = PostgresReadFloor()
        let first = floor.writeStarts()
        floor.writeCommitted(first, at: 100)
        #expect(floor.required == 100)
        let concurrent = floor.writeStarts()
        let lost = floor.writeStarts()
        floor.writeCommitted(lost, at: nil)
        #expect(floor.required == nil)
        // A write that started before the lost one's commit does not clear it...
        floor.writeCommitted(concurrent, at: 200)
        #expect(floor.required == nil)
        // ...one that started after it does.
        let later = floor.writeStarts()
        floor.writeCommitted(later, at: 300)
        #expect(floor.required == 300)
        floor.raise(to: 250)
        #expect(floor.required == 300)
    }

    /// An insert position right after a page header is where the last record ended, at the page's
    /// start, which is as far as a caught-up standby's replay goes.
    @Test(arguments: [
        (UInt64(0x0300_2018), UInt64(0x0300_2000)), (0x0400_0028, 0x0400_0000), (0x0300_2019, 0x0300_2019),
        (0x0300_2000, 0x0300_2000), (0x0300_1FF0, 0x0300_1FF0),
    ])
    func primaryPositionsAfterAPageHeaderAreThePageStart(_ position: UInt64, _ floorAt: UInt64) {
        var floor = PostgresReadFloor()
        floor.raise(toPrimary: position)
        #expect(floor.required == floorAt)
    }
}
