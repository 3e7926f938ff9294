import CSQLite
import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

extension OfflineStoreError {
    /// The error for an SQLite failure: a ``Code`` chosen from the result code, SQLite's own
    /// message, and what the user can do about it.
    ///
    /// - Parameters:
    ///   - extendedCode: the extended result code (the connections are opened with
    ///     `SQLITE_OPEN_EXRESCODE`); it becomes ``nativeCode``.
    ///   - sqliteMessage: `sqlite3_errmsg` of the failing connection, read right after the failure.
    ///   - systemErrno: `sqlite3_system_errno` of the failing connection, which tells a full disk
    ///     from other I/O errors and a permission problem from a missing folder.
    ///   - action: what was being done, e.g. `"Writing a batch of 3 writes"`.
    ///   - path: the database file, named in the message of a `.corrupt` error.
    static func sqlite(
        _ extendedCode: Int32,
        _ sqliteMessage: String,
        systemErrno: Int32 = 0,
        while action: String,
        key: String? = nil,
        path: String? = nil
    ) -> OfflineStoreError {
        let (code, advice) = classify(extendedCode, systemErrno: systemErrno)
        let error = OfflineStoreError(
            code,
            "\(action) failed: \(sqliteMessage). \(advice)",
            engine: .sqlite,
            nativeCode: extendedCode,
            key: key
        )
        return path.map(error.namingDamagedFile) ?? error
    }

    /// A stored key or value whose bytes are not UTF-8: only a change made outside Sovaria or
    /// damage to the file can put one there.
    static func sqliteNotUTF8(_ what: String, key: String? = nil, path: String) -> OfflineStoreError {
        OfflineStoreError(
            .corrupt,
            "A stored \(what) in \(path) is not valid UTF-8: the database was changed outside Sovaria or is "
                + "damaged. Delete the entry, or delete the file and let the app fetch its data again.",
            engine: .sqlite,
            key: key
        )
    }

    /// The ``Code`` and the advice for an extended result code.
    static func classify(_ extendedCode: Int32, systemErrno: Int32) -> (Code, String) {
        let diskFull = systemErrno == ENOSPC || systemErrno == EDQUOT
        let refused = systemErrno == EACCES || systemErrno == EPERM || systemErrno == EROFS
        switch extendedCode & 0xFF {
        case SQLITE_FULL:
            return (.full, "The disk is full: free disk space, then retry.")
        case SQLITE_IOERR where diskFull:
            return (.full, "The disk or the user's quota is full: free disk space, then retry.")
        case SQLITE_BUSY, SQLITE_LOCKED:
            return (
                .locked,
                "Another connection or process holds the database: retry later, or close the other program using it."
            )
        case SQLITE_CORRUPT, SQLITE_NOTADB:
            return (
                .corrupt,
                "The file is damaged or is not a Sovaria SQLite store: move it aside or delete it, "
                    + "and let the app fetch its data again."
            )
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH:
            return (.permissionDenied, "Make the database file, its -wal and -shm files and its folder writable.")
        case SQLITE_CANTOPEN where refused:
            return (.permissionDenied, "Make the database file and its folder readable and writable by this process.")
        case SQLITE_CANTOPEN:
            return (.io, "Check that the folder exists and that the path names a file on a local disk.")
        case SQLITE_TOOBIG:
            return (.invalidValue, "SQLite stores values up to 1 GB: split the value or keep it in a file.")
        case SQLITE_NOMEM:
            return (.io, "The process is out of memory: free memory, then retry.")
        default:
            return (.io, "Check the disk and the file, then retry.")
        }
    }
}
