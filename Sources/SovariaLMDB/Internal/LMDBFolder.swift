import Sovaria

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The plain file-system work around an LMDB environment: its folder, the folder a compaction copies
/// into, and the lock that keeps other processes out while the compacted file is swapped in.
enum LMDBFolder {
    /// The name prefix of the folders ``LMDBEnvironment/compact()`` copies into, followed by the pid.
    static let copyFolderPrefix = ".sovaria-compact-"

    /// Creates `path` and any missing parents with mode 0700; an existing folder is left as it is.
    static func create(_ path: String) throws(OfflineStoreError) {
        try POSIXFile.makeDirectories(path, mode: 0o700, engine: .lmdb)
    }

    /// Whether the file system holding `path` has (almost) no space left for this process.
    ///
    /// LMDB reports a short write — what a full disk gives — as `EIO`, the same as a failing disk;
    /// the free space tells the two apart.
    static func diskIsFull(_ path: String) -> Bool {
        var info = statvfs()
        guard statvfs(path, &info) == 0 else { return false }
        let blocks = geteuid() == 0 ? info.f_bfree : info.f_bavail  // root may use the reserved blocks
        return UInt64(blocks) * UInt64(info.f_frsize) < 1 << 20
    }

    /// Removes copy folders that a compaction in a process that no longer runs left behind.
    static func removeAbandonedCopies(in folder: String) {
        for (name, _) in (try? POSIXFile.listDirectory(folder)) ?? [] {
            guard name.utf8.starts(with: copyFolderPrefix.utf8), let pid = pid_t(name.dropFirst(copyFolderPrefix.count))
            else {
                continue
            }
            if pid == getpid() || (kill(pid, 0) != 0 && errno == ESRCH) { removeTree(folder + "/" + name) }
        }
    }

    /// Removes a folder that holds only files (a copy folder); missing is fine.
    static func removeTree(_ path: String) {
        for (name, _) in (try? POSIXFile.listDirectory(path)) ?? [] { unlink(path + "/" + name) }
        rmdir(path)
    }

    /// Flushes a file or folder to stable storage.
    static func sync(_ path: String, directory: Bool) throws(OfflineStoreError) {
        let descriptor = open(path, (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC)
        guard descriptor >= 0 else { throw OfflineStoreError.lmdb(errno, "Opening \(path) to flush it failed") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw OfflineStoreError.lmdb(errno, "Flushing \(path) to disk failed") }
    }

    /// Renames `source` over `target` atomically.
    static func replace(_ target: String, with source: String) throws(OfflineStoreError) {
        guard rename(source, target) == 0 else {
            throw OfflineStoreError.lmdb(errno, "Moving the compacted LMDB file over \(target) failed")
        }
    }

    /// Takes the write lock LMDB's first opener takes on byte 0 of `lock.mdb`, so it succeeds only when no
    /// other process has the environment open, and blocks other processes from opening it until released.
    ///
    /// Returns the descriptor to pass to ``releaseEnvironmentLock(_:)``, or `nil` when another process
    /// holds the environment.
    static func lockOutOtherProcesses(lockFile path: String) throws(OfflineStoreError) -> Int32? {
        let descriptor = open(path, O_RDWR | O_CLOEXEC)
        guard descriptor >= 0 else { throw OfflineStoreError.lmdb(errno, "Opening \(path) failed") }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 1
        if fcntl(descriptor, F_SETLK, &lock) == 0 { return descriptor }
        let code = errno
        close(descriptor)
        if code == EAGAIN || code == EACCES { return nil }
        throw OfflineStoreError.lmdb(code, "Locking \(path) failed")
    }

    /// Releases the lock from ``lockOutOtherProcesses(lockFile:)``.
    static func releaseEnvironmentLock(_ descriptor: Int32) {
        close(descriptor)
    }
}
