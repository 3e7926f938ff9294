import Foundation
import Sovaria

/// The layout of a Sovaria SQLite file, and its creation and checks at open.
///
/// One rowid table, `entries(key BLOB PRIMARY KEY, value BLOB)`: not `WITHOUT ROWID`, which was
/// ~9x slower to fill and ~3.6x slower to read with 1 KiB values (see ENGINE-NOTES). Its version
/// is `PRAGMA user_version`.
enum SQLiteSchema {
    /// The layout this code writes; a file with a higher version was made by a newer Sovaria.
    static let version = 1

    static let createEntries = """
        CREATE TABLE IF NOT EXISTS entries (key BLOB NOT NULL PRIMARY KEY, value BLOB NOT NULL)
        """

    static let selectValue = "SELECT value FROM entries WHERE key = ?1"
    static let selectKeys = "SELECT key FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key"
    static let selectEntries = "SELECT key, value FROM entries WHERE key >= ?1 AND key < ?2 ORDER BY key LIMIT ?3"
    static let upsert = """
        INSERT INTO entries (key, value) VALUES (?1, ?2) ON CONFLICT (key) DO UPDATE SET value = excluded.value
        """
    static let delete = "DELETE FROM entries WHERE key = ?1"

    /// Turns a new file into a store, or checks an existing one: WAL mode, incremental
    /// auto-vacuum, the table and the version.
    ///
    /// An existing store is only read here (its version and journal mode): open writes nothing, so
    /// a store on a full disk still opens, reads, and deletes entries to free space. Runs on the
    /// writer connection before any other statement.
    ///
    /// Two processes creating one file at once: the switch to WAL fails with `SQLITE_BUSY` at once,
    /// without the busy handler (SQLite never waits in `PRAGMA journal_mode`), while the other holds
    /// the lock it needs. The preparation starts over (the other may have finished it) every
    /// millisecond (`pause`) until the connection's busy timeout has passed, as the busy handler would.
    static func prepare(
        _ connection: SQLiteConnection, pause: () -> Void = { Thread.sleep(forTimeInterval: 0.001) }
    ) throws(OfflineStoreError) {
        let deadline = ContinuousClock.now + .milliseconds(connection.busyTimeoutMilliseconds)
        while true {
            do {
                return try prepareOnce(connection)
            } catch let error where error.code == .locked && ContinuousClock.now < deadline {
                pause()
            }
        }
    }

    private static func prepareOnce(_ connection: SQLiteConnection) throws(OfflineStoreError) {
        let found = try connection.integer("PRAGMA user_version", purpose: "Reading the schema version") ?? 0
        if found != 0 {
            try checkVersion(found, of: connection)
            let mode = try connection.text("PRAGMA journal_mode", purpose: "Reading the journal mode")
            if mode?.lowercased() == "wal" { return }
        }
        // Only takes effect before the first table exists; a no-op on an existing store.
        try connection.execute("PRAGMA auto_vacuum = INCREMENTAL", purpose: "Setting auto-vacuum")
        let mode = try connection.text("PRAGMA journal_mode = WAL", purpose: "Switching to write-ahead logging")
        guard mode?.lowercased() == "wal" else {
            throw OfflineStoreError(
                .unsupported,
                "SQLite could not use write-ahead logging for \(connection.path) (journal mode is "
                    + "\(mode ?? "unknown")): keep the database on a local file system that supports shared memory.",
                engine: .sqlite
            )
        }
        try connection.execute("BEGIN IMMEDIATE", purpose: "Starting the schema check")
        do {
            try createOrCheck(connection)
            try connection.execute("COMMIT", purpose: "Saving the schema")
        } catch {
            if connection.isInTransaction { try? connection.execute("ROLLBACK", purpose: "Undoing the schema check") }
            throw error
        }
    }

    private static func createOrCheck(_ connection: SQLiteConnection) throws(OfflineStoreError) {
        let found = try connection.integer("PRAGMA user_version", purpose: "Reading the schema version") ?? 0
        if found == 0 {
            try connection.execute(createEntries, purpose: "Creating the entries table")
            try connection.execute("PRAGMA user_version = \(version)", purpose: "Recording the schema version")
        } else {
            try checkVersion(found, of: connection)
        }
    }

    private static func checkVersion(_ found: Int, of connection: SQLiteConnection) throws(OfflineStoreError) {
        guard found != version else { return }
        throw OfflineStoreError(
            .unsupported,
            "\(connection.path) has schema version \(found), newer than this Sovaria's \(version): "
                + "update the app, or open a new file.",
            engine: .sqlite
        )
    }
}
