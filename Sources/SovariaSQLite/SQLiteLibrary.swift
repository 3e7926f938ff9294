import CSQLite

/// The SQLite library this process links.
public enum SQLiteLibrary {
    /// Its version, e.g. `"3.40.1"`.
    public static var version: String { String(cString: sqlite3_libversion()) }
}
