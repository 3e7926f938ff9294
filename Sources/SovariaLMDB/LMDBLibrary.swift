import CLMDB

/// The LMDB library this process links.
public enum LMDBLibrary {
    /// Its version, e.g. `"0.9.24"`.
    public static var version: String {
        var major: Int32 = 0
        var minor: Int32 = 0
        var patch: Int32 = 0
        _ = mdb_version(&major, &minor, &patch)
        return "\(major).\(minor).\(patch)"
    }
}
