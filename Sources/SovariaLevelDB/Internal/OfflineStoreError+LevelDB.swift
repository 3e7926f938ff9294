import CLevelDB
import Sovaria

/// Runs the LevelDB call `body` with a fresh `errptr` and returns its result, or throws the error
/// LevelDB set.
///
/// The pointer starts `NULL` on every call (LevelDB requires NULL or a `malloc`'d string), and a
/// string LevelDB stored is freed with `leveldb_free` before the error is thrown.
func checkLevelDB<Result>(
    _ operation: @autoclosure () -> String,
    path: String,
    key: @autoclosure () -> String? = nil,
    _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> Result
) throws(OfflineStoreError) -> Result {
    var errorPointer: UnsafeMutablePointer<CChar>?
    let result = body(&errorPointer)
    guard let errorPointer else { return result }
    let message = String(cString: errorPointer)
    leveldb_free(errorPointer)
    throw OfflineStoreError.leveldb(message, operation: operation(), path: path, key: key())
}

/// LevelDB's error strings as ``OfflineStoreError``s that say what to do.
///
/// LevelDB's C API reports errors as a `malloc`'d status string in `errptr` (`"IO error: …"`,
/// `"Corruption: …"`), with no numeric code; the kind is read from the string's words.
extension OfflineStoreError {
    /// The error for LevelDB status `message`, raised while doing `operation` on the store at `path`.
    static func leveldb(_ message: String, operation: String, path: String, key: String? = nil) -> OfflineStoreError {
        let (code, advice) = classifyLevelDB(message, path: path)
        if code == .locked {
            return OfflineStoreError(code, advice + " LevelDB said: \(message)", engine: .leveldb, key: key)
        }
        return OfflineStoreError(code, "\(operation) failed: \(message); \(advice)", engine: .leveldb, key: key)
    }

    /// A stored value that is not valid UTF-8: it was not written through Sovaria, or it is damaged.
    static func leveldbNotUTF8(path: String, key: String) -> OfflineStoreError {
        OfflineStoreError(
            .corrupt,
            "The value of this key in the LevelDB store at \(path) is not valid UTF-8: delete or rewrite the key, "
                + "or restore the folder from a backup.",
            engine: .leveldb, key: key)
    }

    /// The code and the advice for a status string. LevelDB words them as `Status::ToString` does,
    /// with `strerror` text for POSIX failures.
    private static func classifyLevelDB(_ message: String, path: String) -> (OfflineStoreError.Code, String) {
        if message.utf8.starts(with: "IO error: lock ".utf8) {
            if message.contains("already held by process") {
                return (
                    .locked,
                    "This process already has the LevelDB store at \(path) open outside Sovaria: open each folder "
                        + "through LevelDBOfflineStore only, which shares one handle per folder."
                )
            }
            return (
                .locked,
                "Another process holds the LevelDB store at \(path) (its LOCK file is locked): quit the other "
                    + "process or app that uses this folder, or give this one a folder of its own."
            )
        }
        // A table shorter than the MANIFEST says: LevelDB reads it through a map and reports a read
        // past its end as EINVAL.
        let damagedTable = [".ldb: Invalid argument", ".sst: Invalid argument"].contains(where: message.contains)
        if message.utf8.starts(with: "Corruption:".utf8) || damagedTable {
            return (
                .corrupt,
                "the store's files in \(path) are damaged: restore the folder from a backup, rebuild it with "
                    + "LevelDBOfflineStore.repair(directory:) (entries in the damaged parts are lost), or delete it "
                    + "to start empty"
            )
        }
        if ["No space left on device", "Disk quota exceeded", "File too large"].contains(where: message.contains) {
            return (.full, "free disk space, then retry")
        }
        if ["Permission denied", "Operation not permitted", "Read-only file system"].contains(where: message.contains) {
            return (.permissionDenied, "make the folder and its files writable by this process")
        }
        if message.utf8.starts(with: "Invalid argument:".utf8) {
            return (.unsupported, "the folder holds data this store cannot open: give the store another folder")
        }
        return (.io, "check that the folder exists and the disk works, then retry")
    }
}
