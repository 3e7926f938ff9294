import CLMDB
import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Throws the error for LMDB return code `rc` unless it is `MDB_SUCCESS`.
func checkLMDB(_ rc: Int32, _ action: @autoclosure () -> String) throws(OfflineStoreError) {
    if rc != MDB_SUCCESS { throw OfflineStoreError.lmdb(rc, action()) }
}

/// LMDB's return codes as ``OfflineStoreError``s that say what happened and what to do.
extension OfflineStoreError {
    /// The error for a failed LMDB call: `action` says what the store was doing.
    static func lmdb(_ rc: Int32, _ action: String, key: String? = nil) -> OfflineStoreError {
        let (code, advice) = classifyLMDB(rc)
        return OfflineStoreError(
            code, "\(action): \(lmdbDescription(rc)). \(advice)", engine: .lmdb, nativeCode: rc, key: key)
    }

    /// The error thrown when `MDB_MAP_FULL` could not be answered by a larger map.
    static func lmdbMapCouldNotGrow(_ reason: String, nativeCode: Int32 = MDB_MAP_FULL) -> OfflineStoreError {
        OfflineStoreError(
            .full,
            "LMDB map is full and could not grow: \(reason). Delete entries and call compact(), or open the "
                + "store with a larger maxMapSizeBytes.",
            engine: .lmdb, nativeCode: nativeCode)
    }

    /// The error for bytes LMDB returned that are not UTF-8: the file was not written by this store, or it
    /// is damaged.
    static func lmdbNotUTF8(_ what: String, key: String? = nil) -> OfflineStoreError {
        OfflineStoreError(
            .corrupt,
            "The LMDB environment holds a \(what) that is not valid UTF-8: it was not written by "
                + "LMDBOfflineStore, or the file is damaged. Delete the entry, or restore the folder from a backup.",
            engine: .lmdb, key: key)
    }

    /// LMDB's own text for `rc` (its codes and `strerror` for errno values).
    static func lmdbDescription(_ rc: Int32) -> String {
        guard let text = mdb_strerror(rc) else { return "error \(rc)" }
        return String(cString: text)
    }

    private static func classifyLMDB(_ rc: Int32) -> (OfflineStoreError.Code, String) {
        switch rc {
        case MDB_MAP_FULL:
            return (.full, "Delete entries and call compact(), or open the store with a larger maxMapSizeBytes.")
        case MDB_READERS_FULL:
            return (
                .locked,
                "Every reader slot is taken by threads or processes reading at once; retry, or open the "
                    + "environment with a larger maxReaders (slots of crashed processes are cleared at open)."
            )
        case MDB_TXN_FULL:
            return (.full, "The batch touches too many pages for one transaction; split it into smaller batches.")
        case MDB_CORRUPTED, MDB_PAGE_NOTFOUND, MDB_INVALID:
            return (
                .corrupt,
                "The LMDB file is damaged or is not an LMDB file; restore the folder from a backup, or delete "
                    + "it to start empty."
            )
        case MDB_VERSION_MISMATCH, MDB_INCOMPATIBLE:
            return (.io, "The folder was written by an incompatible LMDB build; open it with a matching library.")
        case MDB_PANIC:
            return (.io, "The LMDB environment failed and must be closed; release every store on it and open again.")
        case ENOSPC:
            return (.full, "The disk is full; free space on the device, then retry.")
        case EACCES, EPERM, EROFS:
            return (
                .permissionDenied,
                "The process may not write the store's folder or files; check their owner, mode and mount."
            )
        case ENOMEM:
            return (.io, "The system could not map the file; close other stores or use a smaller map.")
        case EAGAIN:
            return (.locked, "Another process holds the environment's lock; retry when it is done.")
        default:
            return (.io, "Check that the folder is on a local, writable disk, then retry.")
        }
    }
}
