import Foundation
import Sovaria
import SovariaPlumbing
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaPostgres

@Suite struct PostgresOfflineStoreTests {
    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWhenSynced(_ check: ConformanceCheck) async throws {
        try await check.run(on: PostgresTestStores.factory(.synced))
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWhenFlushed(_ check: ConformanceCheck) async throws {
        try await check.run(on: PostgresTestStores.factory(.flushed))
    }

    @Test func declaresNativeCapabilities() async throws {
        let store = try await PostgresTestStores.make()
        #expect(store.capabilities == [.atomicBatch, .persistent, .orderedScan, .compaction, .byteValues])
        #expect(store.isPersistent)
        #expect(store.durability == .synced)
        #expect(store.table.hasPrefix("t_"))
        #expect(!PostgresLibrary.version.isEmpty)
    }

    @Test(arguments: [Durability.synced, .flushed])
    func durabilityIsSynchronousCommitOfEverySession(_ durability: Durability) async throws {
        let store = try await PostgresTestStores.make(durability: durability)
        try await store.set("k", "v")
        let setting = try await store.pool.withConnection(retryable: true) { connection throws(OfflineStoreError) in
            try connection.query("SHOW synchronous_commit", [], while: "test")
                .string(row: 0, column: 0, what: "setting", table: "-")
        }
        #expect(setting == (durability == .synced ? "on" : "off"))
    }

    @Test func tableNamesOutsideTheRulesAreRefusedBeforeAnySQL() async throws {
        let conninfo = try await PostgresCluster.sharedDatabase()
        for name in ["", "Kv", "1kv", "kv; DROP TABLE x", "kv\"", String(repeating: "k", count: 64), "ké"] {
            let error = await offlineStoreError { _ = try PostgresOfflineStore(connection: conninfo, table: name) }
            #expect(error?.code == .unsupported, "\(name)")
        }
        _ = try PostgresOfflineStore(connection: conninfo, table: "_kv_" + String(repeating: "9", count: 59))
    }

    @Test func aConninfoLibpqCannotParseIsRefusedAtInit() async throws {
        let error = await offlineStoreError { _ = try PostgresOfflineStore(connection: "host=x nonsense=1") }
        #expect(error?.code == .unsupported)
        #expect(error?.message.contains("nonsense") == true)
    }

    @Test func theServerDescriptionNeverShowsThePassword() throws {
        let store = try PostgresOfflineStore(connection: "host=/tmp port=5 dbname=app user=u password=secret")
        #expect(store.server == "host=/tmp port=5 dbname=app user=u")
    }

    @Test func aTableWithAnotherLayoutIsNotWrittenInto() async throws {
        let cluster = try await PostgresCluster.shared()
        let conninfo = try await cluster.makeDatabase()
        let database = try #require(conninfo.split(separator: " ").first { $0.hasPrefix("dbname=") }?.dropFirst(7))
        try await cluster.psql("CREATE TABLE notes (key text PRIMARY KEY, body text)", database: String(database))
        let store = try PostgresOfflineStore(connection: conninfo, table: "notes")
        let error = await offlineStoreError { try await store.set("a", "b") }
        #expect(error?.code == .unsupported)
        #expect(error?.message.contains("key text") == true)
        #expect(try await cluster.psql("SELECT count(*) FROM notes", database: String(database)) == "0\n")
    }

    @Test func storesOnOneTableShareItsEntries() async throws {
        let first = try await PostgresTestStores.make()
        let second = try PostgresOfflineStore(
            connection: try await PostgresCluster.sharedDatabase(), table: first.table, durability: .flushed)
        try await first.write([.set(key: "a", value: "1"), .set(key: "b", value: "\u{0}é")])
        #expect(try await second.get("b") == "\u{0}é")
        try await second.delete("a")
        #expect(try await first.keys("") == ["b"])
    }

    @Test func prefixScansAreIndexRangeScans() async throws {
        let store = try await PostgresTestStores.make()
        try await store.write((0..<2_000).map { .set(key: "p:\($0)", value: "v") })
        try await store.compact()  // VACUUM also gathers the statistics the planner reads
        let plan = try await store.pool.withConnection(retryable: true) { connection throws(OfflineStoreError) in
            let rows = try connection.query(
                "EXPLAIN EXECUTE sovaria_keys('\\x703a31'::bytea, '\\x703a32'::bytea)", [], while: "test")
            return try (0..<rows.rowCount).map { row throws(OfflineStoreError) in
                try rows.string(row: row, column: 0, what: "plan", table: "-")
            }.joined(separator: "\n")
        }
        #expect(plan.contains("Index Only Scan") || plan.contains("Index Scan"), "\(plan)")
        #expect(!plan.contains("Seq Scan"), "\(plan)")
        #expect(try await store.keys("p:1").count == 1_111)
    }

    @Test func compactGivesTheSpaceOfDeletedRowsBack() async throws {
        let store = try await PostgresTestStores.make(durability: .flushed)
        // Autovacuum may truncate the emptied pages between the deletes and the next look (a
        // slow run gave it the time), which would make "deletes alone keep the space" depend on
        // timing: off for this table, so only compact() gives the space back.
        try await disableAutovacuum(store)
        let value = String(repeating: "v", count: 1_024)
        for chunk in 0..<8 {
            try await store.write((0..<500).map { .set(key: "fill:\(chunk):\($0)", value: value) })
        }
        let filled = try await relationBytes(store)
        #expect(filled > 4_000_000)
        for chunk in 0..<8 { try await store.write((0..<500).map { .delete(key: "fill:\(chunk):\($0)") }) }
        #expect(try await relationBytes(store) >= filled, "deletes alone keep the space")
        try await store.compact()
        let compacted = try await relationBytes(store)
        // Not all of it: other tests share the database, and their open transactions can keep a
        // few pages' dead rows for a later VACUUM (one run kept 5.5%).
        #expect(compacted < filled / 4, "VACUUM left \(compacted) of \(filled) bytes")
        try await store.set("after", "compact")
        #expect(try await store.keys("") == ["after"])
    }

    @Test func aRowLockedLongerThanTheLockTimeoutThrowsLocked() async throws {
        var configuration = PostgresOfflineStore.Configuration()
        configuration.lockTimeout = .milliseconds(50)
        let store = try await PostgresTestStores.make(configuration: configuration)
        try await store.set("held", "before")
        // A second session holds the row's lock in an open transaction (a connection of the
        // test's own: the pool closes a connection that comes back inside a transaction).
        let conninfo = try await PostgresCluster.sharedDatabase()
        let table = store.table
        let queue = BlockingWorkQueue(label: "test.holder")
        let holder = try await queue.runConcurrently {
            let holder = try PostgresConnection(
                conninfo: conninfo, server: "test", durability: .synced, lockTimeoutMilliseconds: 1_000,
                connectTimeoutSeconds: 5)
            try holder.execute("BEGIN", while: "test")
            _ = try holder.query("SELECT value FROM \(table) WHERE key = $1 FOR UPDATE", [.utf8("held")], while: "test")
            return holder
        }
        // The locked row comes in the third pipelined chunk of the batch, after 600 writes that worked.
        let batch: [StoreWrite] =
            (0..<600).map { .set(key: "free:\($0)", value: "1") } + [.set(key: "held", value: "2")]
        let error = await offlineStoreError { try await store.write(batch) }
        #expect(error?.code == .locked)
        #expect(error?.engine == .postgres)
        #expect(error?.nativeCode == OfflineStoreError.packed(sqlState: "55P03"))
        #expect(error?.message.contains("55P03") == true)
        #expect(try await store.keys("free:").isEmpty, "the batch was rolled back whole")
        #expect(error?.key == "held")
        try await queue.runConcurrently { try holder.execute("ROLLBACK", while: "test") }
        try await store.set("held", "after")
        try await store.write(batch)  // the connection that failed the batch works again
        #expect(try await store.keys("free:").count == 600)
        #expect(try await store.get("held") == "2")
    }

    @Test func aUserWithoutPrivilegesGetsPermissionDenied() async throws {
        let cluster = try await PostgresCluster.shared()
        let store = try await PostgresTestStores.make()
        try await store.set("a", "b")
        let role = "reader_" + UUID().uuidString.prefix(8).lowercased()
        try await cluster.psql("CREATE ROLE \(role) LOGIN")
        let conninfo = try await PostgresCluster.sharedDatabase().replacingOccurrences(
            of: "user=postgres", with: "user=\(role)")
        let stranger = try PostgresOfflineStore(connection: conninfo, table: store.table)
        let error = await offlineStoreError { _ = try await stranger.get("a") }
        #expect(error?.code == .permissionDenied, "\(String(describing: error))")
        #expect(error?.message.contains("GRANT") == true)
    }

    @Test func anUnreachableServerThrowsIOSayingWhatToCheck() async throws {
        let folder = try TemporaryFolder()
        let store = try PostgresOfflineStore(connection: "host=\(folder.url.path) port=1 dbname=none user=nobody")
        let error = await offlineStoreError { _ = try await store.get("a") }
        #expect(error?.code == .io)
        #expect(error?.message.contains("could not connect") == true)
        #expect(error?.message.contains("Check that the server is running") == true)
        #expect(error?.message.contains("port=1") == true)
    }

    @Test func manyConcurrentCallsUseAtMostMaxConnections() async throws {
        // A database of its own, so that only this store's sessions are counted.
        let conninfo = try await PostgresCluster.shared().makeDatabase()
        let store = try PostgresOfflineStore(connection: conninfo, configuration: .init(maxConnections: 2))
        let most = try await withThrowingTaskGroup(of: Int.self) { group in
            for task in 0..<40 {
                group.addTask {
                    try await store.write([.set(key: "k\(task)", value: "\(task)"), .set(key: "j\(task)", value: "")])
                    #expect(try await store.get("k\(task)") == "\(task)")
                    return try await store.pool.withConnection(retryable: true) {
                        connection throws(OfflineStoreError) in
                        try sessionCount(connection)
                    }
                }
            }
            return try await group.reduce(0, max)
        }
        #expect(try await store.keys("k").count == 40)
        #expect((1...2).contains(most), "\(most) sessions")
    }

    @Test func sqlStatesMapToCodes() {
        let cases: [(String, OfflineStoreError.Code)] = [
            ("55P03", .locked), ("40P01", .locked), ("53100", .full), ("42501", .permissionDenied),
            ("XX001", .corrupt), ("XX002", .corrupt), ("08006", .io), ("57P01", .io), ("28P01", .permissionDenied),
            ("42P01", .unsupported), ("22021", .io),
        ]
        for (state, code) in cases {
            let error = OfflineStoreError.postgres(sqlState: state, "m", while: "Testing")
            #expect(error.code == code, "\(state)")
            #expect(error.message.contains("SQLSTATE \(state)"))
        }
        // PostgreSQL's own packing: ERRCODE_LOCK_NOT_AVAILABLE is MAKE_SQLSTATE('5','5','P','0','3').
        #expect(OfflineStoreError.packed(sqlState: "55P03") == 5 | 5 << 6 | 32 << 12 | 0 << 18 | 3 << 24)
    }

    @Test func aValueThatIsNotUTF8ReadsAsBytesAndThrowsNotUTF8AsAString() async throws {
        let store = try await PostgresTestStores.make()
        try await store.set("bad", "x")
        let table = store.table
        try await store.pool.withConnection(retryable: false) { connection throws(OfflineStoreError) in
            try connection.execute("UPDATE \(table) SET value = '\\xff'::bytea", while: "test")
        }
        let error = await offlineStoreError { _ = try await store.get("bad") }
        #expect(error?.code == .notUTF8)
        #expect(error?.key == "bad")
        #expect(try await store.data("bad") == Data([0xFF]))
    }
}

/// The number of sessions on the connection's database.
private func sessionCount(_ connection: PostgresConnection) throws(OfflineStoreError) -> Int {
    let rows = try connection.query(
        "SELECT count(*)::text FROM pg_stat_activity WHERE datname = current_database()", [], while: "test")
    return Int(try rows.string(row: 0, column: 0, what: "count", table: "-")) ?? -1
}

/// The table's size on disk with its index and TOAST data.
/// Turns autovacuum off for the store's table.
private func disableAutovacuum(_ store: PostgresOfflineStore) async throws {
    let table = store.table
    try await store.pool.withConnection(retryable: true) { connection throws(OfflineStoreError) in
        let quoted = try connection.query("SELECT $1::regclass::text", [.text(table)], while: "test")
        let name = try quoted.string(row: 0, column: 0, what: "table", table: "-")
        _ = try connection.query("ALTER TABLE \(name) SET (autovacuum_enabled = false)", [], while: "test")
    }
}

private func relationBytes(_ store: PostgresOfflineStore) async throws -> Int {
    let table = store.table
    return try await store.pool.withConnection(retryable: true) { connection throws(OfflineStoreError) in
        let rows = try connection.query(
            "SELECT pg_total_relation_size($1::regclass)::text", [.text(table)], while: "test")
        return Int(try rows.string(row: 0, column: 0, what: "size", table: "-")) ?? -1
    }
}
