import CSQLite
import Foundation
import Sovaria
import SovariaPlumbing

/// One prepared statement, reused for the life of its connection.
///
/// Keys and values are bound and read as BLOBs with explicit lengths, never through C strings, so
/// `"\0"` survives and BLOBs compare with memcmp (byte order). Every use ends with ``reset()``:
/// an unreset SELECT keeps a read transaction open, which blocks WAL checkpoints.
///
/// Owned by an ``SQLiteReader`` or ``SQLiteWriter``, which finalizes it before closing the
/// connection; used by one thread at a time.
final class SQLiteStatement {
    /// Tells SQLite to copy a bound buffer (the C macro `SQLITE_TRANSIENT` is not imported).
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

    private var handle: OpaquePointer?
    private let database: OpaquePointer
    /// What the statement does, for error messages: `"Reading a value"`.
    let purpose: String

    /// Prepares `sql` on `database` with `SQLITE_PREPARE_PERSISTENT`: it is kept and reused.
    init(_ sql: String, purpose: String, on database: OpaquePointer) throws(OfflineStoreError) {
        self.database = database
        self.purpose = purpose
        var handle: OpaquePointer?
        let code = sqlite3_prepare_v3(database, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &handle, nil)
        guard code == SQLITE_OK, let handle else {
            sqlite3_finalize(handle)
            throw SQLiteConnection.error(code, on: database, while: "Preparing for \(purpose.lowercased())")
        }
        self.handle = handle
    }

    deinit { finalize() }

    /// Binds the UTF-8 bytes of `text` as a BLOB to parameter `index` (1-based).
    func bind(_ text: String, at index: Int32, key: String? = nil) throws(OfflineStoreError) {
        var text = text
        let code = text.withUTF8 { bytes in bindBlob(UnsafeRawBufferPointer(bytes), at: index) }
        try check(code, key: key)
    }

    /// Binds `data` as a BLOB to parameter `index` (1-based).
    func bind(_ data: Data, at index: Int32, key: String? = nil) throws(OfflineStoreError) {
        let code = data.withUnsafeBytes { bytes in bindBlob(bytes, at: index) }
        try check(code, key: key)
    }

    /// Binds `bytes` as a BLOB to parameter `index` (1-based).
    func bind(_ bytes: [UInt8], at index: Int32) throws(OfflineStoreError) {
        let code = bytes.withUnsafeBytes { bindBlob($0, at: index) }
        try check(code)
    }

    /// Binds an integer to parameter `index` (1-based).
    func bind(_ value: Int, at index: Int32) throws(OfflineStoreError) {
        try check(sqlite3_bind_int64(handle, index, sqlite3_int64(value)))
    }

    private func bindBlob(_ bytes: UnsafeRawBufferPointer, at index: Int32) -> Int32 {
        // A NULL pointer would bind SQL NULL, not an empty BLOB.
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return sqlite3_bind_zeroblob(handle, index, 0) }
        return sqlite3_bind_blob64(handle, index, base, sqlite3_uint64(bytes.count), Self.transient)
    }

    /// Steps once: `true` when a row is ready to read, `false` when the statement is done.
    func step(key: String? = nil) throws(OfflineStoreError) -> Bool {
        let code = sqlite3_step(handle)
        switch code {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default: throw SQLiteConnection.error(code, on: database, while: purpose, key: key)
        }
    }

    /// Steps until done, then resets: for statements that return no rows.
    func run(key: String? = nil) throws(OfflineStoreError) {
        defer { reset() }
        while try step(key: key) {}
    }

    /// Column `column` of the current row as a string; a BLOB that is not UTF-8 throws
    /// ``OfflineStoreError/Code/corrupt``.
    func string(at column: Int32, what: String, key: String? = nil) throws(OfflineStoreError) -> String {
        // Pointer first, then length (SQLite's documented order); an empty BLOB has a NULL pointer.
        guard let base = sqlite3_column_blob(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        let bytes = UnsafeBufferPointer(start: base.assumingMemoryBound(to: UInt8.self), count: count)
        guard let text = String(validatingUTF8Bytes: bytes) else {
            let database = sqlite3_db_handle(handle).flatMap(SQLiteConnection.filename(of:)) ?? "the database file"
            throw .sqliteNotUTF8(what, key: key, path: database)
        }
        return text
    }

    /// Column `column` of the current row as the bytes SQLite holds, valid until the next step
    /// or reset.
    func bytes(at column: Int32) -> UnsafeRawBufferPointer {
        guard let base = sqlite3_column_blob(handle, column) else {
            return UnsafeRawBufferPointer(start: nil, count: 0)
        }
        return UnsafeRawBufferPointer(start: base, count: Int(sqlite3_column_bytes(handle, column)))
    }

    /// Column `column` of the current row as an integer.
    func integer(at column: Int32) -> Int {
        Int(sqlite3_column_int64(handle, column))
    }

    /// Ends the current use: closes the read transaction a SELECT holds and frees bound copies.
    func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Frees the statement; its connection can close only after every statement is finalized.
    func finalize() {
        sqlite3_finalize(handle)
        handle = nil
    }

    private func check(_ code: Int32, key: String? = nil) throws(OfflineStoreError) {
        guard code == SQLITE_OK else { throw SQLiteConnection.error(code, on: database, while: purpose, key: key) }
    }
}
