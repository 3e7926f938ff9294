import CSQLite
import Sovaria

/// One SQLite connection (`sqlite3 *`): opens it, runs setup SQL, reports errors, and closes it.
///
/// Opened with `SQLITE_OPEN_NOMUTEX` (one thread uses it at a time, so SQLite's own mutex would
/// only cost time) and `SQLITE_OPEN_EXRESCODE` (every result is an extended code), with a busy
/// timeout so a short lock held by another process is waited for instead of failing at once.
final class SQLiteConnection {
    /// The database file.
    let path: String
    /// The C handle; valid until ``close()``.
    let handle: OpaquePointer
    private var isOpen = true
    /// How long a statement waits for another connection's lock before `SQLITE_BUSY`.
    let busyTimeoutMilliseconds: Int32

    /// Opens `path`, read-only or read-write (created when missing).
    init(path: String, readOnly: Bool, busyTimeoutMilliseconds: Int32) throws(OfflineStoreError) {
        self.path = path
        self.busyTimeoutMilliseconds = busyTimeoutMilliseconds
        let access = readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE
        var handle: OpaquePointer?
        let code = sqlite3_open_v2(path, &handle, access | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE, nil)
        guard code == SQLITE_OK, let handle else {
            let error: OfflineStoreError =
                if let handle {
                    Self.error(code, on: handle, while: "Opening the SQLite database \(path)")
                } else {
                    .sqlite(code, Self.describe(code), while: "Opening the SQLite database \(path)")
                }
            sqlite3_close(handle)
            throw error
        }
        self.handle = handle
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
    }

    deinit { close() }

    /// Runs `body` with no busy wait: a lock held elsewhere fails at once with `SQLITE_BUSY`
    /// (`.locked`) instead of waiting up to the busy timeout.
    func withoutBusyWait<Result>(_ body: () throws(OfflineStoreError) -> Result) throws(OfflineStoreError) -> Result {
        sqlite3_busy_timeout(handle, 0)
        defer { sqlite3_busy_timeout(handle, busyTimeoutMilliseconds) }
        return try body()
    }

    /// Runs `sql` (one or more statements, no parameters), discarding any rows.
    func execute(_ sql: String, purpose: String) throws(OfflineStoreError) {
        let code = sqlite3_exec(handle, sql, nil, nil, nil)
        guard code == SQLITE_OK else { throw Self.error(code, on: handle, while: purpose) }
    }

    /// The first column of the first row of `sql` as text (for `PRAGMA`s), or `nil` without a row.
    func text(_ sql: String, purpose: String) throws(OfflineStoreError) -> String? {
        let statement = try SQLiteStatement(sql, purpose: purpose, on: handle)
        defer { statement.finalize() }
        guard try statement.step() else { return nil }
        return try statement.string(at: 0, what: "PRAGMA result")
    }

    /// The first column of the first row of `sql` as an integer, or `nil` without a row.
    func integer(_ sql: String, purpose: String) throws(OfflineStoreError) -> Int? {
        let statement = try SQLiteStatement(sql, purpose: purpose, on: handle)
        defer { statement.finalize() }
        guard try statement.step() else { return nil }
        return statement.integer(at: 0)
    }

    /// Every row's first column of `sql` as text.
    func texts(_ sql: String, purpose: String) throws(OfflineStoreError) -> [String] {
        let statement = try SQLiteStatement(sql, purpose: purpose, on: handle)
        defer { statement.finalize() }
        var rows: [String] = []
        while try statement.step() { rows.append(try statement.string(at: 0, what: "result")) }
        return rows
    }

    /// Copies every WAL frame into the database file and truncates the WAL to zero bytes.
    ///
    /// Waits (busy timeout) for readers of older snapshots; throws
    /// ``OfflineStoreError/Code/locked`` when they outlast it.
    func checkpointAndTruncateLog() throws(OfflineStoreError) {
        let code = sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_TRUNCATE, nil, nil)
        guard code == SQLITE_OK else { throw Self.error(code, on: handle, while: "Checkpointing the write-ahead log") }
    }

    /// Whether a transaction is open (SQLite rolls some back by itself after an error).
    var isInTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Closes the connection; every statement prepared on it must be finalized first.
    func close() {
        guard isOpen else { return }
        isOpen = false
        if sqlite3_close(handle) != SQLITE_OK {
            // A statement was left unfinalized: let SQLite close once it is, rather than leak.
            sqlite3_close_v2(handle)
        }
    }

    /// The error for result `code` on `database`, with its message and errno read now.
    static func error(
        _ code: Int32, on database: OpaquePointer, while action: String, key: String? = nil
    ) -> OfflineStoreError {
        let message = sqlite3_errmsg(database).map { String(cString: $0) } ?? describe(code)
        return .sqlite(
            code, message, systemErrno: sqlite3_system_errno(database), while: action, key: key,
            path: filename(of: database))
    }

    /// The file of `database`'s main schema (`nil` for a database in memory).
    static func filename(of database: OpaquePointer) -> String? {
        guard let name = sqlite3_db_filename(database, "main"), name.pointee != 0 else { return nil }
        return String(cString: name)
    }

    /// SQLite's English description of a result code.
    static func describe(_ code: Int32) -> String {
        sqlite3_errstr(code).map { String(cString: $0) } ?? "SQLite error \(code)"
    }
}
