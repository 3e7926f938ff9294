import CSQLite
import Foundation
import Sovaria
import SovariaTestKit
import Testing

@testable import SovariaSQLite

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

@Suite struct SQLiteOfflineStoreTests {
    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWhenSynced(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("sqlite(synced)", persistent: true) { folder in
                try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("store.sqlite"), durability: .synced)
            })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWhenFlushed(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: StoreFactory("sqlite(flushed)", persistent: true) { folder in
                try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("store.sqlite"), durability: .flushed)
            })
    }

    @Test func declaresNativeCapabilities() throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"))
        #expect(store.capabilities == [.atomicBatch, .persistent, .orderedScan, .compaction, .byteValues])
        #expect(store.isPersistent)
        #expect(store.durability == .synced)
    }

    @Test func compactGivesDeletedSpaceBackToTheFileSystem() async throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        let store = try SQLiteOfflineStore(fileURL: file, durability: .flushed)
        let value = String(repeating: "v", count: 1_024)
        for chunk in 0..<8 {
            try await store.write((0..<500).map { .set(key: "fill:\(chunk):\($0)", value: value) })
        }
        try await store.set("keep", "kept")
        let filledBytes = try sizeOnDisk(file)
        #expect(filledBytes > 4_000_000)

        for chunk in 0..<8 { try await store.write((0..<500).map { .delete(key: "fill:\(chunk):\($0)") }) }
        let afterDeleteBytes = try sizeOnDisk(file)
        #expect(afterDeleteBytes >= filledBytes, "deletes alone keep the space: \(afterDeleteBytes) < \(filledBytes)")

        try await store.compact()
        let compactedBytes = try sizeOnDisk(file)
        #expect(compactedBytes < filledBytes / 20, "compact left \(compactedBytes) of \(filledBytes) bytes")
        #expect(try fileSize(folder.child("store.sqlite-wal")) ?? 0 == 0, "the WAL is truncated")
        #expect(try await store.get("keep") == "kept")
        #expect(try await store.keys("fill:").isEmpty)
        #expect(try await store.quickCheck())
    }

    @Test func storesOnOnePathShareOneHandle() async throws {
        let folder = try TemporaryFolder()
        let first = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"))
        let respelled = try SQLiteOfflineStore(fileURL: folder.child("sub/../store.sqlite"))
        try FileManager.default.createSymbolicLink(at: folder.child("link"), withDestinationURL: folder.url)
        let throughLink = try SQLiteOfflineStore(fileURL: folder.child("link/store.sqlite"), durability: .flushed)
        #expect(first.database === respelled.database)
        #expect(first.database === throughLink.database)

        try await first.set("a", "from first")
        #expect(try await respelled.get("a") == "from first")
        try await throughLink.write([.set(key: "b", value: "from link"), .delete(key: "a")])
        #expect(try await first.keys("") == ["b"])

        // Many tasks writing through all three at once never corrupt the file.
        let stores = [first, respelled, throughLink]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for task in 0..<24 {
                group.addTask {
                    let store = stores[task % stores.count]
                    for item in 0..<20 { try await store.set("t\(task):\(item)", "\(task)") }
                    try await store.write([.delete(key: "t\(task):0"), .set(key: "t\(task):batch", value: "b")])
                }
            }
            try await group.waitForAll()
        }
        #expect(try await respelled.keys("t").count == 24 * 20)
        #expect(try await first.quickCheck())
    }

    @Test func aSharedHandleKeepsEachStoresDurability() async throws {
        let folder = try TemporaryFolder()
        let synced = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"), durability: .synced)
        let flushed = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"), durability: .flushed)
        #expect(try await synced.writerText("PRAGMA synchronous") == "2")  // FULL
        try await flushed.set("k", "v")
        #expect(try await flushed.writerText("PRAGMA synchronous") == "1")  // NORMAL
        try await synced.set("k", "v")
        #expect(try await synced.writerText("PRAGMA synchronous") == "2")
    }

    @Test func theHandleClosesWithItsLastStoreAndReopens() async throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        weak var firstDatabase: SQLiteDatabase?
        do {
            let store = try SQLiteOfflineStore(fileURL: file)
            firstDatabase = store.database
            try await store.set("k", "v")
        }
        #expect(firstDatabase == nil)
        // The last connection to close checkpoints the WAL into the file and removes it.
        #expect(!FileManager.default.fileExists(atPath: folder.child("store.sqlite-wal").path))
        let reopened = try SQLiteOfflineStore(fileURL: file)
        #expect(try await reopened.get("k") == "v")
    }

    @Test func usesTheSchemaAndSettingsTheEngineNotesAskFor() async throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"))
        try await store.set("k", "v")
        let connection = try rawConnection(to: folder.child("store.sqlite"), readOnly: true)
        defer { connection.close() }
        let table = try #require(
            try connection.text("SELECT sql FROM sqlite_master WHERE name = 'entries'", purpose: "schema"))
        #expect(table.contains("key BLOB NOT NULL PRIMARY KEY"))
        #expect(!table.uppercased().contains("WITHOUT ROWID"))
        #expect(try connection.text("PRAGMA journal_mode", purpose: "test") == "wal")
        #expect(try connection.integer("PRAGMA auto_vacuum", purpose: "test") == 2)  // INCREMENTAL
        #expect(try connection.integer("PRAGMA user_version", purpose: "test") == SQLiteSchema.version)
        #expect(try permissions(of: folder.child("store.sqlite")) == 0o600)

        // Scans walk the key index in order: no sort, no full scan.
        for sql in [SQLiteSchema.selectKeys, SQLiteSchema.selectEntries, SQLiteSchema.selectValue] {
            let plan = try queryPlan(sql, on: connection)
            #expect(plan.contains { $0.contains("INDEX sqlite_autoindex_entries_1 (key") }, "\(sql): \(plan)")
            #expect(!plan.contains { $0.contains("TEMP B-TREE") }, "\(sql): \(plan)")
        }
    }

    @Test func scansOfPrefixesEndingInHighBytesAndPagesAfterForeignKeys() async throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"))
        let keys = ["a", "a\u{7F}", "a\u{7F}\u{7F}", "a\u{80}", "b", "\u{10FFFF}", "\u{10FFFF}z"]
        try await store.write(keys.map { .set(key: $0, value: $0) })
        #expect(try await store.keys("a\u{7F}") == ["a\u{7F}", "a\u{7F}\u{7F}"])
        #expect(try await store.keys("\u{10FFFF}") == ["\u{10FFFF}", "\u{10FFFF}z"])
        #expect(try await store.entries("a", after: "a\u{7F}", limit: 10).map(\.key) == ["a\u{7F}\u{7F}", "a\u{80}"])
        #expect(try await store.entries("a", after: "0", limit: 2).map(\.key) == ["a", "a\u{7F}"])
        #expect(try await store.entries("a", after: "b", limit: 2).isEmpty)
    }

    @Test func aBatchThatFailsInTheEngineChangesNothing() async throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"))
        try await store.set("existing", "before")
        let connection = try rawConnection(to: folder.child("store.sqlite"))
        defer { connection.close() }
        try connection.execute(
            """
            CREATE TRIGGER refuse_bad BEFORE INSERT ON entries WHEN NEW.key = CAST('bad' AS BLOB)
            BEGIN SELECT RAISE(ABORT, 'injected failure'); END
            """, purpose: "test")

        let error = try await #require(throws: OfflineStoreError.self) {
            try await store.write([
                .set(key: "first", value: "1"), .delete(key: "existing"), .set(key: "bad", value: "x"),
                .set(key: "last", value: "2"),
            ])
        }
        #expect(error.engine == "sqlite")
        #expect(error.key == "bad")
        #expect(error.message.contains("injected failure"))
        #expect(try await store.keys("") == ["existing"])
        #expect(try await store.get("existing") == "before")
        try await store.write([.set(key: "after", value: "works")])  // no transaction was left open
        #expect(try await store.get("after") == "works")
    }

    @Test func aWriteLockHeldElsewhereIsLocked() async throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        var noWaiting = SQLiteOfflineStore.Configuration()
        noWaiting.busyTimeout = .zero
        let store = try SQLiteOfflineStore(fileURL: file, configuration: noWaiting)
        try await store.set("k", "before")
        let other = try rawConnection(to: file, busyTimeoutMilliseconds: 0)
        defer { other.close() }
        try other.execute("BEGIN IMMEDIATE", purpose: "test")

        let error = try await #require(throws: OfflineStoreError.self) { try await store.set("k", "after") }
        #expect(error.code == .locked)
        #expect(error.engine == "sqlite")
        #expect(error.nativeCode.map { $0 & 0xFF } == 5)  // SQLITE_BUSY
        #expect(try await store.get("k") == "before", "a WAL reader does not wait for the writer")

        try other.execute("COMMIT", purpose: "test")
        try await store.set("k", "after")
        #expect(try await store.get("k") == "after")
    }

    /// Two processes creating one store at once: while another connection holds the write lock,
    /// SQLite fails the switch to WAL at once with `SQLITE_BUSY`, without waiting the busy
    /// timeout (CI saw a second process's open fail so). The open starts over until the lock is
    /// free. Here the other connection takes its lock as the switch starts (SQLite's statement
    /// trace) and lets go in the pause between tries.
    @Test func anOpenWhileAnotherConnectionCreatesTheFileWaitsForItsLock() throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        let other = try rawConnection(to: file, busyTimeoutMilliseconds: 0)
        defer { other.close() }
        let opening = try rawConnection(to: file, busyTimeoutMilliseconds: 300_000)
        defer { opening.close() }
        let locker = LockOnWALSwitch(other)
        let context = Unmanaged.passUnretained(locker).toOpaque()
        sqlite3_trace_v2(
            opening.handle, UInt32(SQLITE_TRACE_STMT),
            { _, context, _, sql in
                guard let context, let sql else { return 0 }
                let text = String(cString: sql.assumingMemoryBound(to: CChar.self))
                Unmanaged<LockOnWALSwitch>.fromOpaque(context).takeUnretainedValue().statementStarts(text)
                return 0
            }, context)

        var pauses = 0
        try SQLiteSchema.prepare(opening) {
            pauses += 1
            try? other.execute("COMMIT", purpose: "test")
        }
        #expect(locker.locks == 1, "the other connection held the lock as the switch began")
        #expect(pauses == 1, "the first try met the lock, the second found it free")
        #expect(try opening.text("PRAGMA journal_mode", purpose: "test") == "wal")
        #expect(try opening.integer("PRAGMA user_version", purpose: "test") == SQLiteSchema.version)
        withExtendedLifetime(locker) {}
    }

    /// With no busy timeout, an open that meets another connection's lock fails with `.locked`
    /// at once, and the file is left for the next open.
    @Test func anOpenWithNoBusyTimeoutMeetingALockIsLocked() async throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        let other = try rawConnection(to: file, busyTimeoutMilliseconds: 0)
        defer { other.close() }
        try other.execute("BEGIN IMMEDIATE", purpose: "test")
        var noWaiting = SQLiteOfflineStore.Configuration()
        noWaiting.busyTimeout = .zero
        let error = #expect(throws: OfflineStoreError.self) {
            try SQLiteOfflineStore(fileURL: file, configuration: noWaiting)
        }
        #expect(error?.code == .locked)
        try other.execute("COMMIT", purpose: "test")
        let store = try SQLiteOfflineStore(fileURL: file, configuration: noWaiting)
        try await store.set("k", "v")
        #expect(try await store.get("k") == "v")
    }

    /// A small flushed write first tries the writer on its caller's thread without waiting for the
    /// lock; when another connection holds it, the write must go on to the queue and wait there
    /// (the busy timeout), not fail with `.locked`.
    @Test func aFlushedWriteWaitsForALockHeldElsewhereInsteadOfFailing() async throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        // A long busy timeout: under a loaded test run the lock may be held for seconds.
        var patient = SQLiteOfflineStore.Configuration(durability: .flushed)
        patient.busyTimeout = .seconds(300)
        let store = try SQLiteOfflineStore(fileURL: file, configuration: patient)
        try await store.set("k", "before")
        let other = try rawConnection(to: file, busyTimeoutMilliseconds: 0)
        defer { other.close() }
        try other.execute("BEGIN IMMEDIATE", purpose: "test")

        async let written: Void = store.set("k", "after")
        await Task.yield()
        #expect(try await store.get("k") == "before", "the lock is still held elsewhere")
        try other.execute("COMMIT", purpose: "test")
        try await written
        #expect(try await store.get("k") == "after")
    }

    /// The WAL hook that replaces SQLite's automatic checkpoint still checkpoints: after many
    /// small flushed writes, the WAL stays near 1,000 pages instead of growing with every write.
    @Test func smallFlushedWritesStillCheckpointTheLog() async throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        let store = try SQLiteOfflineStore(fileURL: file, durability: .flushed)
        let value = String(repeating: "v", count: 4_000)
        for index in 0..<3_000 { try await store.set("key:\(index % 500)", value) }
        let walBytes = try folder.fileSize("store.sqlite-wal")
        // 3,000 writes of a page or more each would make a WAL of 12 MB without checkpoints.
        #expect(walBytes < 6 * 1_024 * 1_024, "the WAL is \(walBytes) bytes")
        #expect(try await store.quickCheck())
    }

    @Test func aFullDatabaseThrowsFullAndChangesNothing() async throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"), durability: .flushed)
        try await store.set("small", "before")
        // SQLite reports a page limit like a full disk: SQLITE_FULL, after the checkpoint-and-retry.
        let pages = try #require(Int(try await store.writerText("PRAGMA page_count") ?? ""))
        _ = try await store.writerText("PRAGMA max_page_count = \(pages + 2)")
        let big = String(repeating: "x", count: 100_000)

        let error = try await #require(throws: OfflineStoreError.self) {
            try await store.write([.set(key: "small", value: "after"), .set(key: "big", value: big)])
        }
        #expect(error.code == .full)
        #expect(error.nativeCode == 13)  // SQLITE_FULL
        #expect(error.message.contains("free disk space"))
        #expect(try await store.get("small") == "before")
        #expect(try await store.get("big") == nil)

        _ = try await store.writerText("PRAGMA max_page_count = 1073741823")
        try await store.write([.set(key: "small", value: "after"), .set(key: "big", value: big)])
        #expect(try await store.get("big") == big)
    }

    @Test func aStoredValueThatIsNotUTF8IsBytesAndAKeyThatIsNotIsCorrupt() async throws {
        let folder = try TemporaryFolder()
        let store = try SQLiteOfflineStore(fileURL: folder.child("store.sqlite"))
        let connection = try rawConnection(to: folder.child("store.sqlite"))
        defer { connection.close() }
        try connection.execute(
            "INSERT INTO entries (key, value) VALUES (CAST('bad' AS BLOB), X'61FF62'), (X'C0AF', X'')", purpose: "test")

        let error = try await #require(throws: OfflineStoreError.self) { try await store.get("bad") }
        #expect(error.code == .notUTF8)
        #expect(error.key == "bad")
        #expect(try await store.data("bad") == Data([0x61, 0xFF, 0x62]))
        let keyError = try await #require(throws: OfflineStoreError.self) { try await store.keys("") }
        #expect(keyError.code == .corrupt, "a key that is not UTF-8 is damage")
        await #expect(throws: OfflineStoreError.self) { try await store.keys("") }
        await #expect(throws: OfflineStoreError.self) { try await store.entries("", after: nil, limit: 10) }
        #expect(try await store.keys("b") == ["bad"], "scans that miss the bad key still work")
        // The borrowed scans hand bytes, but a key that is not UTF-8 is still damage: handed on, it
        // would come back as another `after` and the next page would skip or repeat entries.
        for scan in ["withEntries", "withKeys"] {
            var seen: [String] = []
            let scanError = try await #require(throws: OfflineStoreError.self, "\(scan)") {
                if scan == "withEntries" {
                    _ = try await store.withEntries("", after: nil, limit: 10) { key, _ in
                        seen.append(String(decoding: key, as: UTF8.self))
                        return true
                    }
                } else {
                    _ = try await store.withKeys("", after: nil, limit: 10) { key in
                        seen.append(String(decoding: key, as: UTF8.self))
                        return true
                    }
                }
            }
            #expect(scanError.code == .corrupt, "\(scan): \(scanError)")
            #expect(seen == ["bad"], "\(scan): the entries before the damaged key are handed over")
        }
        var values: [[UInt8]] = []
        _ = try await store.withEntries("b", after: nil, limit: 10) { _, value in
            values.append(Array(value))
            return true
        }
        #expect(values == [[0x61, 0xFF, 0x62]], "a value that is not UTF-8 is handed as its bytes")
    }

    @Test func aFileThatIsNotADatabaseIsCorrupt() throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        try Data(repeating: 0x41, count: 8_192).write(to: file)
        let error = try #require(throws: OfflineStoreError.self) { try SQLiteOfflineStore(fileURL: file) }
        #expect(error.code == .corrupt)
        #expect(error.nativeCode == 26)  // SQLITE_NOTADB
        #expect(error.message.contains("delete it"))
    }

    @Test func aFileFromANewerSchemaIsRefused() async throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        do { try await SQLiteOfflineStore(fileURL: file).set("k", "v") }
        let connection = try rawConnection(to: file)
        try connection.execute("PRAGMA user_version = \(SQLiteSchema.version + 1)", purpose: "test")
        connection.close()
        let error = try #require(throws: OfflineStoreError.self) { try SQLiteOfflineStore(fileURL: file) }
        #expect(error.code == .unsupported)
    }

    @Test func createsMissingFoldersAndReportsUnusablePaths() async throws {
        let folder = try TemporaryFolder()
        let nested = try SQLiteOfflineStore(fileURL: folder.child("a/b/store.sqlite"))
        try await nested.set("k", "v")
        #expect(try permissions(of: folder.child("a/b")) == 0o700)

        try Data("x".utf8).write(to: folder.child("blocker"))
        let error = try #require(throws: OfflineStoreError.self) {
            try SQLiteOfflineStore(fileURL: folder.child("blocker/store.sqlite"))
        }
        #expect(error.code == .io)
        #expect(error.nativeCode.map { $0 & 0xFF } == 14)  // SQLITE_CANTOPEN
    }

    @Test func quickCheckPassesAfterEveryKindOfOperation() async throws {
        let folder = try TemporaryFolder()
        let file = folder.child("store.sqlite")
        do {
            let store = try SQLiteOfflineStore(fileURL: file)
            try await store.write((0..<400).map { .set(key: "k:\($0)", value: String(repeating: "x", count: $0 * 10)) })
            try await store.write((0..<400).filter { $0 % 2 == 0 }.map { .delete(key: "k:\($0)") })
            try await store.set("big", String(repeating: "b", count: 2_000_000))
            try await store.delete("big")
            try await store.compact()
            #expect(try await store.quickCheck())
        }
        let reopened = try SQLiteOfflineStore(fileURL: file)
        #expect(try await reopened.quickCheck())
        #expect(try await reopened.keys("k:").count == 200)
    }

    @Test(arguments: [
        (13, 0, OfflineStoreError.Code.full),  // SQLITE_FULL
        (10 | 4 << 8, ENOSPC, .full),  // SQLITE_IOERR_FSYNC on a full disk
        (10 | 3 << 8, EIO, .io),  // SQLITE_IOERR_WRITE
        (5, 0, .locked),  // SQLITE_BUSY
        (5 | 2 << 8, 0, .locked),  // SQLITE_BUSY_SNAPSHOT
        (6, 0, .locked),  // SQLITE_LOCKED
        (11, 0, .corrupt),  // SQLITE_CORRUPT
        (26, 0, .corrupt),  // SQLITE_NOTADB
        (8, 0, .permissionDenied),  // SQLITE_READONLY
        (3, 0, .permissionDenied),  // SQLITE_PERM
        (14, EACCES, .permissionDenied),  // SQLITE_CANTOPEN without permission
        (14, ENOENT, .io),  // SQLITE_CANTOPEN, missing folder
        (18, 0, .invalidValue),  // SQLITE_TOOBIG
        (1, 0, .io),  // SQLITE_ERROR
    ])
    func mapsResultCodes(_ nativeCode: Int32, _ systemErrno: Int32, _ expected: OfflineStoreError.Code) {
        let error = OfflineStoreError.sqlite(nativeCode, "message", systemErrno: systemErrno, while: "Testing")
        #expect(error.code == expected)
        #expect(error.engine == "sqlite")
        #expect(error.nativeCode == nativeCode)
        #expect(error.message.hasPrefix("Testing failed: message. "))
    }

    // MARK: - Helpers

    /// Takes `other`'s write lock the first time the traced connection starts its switch to WAL.
    private final class LockOnWALSwitch {
        let other: SQLiteConnection
        var locks = 0
        init(_ other: SQLiteConnection) { self.other = other }
        func statementStarts(_ sql: String) {
            guard locks == 0, sql.contains("journal_mode = WAL") else { return }
            locks += 1
            try? other.execute("BEGIN IMMEDIATE", purpose: "test")
        }
    }

    /// A connection of the test's own to the store's file, as another program would open it.
    private func rawConnection(
        to file: URL, readOnly: Bool = false, busyTimeoutMilliseconds: Int32 = 1_000
    ) throws -> SQLiteConnection {
        try SQLiteConnection(path: file.path, readOnly: readOnly, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
    }

    /// The bytes of the database file and its WAL.
    private func sizeOnDisk(_ file: URL) throws -> Int {
        let wal = URL(fileURLWithPath: file.path + "-wal")
        return try (fileSize(file) ?? 0) + (fileSize(wal) ?? 0)
    }

    private func fileSize(_ file: URL) throws -> Int? {
        guard FileManager.default.fileExists(atPath: file.path) else { return nil }
        return try FileManager.default.attributesOfItem(atPath: file.path)[.size] as? Int
    }

    private func permissions(of url: URL) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: url.path)
        return (attributes[.posixPermissions] as? Int ?? -1) & 0o777
    }

    /// The `detail` column of `EXPLAIN QUERY PLAN sql`.
    private func queryPlan(_ sql: String, on connection: SQLiteConnection) throws -> [String] {
        let statement = try SQLiteStatement("EXPLAIN QUERY PLAN " + sql, purpose: "test", on: connection.handle)
        defer { statement.finalize() }
        var details: [String] = []
        while try statement.step() { details.append(try statement.string(at: 3, what: "plan")) }
        return details
    }
}
