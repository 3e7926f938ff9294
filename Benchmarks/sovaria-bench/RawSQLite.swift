/// Registered in BenchEngines as the raw baseline of "sqlite".
import CBenchSQLite
import Foundation
import Sovaria

/// The SQLite adapter's work done straight through the C API: what `SQLiteOfflineStore` costs
/// over a hand-written caller of the same file.
///
/// Same file layout and settings as `SQLiteSchema` and `SQLiteWriter`: one rowid table with a
/// BLOB primary key, incremental auto-vacuum, WAL, `synchronous` FULL (`.synced`) or NORMAL
/// (`.flushed`), a 64 MiB `journal_size_limit` and a 5 s busy timeout. Like the adapter it writes
/// on one read-write connection and reads on a separate read-only one, both opened with
/// `SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE`, with the adapter's statements prepared once
/// (`SQLITE_PREPARE_PERSISTENT`). Every write call is one `BEGIN IMMEDIATE … COMMIT`, a single
/// set too, as in the adapter.
///
/// What it leaves out is the adapter's cost: no Strings (keys and values are the workload's
/// bytes, bound without a copy), no key validation, no reader pool, no hop to the write queue.
/// Results are still copied out into `[UInt8]`, as the adapter copies them into Strings.
final class RawSQLiteSubject: BenchSubject {
    private let workload: Workload
    private let writer: RawSQLiteConnection
    private let reader: RawSQLiteConnection
    private let begin: OpaquePointer
    private let commit: OpaquePointer
    private let rollback: OpaquePointer
    private let upsert: OpaquePointer
    private let delete: OpaquePointer
    private let selectValue: OpaquePointer
    private let selectKeys: OpaquePointer
    private let selectEntries: OpaquePointer
    /// The first key past every key of the workload: the upper bound of a page.
    private let pageUpperBound: [UInt8]
    private var state = RawReadState()

    init(folder: URL, durability: Durability, workload: Workload) throws {
        self.workload = workload
        let path = folder.appendingPathComponent("store.sqlite").path
        let writer = try RawSQLiteConnection(path: path, access: SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        // The order of `SQLiteSchema.prepare`: auto-vacuum before the first table, then WAL.
        try writer.execute("PRAGMA auto_vacuum = INCREMENTAL")
        let mode = try writer.text("PRAGMA journal_mode = WAL")
        guard mode?.lowercased() == "wal" else {
            throw BenchError.failed("raw sqlite: journal mode is \(mode ?? "unknown"), not wal")
        }
        try writer.execute(
            "BEGIN IMMEDIATE; \(SQLiteLayout.createEntries); PRAGMA user_version = \(SQLiteLayout.version); COMMIT")
        try writer.execute("PRAGMA synchronous = \(durability == .synced ? "FULL" : "NORMAL")")
        try writer.execute("PRAGMA journal_size_limit = \(64 * 1_024 * 1_024)")
        begin = try writer.prepare("BEGIN IMMEDIATE")
        commit = try writer.prepare("COMMIT")
        rollback = try writer.prepare("ROLLBACK")
        upsert = try writer.prepare(SQLiteLayout.upsert)
        delete = try writer.prepare(SQLiteLayout.delete)
        self.writer = writer

        let reader = try RawSQLiteConnection(path: path, access: SQLITE_OPEN_READONLY)
        selectValue = try reader.prepare(SQLiteLayout.selectValue)
        selectKeys = try reader.prepare(SQLiteLayout.selectKeys)
        selectEntries = try reader.prepare(SQLiteLayout.selectEntries)
        self.reader = reader

        guard let upper = StoreKey.successor(ofPrefix: state.pagePrefix) else {
            throw BenchError.failed("raw sqlite: the workload's prefix has no upper bound")
        }
        pageUpperBound = upper
    }

    // No deinit here: each connection finalizes its statements and closes itself when released,
    // also when this init throws halfway.

    func set(_ index: Int, variant: Int) async throws {
        try transaction { try upsert(index, variant) }
    }

    func setBatch(_ indexes: Range<Int>, variant: Int) async throws {
        try transaction { for index in indexes { try upsert(index, variant) } }
    }

    func get(_ index: Int) async throws -> Bool {
        try get(workload.keyBytes[index])
    }

    func getMiss(_ index: Int) async throws -> Bool {
        try get(workload.missKeyBytes[index])
    }

    func scan(prefix index: Int) async throws -> Int {
        let lower = workload.prefixBytes[index]
        // The range `StoreKeyRange` reads: prefix <= key < successor(prefix), one index seek.
        let upper = StoreKey.successor(ofPrefix: lower) ?? [UInt8](repeating: 0xFF, count: StoreKey.maxUTF8Count + 1)
        let statement = selectKeys
        defer { finish(statement) }
        var keys: [[UInt8]] = []
        let code = lower.withUnsafeBytes { lower in
            upper.withUnsafeBytes { upper in
                var code = bind(statement, 1, lower)
                if code == SQLITE_OK { code = bind(statement, 2, upper) }
                guard code == SQLITE_OK else { return code }
                // The buffers are bound without a copy, so every step runs inside their scope.
                while true {
                    code = sqlite3_step(statement)
                    guard code == SQLITE_ROW else { return code }
                    keys.append(column(statement, 0))
                }
            }
        }
        guard code == SQLITE_DONE else { throw reader.failure(code, "listing keys") }
        state.lastKeys = keys
        return keys.count
    }

    func nextPage(limit: Int, restart: Bool) async throws -> Int {
        if restart { state.cursor = nil }
        // `key > after` is `key >= after + [0]`, as in `StoreKeyRange`.
        var lower = state.pagePrefix
        if let cursor = state.cursor {
            let justAfter = cursor + [0]
            if lower.lexicographicallyPrecedes(justAfter) { lower = justAfter }
        }
        let statement = selectEntries
        defer { finish(statement) }
        var page: [(key: [UInt8], value: [UInt8])] = []
        page.reserveCapacity(limit)
        let code = lower.withUnsafeBytes { lower in
            pageUpperBound.withUnsafeBytes { upper in
                var code = bind(statement, 1, lower)
                if code == SQLITE_OK { code = bind(statement, 2, upper) }
                if code == SQLITE_OK { code = sqlite3_bind_int64(statement, 3, sqlite3_int64(limit)) }
                guard code == SQLITE_OK else { return code }
                while true {
                    code = sqlite3_step(statement)
                    guard code == SQLITE_ROW else { return code }
                    page.append((key: column(statement, 0), value: column(statement, 1)))
                }
            }
        }
        guard code == SQLITE_DONE else { throw reader.failure(code, "reading entries") }
        state.cursor = page.last?.key
        state.lastPage = page
        return page.count
    }

    func deleteBatch(_ indexes: Range<Int>) async throws {
        try transaction {
            for index in indexes {
                let statement = delete
                let code = workload.keyBytes[index].withUnsafeBytes { key in
                    let code = bind(statement, 1, key)
                    return code == SQLITE_OK ? sqlite3_step(statement) : code
                }
                finish(statement)
                guard code == SQLITE_DONE else { throw writer.failure(code, "deleting a key") }
            }
        }
    }

    // MARK: - Steps

    /// Runs `body` in one `BEGIN IMMEDIATE … COMMIT`, rolling back when it throws, as
    /// `SQLiteWriter.applyInTransaction` does.
    private func transaction(_ body: () throws -> Void) throws {
        try run(begin, "beginning a write")
        do {
            try body()
            try run(commit, "committing a write")
        } catch {
            // After some errors (SQLITE_FULL, SQLITE_IOERR) SQLite has already rolled back.
            if sqlite3_get_autocommit(writer.handle) == 0 {
                sqlite3_step(rollback)
                sqlite3_reset(rollback)
            }
            throw error
        }
    }

    private func upsert(_ index: Int, _ variant: Int) throws {
        let statement = upsert
        let code = workload.keyBytes[index].withUnsafeBytes { key in
            workload.valueBytes[variant].withUnsafeBytes { value in
                var code = bind(statement, 1, key)
                if code == SQLITE_OK { code = bind(statement, 2, value) }
                return code == SQLITE_OK ? sqlite3_step(statement) : code
            }
        }
        finish(statement)
        guard code == SQLITE_DONE else { throw writer.failure(code, "storing a value") }
    }

    private func get(_ key: [UInt8]) throws -> Bool {
        let statement = selectValue
        defer { finish(statement) }
        let code = key.withUnsafeBytes { key in
            let code = bind(statement, 1, key)
            guard code == SQLITE_OK else { return code }
            let step = sqlite3_step(statement)
            // Copied out before the step's row goes (the adapter makes a String of it here).
            if step == SQLITE_ROW { state.lastValue = column(statement, 0) }
            return step
        }
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw reader.failure(code, "reading a value")
        }
    }

    /// Runs a statement that returns no rows.
    private func run(_ statement: OpaquePointer, _ action: String) throws {
        let code = sqlite3_step(statement)
        sqlite3_reset(statement)
        guard code == SQLITE_DONE else { throw writer.failure(code, action) }
    }
}

/// Binds `bytes` as a BLOB without a copy (`SQLITE_STATIC`, a nil destructor): the caller steps
/// while `bytes` is in scope, then ``finish(_:)`` drops the binding.
private func bind(_ statement: OpaquePointer, _ index: Int32, _ bytes: UnsafeRawBufferPointer) -> Int32 {
    // A NULL pointer would bind SQL NULL, not an empty BLOB.
    guard let base = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_zeroblob(statement, index, 0) }
    return sqlite3_bind_blob64(statement, index, base, sqlite3_uint64(bytes.count), nil)
}

/// A copy of BLOB column `index` of the current row.
private func column(_ statement: OpaquePointer, _ index: Int32) -> [UInt8] {
    // Pointer first, then length (SQLite's documented order); an empty BLOB has a NULL pointer.
    guard let base = sqlite3_column_blob(statement, index) else { return [] }
    return [UInt8](UnsafeRawBufferPointer(start: base, count: Int(sqlite3_column_bytes(statement, index))))
}

/// Ends a use of `statement` as `SQLiteStatement.reset()` does: closes a SELECT's read
/// transaction and drops the bindings, which point into buffers whose scope has ended.
private func finish(_ statement: OpaquePointer) {
    sqlite3_reset(statement)
    sqlite3_clear_bindings(statement)
}

/// The adapter's SQL, copied from `SQLiteSchema` (internal to SovariaSQLite), so both sides run the
/// same statements on the same table.
private enum SQLiteLayout {
    static let version = 1
    static let createEntries = "CREATE TABLE IF NOT EXISTS entries (key BLOB NOT NULL PRIMARY KEY, value BLOB NOT NULL)"
    static let selectValue = "SELECT value FROM entries WHERE key = ?1"
    static let selectKeys = "SELECT key FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key"
    static let selectEntries = "SELECT key, value FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3"
    static let upsert = """
        INSERT INTO entries (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value
        """
    static let delete = "DELETE FROM entries WHERE key = ?1"
}

/// One `sqlite3 *` and the statements prepared on it, finalized and closed when it is released.
private final class RawSQLiteConnection {
    let handle: OpaquePointer
    private var statements: [OpaquePointer] = []

    /// Opens `path` as the adapter does: no SQLite mutex (one thread at a time), extended result
    /// codes, a 5 s busy timeout.
    init(path: String, access: Int32) throws {
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(path, &opened, access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard code == SQLITE_OK, let opened else {
            let message = opened.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? Self.describe(code)
            sqlite3_close(opened)
            throw BenchError.failed("raw sqlite: opening \(path): \(message) (\(code))")
        }
        handle = opened
        sqlite3_busy_timeout(handle, 5_000)
    }

    deinit {
        for statement in statements { sqlite3_finalize(statement) }
        sqlite3_close(handle)
    }

    func execute(_ sql: String) throws {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw failure(code, sql) }
    }

    /// The first column of the first row of `sql` as text (for `PRAGMA`s).
    func text(_ sql: String) throws -> String? {
        let statement = try prepare(sql)
        defer {
            statements.removeLast()
            sqlite3_finalize(statement)
        }
        let code = sqlite3_step(statement)
        guard code == SQLITE_ROW else {
            if code == SQLITE_DONE { return nil }
            throw failure(code, sql)
        }
        return sqlite3_column_text(statement, 0).map { String(cString: $0) }
    }

    /// Prepares `sql` to be kept and reused; finalized when the connection goes.
    func prepare(_ sql: String) throws -> OpaquePointer {
        var prepared: OpaquePointer?
        let code = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &prepared, nil)
        guard code == SQLITE_OK, let prepared else {
            sqlite3_finalize(prepared)
            throw failure(code, "preparing \(sql)")
        }
        statements.append(prepared)
        return prepared
    }

    /// The error for `code`, with SQLite's message for this connection.
    func failure(_ code: Int32, _ action: String) -> BenchError {
        let message = sqlite3_errmsg(handle).map { String(cString: $0) } ?? Self.describe(code)
        return BenchError.failed("raw sqlite: \(action): \(message) (\(code))")
    }

    static func describe(_ code: Int32) -> String {
        sqlite3_errstr(code).map { String(cString: $0) } ?? "SQLite error \(code)"
    }
}
