#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// An open folder, and the file calls made relative to it (`openat`, `renameat`, `unlinkat`,
/// `mkdirat`, `fdopendir`): no system call is handed more than one short name, however long
/// the folder's own path is. Apple platforms allow 1,024 bytes per path; a 511-byte key's file
/// is 1,031 bytes below the store's folder, so a path-based call could never reach it there.
///
/// Closed when released. ``path`` is for messages only.
package final class DirectoryDescriptor: Sendable {
    /// The descriptor, open for reading (`O_DIRECTORY`) until the descriptor is released.
    package let fd: Int32
    /// The folder's path, for error messages.
    package let path: String

    /// Opens the folder at `path`.
    package init(opening path: String) throws(OfflineStoreError) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else { throw POSIXFile.error("Opening folder", path) }
        self.fd = fd
        self.path = path
    }

    private init(fd: Int32, path: String) {
        self.fd = fd
        self.path = path
    }

    deinit { close(fd) }

    /// `path/name`, for messages.
    package func shown(_ name: String) -> String { path + "/" + name }

    /// The folder `name` in this one, made (mode 0700; the parent synced when `sync`) when
    /// missing and `create` is set; `nil` when it is missing and `create` is not.
    package func child(_ name: String, create: Bool, sync: Bool) throws(OfflineStoreError) -> DirectoryDescriptor? {
        var fd = openat(self.fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd < 0, errno == ENOENT {
            guard create else { return nil }
            if mkdirat(self.fd, name, 0o700) == 0 {
                if sync { try self.sync() }
            } else if errno != EEXIST {
                throw POSIXFile.error("Creating folder", shown(name))
            }
            fd = openat(self.fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            if fd >= 0 { POSIXFile.protectUntilFirstUnlock(fd) }
        }
        guard fd >= 0 else { throw POSIXFile.error("Opening folder", shown(name)) }
        return DirectoryDescriptor(fd: fd, path: shown(name))
    }

    /// Writes `bytes` to the new file `name` (which must not exist), mode 0600, fsynced when
    /// `sync` is set; a failure removes what was written.
    package func createFile(_ name: String, contents bytes: [UInt8], sync: Bool, key: String?) throws(OfflineStoreError)
    {
        try POSIXFile.createFile(name, at: fd, shownAs: shown(name), contents: bytes, sync: sync, key: key)
    }

    /// The contents of the file `name`, or `nil` when there is none.
    package func readFile(_ name: String, key: String?) throws(OfflineStoreError) -> [UInt8]? {
        try POSIXFile.readFile(name, at: fd, shownAs: shown(name), key: key)
    }

    /// Renames the file `name` to `target` in `folder`; on failure removes `name` and throws.
    package func rename(
        _ name: String, to target: String, in folder: DirectoryDescriptor, key: String?
    ) throws(OfflineStoreError) {
        guard renameat(fd, name, folder.fd, target) == 0 else {
            let failure = POSIXFile.error("Renaming into", folder.shown(target), key: key)
            unlinkat(fd, name, 0)
            throw failure
        }
    }

    /// Renames the file `name` to `target` in `folder`; `false` when `name` does not exist (a
    /// journal's step that already ran).
    package func renameIfPresent(
        _ name: String, to target: String, in folder: DirectoryDescriptor, key: String?
    ) throws(OfflineStoreError) -> Bool {
        if renameat(fd, name, folder.fd, target) == 0 { return true }
        if errno == ENOENT, faccessat(fd, name, F_OK, 0) != 0 { return false }
        throw POSIXFile.error("Renaming into", folder.shown(target), key: key)
    }

    /// Removes the file `name`; `false` when there was none.
    @discardableResult
    package func removeFile(_ name: String, key: String?) throws(OfflineStoreError) -> Bool {
        if unlinkat(fd, name, 0) == 0 { return true }
        if errno == ENOENT { return false }
        throw POSIXFile.error("Removing", shown(name), key: key)
    }

    /// Flushes the folder's entries (names created, renamed or removed) to stable storage.
    package func sync() throws(OfflineStoreError) {
        guard fsync(fd) == 0 else { throw POSIXFile.error("Syncing folder", path) }
    }

    /// The names in this folder, without `.` and `..`.
    package func list() throws(OfflineStoreError) -> [(name: String, isDirectory: Bool)] {
        try POSIXFile.listDirectory(".", at: fd, shownAs: path)
    }

    /// The folder's mode, or `nil` when `fstat` fails.
    package var mode: mode_t? {
        var info = stat()
        return fstat(fd, &info) == 0 ? info.st_mode : nil
    }
}
