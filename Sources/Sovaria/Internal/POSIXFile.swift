#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Thin, throwing wrappers over the POSIX calls of the file store and of every engine's folder.
/// Paths are plain strings; every failure becomes an ``OfflineStoreError`` carrying `errno`, with
/// the engine the caller names (the file store's by default).
package enum POSIXFile {
    package static func error(
        _ operation: String, _ path: String, code: Int32 = errno, key: String? = nil,
        engine: OfflineStoreError.Engine = .file
    )
        -> OfflineStoreError
    {
        let reason = String(cString: strerror(code))
        let (kind, advice): (OfflineStoreError.Code, String) =
            switch code {
            case ENOSPC, EDQUOT: (.full, "free disk space, then retry")
            case EACCES, EPERM, EROFS: (.permissionDenied, "make the folder writable by this process")
            default: (.io, "check the folder and the disk")
            }
        return OfflineStoreError(
            kind, "\(operation) \(path) failed: \(reason); \(advice).", engine: engine, nativeCode: code, key: key)
    }

    /// Creates `path` and any missing parents with `mode`; returns whether `path` was created.
    @discardableResult
    package static func makeDirectories(
        _ path: String, mode: mode_t, engine: OfflineStoreError.Engine = .file
    ) throws(OfflineStoreError) -> Bool {
        if mkdir(path, mode) == 0 { return true }
        switch errno {
        case EEXIST:
            var info = stat()
            guard stat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
                throw error("Creating folder", path, code: ENOTDIR, engine: engine)
            }
            return false
        case ENOENT:
            let parent = parentPath(of: path)
            guard parent != path, !parent.isEmpty else { throw error("Creating folder", path, engine: engine) }
            try makeDirectories(parent, mode: mode, engine: engine)
            if mkdir(path, mode) == 0 || errno == EEXIST { return true }
            throw error("Creating folder", path, engine: engine)
        default:
            throw error("Creating folder", path, engine: engine)
        }
    }

    package static func parentPath(of path: String) -> String {
        guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return "." }
        if slash == path.utf8.startIndex { return "/" }
        return String(path[..<slash])
    }

    /// Writes `bytes` to a new file at `path` (which must not exist), mode 0600, and fsyncs it
    /// when `sync` is set. A relative `path` is resolved in the folder open as `directory`
    /// (``DirectoryDescriptor``); messages name `shown` (default: `path`). On Apple platforms the
    /// file gets the protection class "until first user authentication".
    package static func createFile(
        _ path: String, at directory: Int32 = AT_FDCWD, shownAs shown: String? = nil, contents bytes: [UInt8],
        sync: Bool, key: String?
    ) throws(OfflineStoreError) {
        let name = path
        let fd = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        let path = shown ?? name
        guard fd >= 0 else { throw error("Creating", path, key: key) }
        protectUntilFirstUnlock(fd)
        var failure: OfflineStoreError?
        bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let written = write(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if written < 0 {
                    if errno == EINTR { continue }
                    failure = error("Writing", path, key: key)
                    return
                }
                offset += written
            }
        }
        if failure == nil, sync, fsync(fd) != 0 { failure = error("Syncing", path, key: key) }
        if close(fd) != 0, failure == nil { failure = error("Closing", path, key: key) }
        if let failure {
            unlinkat(directory, name, 0)
            throw failure
        }
    }

    /// The store's files stay readable after the device's first unlock, so background
    /// sync works while it is locked (`NSFileProtectionCompleteUntilFirstUserAuthentication`, data
    /// protection class C). Files and folders inherit their folder's class; the store sets it on
    /// each it creates as well. Elsewhere, and on volumes without data protection, nothing.
    /// Compiled on Apple platforms only: not run on this project's Linux machines.
    package static func protectUntilFirstUnlock(_ fd: Int32) {
        #if canImport(Darwin)
            // PROTECTION_CLASS_C, the value <sys/fcntl.h> documents; an error (no data
            // protection on the volume, as on most Macs) leaves the file as it was.
            _ = fcntl(fd, F_SETPROTECTIONCLASS, 3)
        #endif
    }

    /// The contents of the file at `path` (relative: in the folder open as `directory`), or
    /// `nil` when it does not exist; messages name `shown` (default: `path`).
    package static func readFile(
        _ path: String, at directory: Int32 = AT_FDCWD, shownAs shown: String? = nil, key: String?
    ) throws(OfflineStoreError) -> [UInt8]? {
        let fd = openat(directory, path, O_RDONLY | O_CLOEXEC)
        let path = shown ?? path
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw error("Opening", path, key: key)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw error("Reading", path, key: key) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var offset = 0
        var failure: OfflineStoreError?
        bytes.withUnsafeMutableBytes { buffer in
            while offset < buffer.count {
                let count = read(fd, buffer.baseAddress! + offset, buffer.count - offset)
                if count < 0, errno == EINTR { continue }
                if count < 0 {
                    failure = error("Reading", path, key: key)
                    return
                }
                if count == 0 { break }
                offset += count
            }
        }
        if let failure { throw failure }
        return Array(bytes[..<offset])
    }

    package static func rename(_ source: String, to target: String, key: String?) throws(OfflineStoreError) {
        guard systemRename(source, target) == 0 else {
            let failure = error("Renaming into", target, key: key)
            unlink(source)
            throw failure
        }
    }

    /// Removes the file at `path`; returns `false` when there was none.
    @discardableResult
    package static func removeFile(_ path: String, key: String?) throws(OfflineStoreError) -> Bool {
        if unlink(path) == 0 { return true }
        if errno == ENOENT { return false }
        throw error("Removing", path, key: key)
    }

    /// Flushes the folder's entries (names created, renamed or removed) to stable storage; a
    /// folder that does not exist has nothing to flush.
    package static func syncDirectory(_ path: String) throws(OfflineStoreError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return }
            throw error("Opening folder", path)
        }
        defer { close(fd) }
        guard fsync(fd) == 0 else { throw error("Syncing folder", path) }
    }

    /// Throws when the folder at `path` cannot be opened for listing; reads none of its entries.
    package static func checkReadableFolder(_ path: String) throws(OfflineStoreError) {
        guard let dir = opendir(path) else { throw error("Listing folder", path) }
        closedir(dir)
    }

    /// The names in the folder at `path` (relative: in the folder open as `directory`), without
    /// `.` and `..`; empty when it does not exist. Messages name `shown` (default: `path`).
    package static func listDirectory(
        _ path: String, at directory: Int32 = AT_FDCWD, shownAs shown: String? = nil
    ) throws(OfflineStoreError) -> [(name: String, isDirectory: Bool)] {
        let fd = openat(directory, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        let path = shown ?? path
        guard fd >= 0, let dir = fdopendir(fd) else {
            let code = errno
            if fd >= 0 { close(fd) }
            if code == ENOENT { return [] }
            throw error("Listing folder", path, code: code)
        }
        defer { closedir(dir) }
        var names: [(String, Bool)] = []
        while let entry = readdir(dir) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if name == "." || name == ".." { continue }
            let type = entry.pointee.d_type
            let isDirectory: Bool
            if type == UInt8(DT_UNKNOWN) {
                var info = stat()
                isDirectory = fstatat(dirfd(dir), name, &info, 0) == 0 && info.st_mode & S_IFMT == S_IFDIR
            } else {
                isDirectory = type == UInt8(DT_DIR)
            }
            names.append((name, isDirectory))
        }
        return names
    }
}

/// `rename(2)`, under a name that does not clash with ``POSIXFile/rename(_:to:key:)``.
private func systemRename(_ source: String, _ target: String) -> Int32 {
    rename(source, target)
}
