import CLevelDB

/// The LevelDB library this process links.
public enum LevelDBLibrary {
    /// Its version, e.g. `"1.23"`.
    public static var version: String { "\(leveldb_major_version()).\(leveldb_minor_version())" }
}
