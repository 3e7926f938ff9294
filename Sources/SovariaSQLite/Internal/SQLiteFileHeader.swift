import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The 100-byte header of an SQLite database file, read before SQLite opens it.
enum SQLiteFileHeader {
    /// Throws ``OfflineStoreError/Code/corrupt`` when the file at `path` is shorter than the pages its
    /// header counts and no write-ahead log can hold them: SQLite would read each missing page as
    /// zeros, and a value whose overflow pages were cut off would read as `\0` bytes, not as damage
    /// (measured: 7 of 25 cuts of a database file gave such values).
    ///
    /// With frames in the `-wal` file the check is skipped: a checkpoint that a crash interrupted
    /// may have written the header before the pages, and the log still holds them (so is a hot
    /// `-journal`, which restores pages of its own).
    static func checkNotCutShort(_ path: String) throws(OfflineStoreError) {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { return }  // a new file, or one SQLite reports on
        defer { close(descriptor) }
        var header = [UInt8](repeating: 0, count: 100)
        guard pread(descriptor, &header, 100, 0) == 100, header.starts(with: Array("SQLite format 3\0".utf8)) else {
            return
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { return }
        let rawPageSize = Int(header[16]) << 8 | Int(header[17])
        let pageSize = rawPageSize == 1 ? 65_536 : rawPageSize
        let changeCounter = bigEndian(header, at: 24)
        let pageCount = bigEndian(header, at: 28)
        // The page count is valid only when the change counter matches "version valid for".
        guard pageCount > 0, changeCounter == bigEndian(header, at: 92) else { return }
        var log = stat()
        if stat(path + "-wal", &log) == 0, log.st_size > 32 { return }
        // A rollback journal (a file not written by this store, or converted) restores pages itself.
        if stat(path + "-journal", &log) == 0, log.st_size > 0 { return }
        let needed = pageCount * pageSize
        guard Int(info.st_size) < needed else { return }
        throw OfflineStoreError(
            .corrupt,
            "The SQLite database \(path) is cut short: it has \(info.st_size) bytes, but its header counts "
                + "\(pageCount) pages of \(pageSize) bytes (\(needed) bytes): a copy that did not finish, or a damaged "
                + "disk. Restore the file from a backup, or delete it (with its -wal and -shm files) to start empty.",
            engine: .sqlite)
    }

    private static func bigEndian(_ bytes: [UInt8], at offset: Int) -> Int {
        bytes[offset..<offset + 4].reduce(0) { $0 << 8 | Int($1) }
    }
}
