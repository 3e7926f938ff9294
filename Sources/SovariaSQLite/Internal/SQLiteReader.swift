import Foundation
import Sovaria

/// A read-only connection with its prepared reads.
///
/// In WAL mode a reader never waits for the writer and sees only committed transactions, so a
/// batch is seen whole or not at all. Each call resets its statement before returning, so no
/// read transaction outlives the call (it would hold back checkpoints).
// @unchecked: one thread at a time, which SQLiteReaderPool enforces by handing each reader out
// under its Mutex to one caller until it is checked back in.
final class SQLiteReader: @unchecked Sendable {
    private let connection: SQLiteConnection
    private let selectValue: SQLiteStatement
    private let selectKeys: SQLiteStatement
    private let selectEntries: SQLiteStatement

    /// Opens a reader on `path`, which the writer has already set up.
    init(path: String, busyTimeoutMilliseconds: Int32) throws(OfflineStoreError) {
        connection = try SQLiteConnection(path: path, readOnly: true, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        let database = connection.handle
        selectValue = try SQLiteStatement(SQLiteSchema.selectValue, purpose: "Reading a value", on: database)
        selectKeys = try SQLiteStatement(SQLiteSchema.selectKeys, purpose: "Listing keys", on: database)
        selectEntries = try SQLiteStatement(SQLiteSchema.selectEntries, purpose: "Reading entries", on: database)
    }

    deinit { close() }

    /// The value stored under `key`, or `nil`.
    func value(for key: String) throws(OfflineStoreError) -> String? {
        defer { selectValue.reset() }
        try selectValue.bind(key, at: 1, key: key)
        guard try selectValue.step(key: key) else { return nil }
        return try StoreValue.string(selectValue.bytes(at: 0), key: key, engine: .sqlite)
    }

    /// Calls `visit` with the bytes of the value stored under `key`, as SQLite holds them in the
    /// row; returns whether there was one.
    func visitValue(for key: String, _ visit: (UnsafeRawBufferPointer) -> Void) throws(OfflineStoreError) -> Bool {
        defer { selectValue.reset() }
        try selectValue.bind(key, at: 1, key: key)
        guard try selectValue.step(key: key) else { return false }
        visit(selectValue.bytes(at: 0))
        return true
    }

    /// The keys in `range`, in byte order.
    func keys(in range: StoreKeyRange) throws(OfflineStoreError) -> [String] {
        defer { selectKeys.reset() }
        try selectKeys.bind(range.lowerBound, at: 1)
        try selectKeys.bind(range.upperBound, at: 2)
        var keys: [String] = []
        while try selectKeys.step() { keys.append(try selectKeys.string(at: 0, what: "key")) }
        return keys
    }

    /// Up to `limit` entries in `range`, in byte order of their keys.
    func entries(in range: StoreKeyRange, limit: Int) throws(OfflineStoreError) -> [StoreEntry] {
        try entries(in: range, limit: limit) { (key, value) throws(OfflineStoreError) in
            StoreEntry(key: key, value: try StoreValue.string(value, key: key, engine: .sqlite))
        }
    }

    /// Up to `limit` entries in `range` with their values as bytes, in byte order of their keys.
    func dataEntries(in range: StoreKeyRange, limit: Int) throws(OfflineStoreError) -> [StoreDataEntry] {
        try entries(in: range, limit: limit) { key, value in StoreDataEntry(key: key, data: Data(value)) }
    }

    /// Calls `visit` with the bytes of the keys in `range`, as SQLite holds them in the row, in
    /// byte order, until it returns `false`.
    func visitKeys(in range: StoreKeyRange, _ visit: (UnsafeRawBufferPointer) -> Bool) throws(OfflineStoreError) {
        defer { selectKeys.reset() }
        try selectKeys.bind(range.lowerBound, at: 1)
        try selectKeys.bind(range.upperBound, at: 2)
        while try selectKeys.step() {
            guard visit(selectKeys.bytes(at: 0)) else { return }
        }
    }

    /// Calls `visit` with the key and value bytes of up to `limit` entries in `range`, as SQLite
    /// holds them in the row, in byte order of their keys, until it returns `false`.
    func visitEntries(
        in range: StoreKeyRange, limit: Int, _ visit: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Bool
    ) throws(OfflineStoreError) {
        defer { selectEntries.reset() }
        try selectEntries.bind(range.lowerBound, at: 1)
        try selectEntries.bind(range.upperBound, at: 2)
        try selectEntries.bind(limit, at: 3)
        while try selectEntries.step() {
            guard visit(selectEntries.bytes(at: 0), selectEntries.bytes(at: 1)) else { return }
        }
    }

    private func entries<Entry>(
        in range: StoreKeyRange, limit: Int,
        _ entry: (String, UnsafeRawBufferPointer) throws(OfflineStoreError) -> Entry
    ) throws(OfflineStoreError) -> [Entry] {
        defer { selectEntries.reset() }
        try selectEntries.bind(range.lowerBound, at: 1)
        try selectEntries.bind(range.upperBound, at: 2)
        try selectEntries.bind(limit, at: 3)
        var entries: [Entry] = []
        while try selectEntries.step() {
            let key = try selectEntries.string(at: 0, what: "key")
            entries.append(try entry(key, selectEntries.bytes(at: 1)))
        }
        return entries
    }

    /// The problems `PRAGMA quick_check` finds; `["ok"]` for a sound file.
    func quickCheck() throws(OfflineStoreError) -> [String] {
        try connection.texts("PRAGMA quick_check", purpose: "Checking the database")
    }

    /// The problems `PRAGMA integrity_check` (or, `quick`, `PRAGMA quick_check`) lists; empty for a
    /// sound file.
    func integrityProblems(quick: Bool) throws(OfflineStoreError) -> [String] {
        let rows = try connection.texts(
            quick ? "PRAGMA quick_check" : "PRAGMA integrity_check", purpose: "Checking the database")
        return rows == ["ok"] ? [] : rows
    }

    /// The first column of `sql`'s first row as text; for tests and diagnostics.
    func text(_ sql: String) throws(OfflineStoreError) -> String? {
        try connection.text(sql, purpose: "Reading \(sql)")
    }

    /// Finalizes the statements, then closes the connection.
    func close() {
        for statement in [selectValue, selectKeys, selectEntries] { statement.finalize() }
        connection.close()
    }
}
