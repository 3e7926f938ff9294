import Foundation
import Sovaria
import SovariaPlumbing
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The file cache's folder on disk:
///
///     <directory>/.lock            locked (fcntl) while a FileCache has the folder open
///     <directory>/files/<id>       the cached files, named by the SHA-256 of their key
///     <directory>/tmp/<id>-<hex>   downloads in progress, and those a crash left behind
///
/// Other names in `<directory>` are left alone (the metadata store may live there). Every call
/// blocks: the cache runs them on its ``BlockingWorkQueue``.
final class CacheFolder: Sendable {
    let root: String
    let filesPath: String
    let temporaryPath: String
    private let lockDescriptor: Int32
    /// ``root`` with every symbolic link resolved: the key of ``openRoots``.
    private let canonicalPath: String
    /// How many times a folder was listed: at open only (rule 7; tests check it).
    let listings = Mutex(0)

    /// Creates the folders (0700) and takes the folder's lock; throws `.locked` when another
    /// ``FileCache`` (in this process or another) has it open.
    ///
    /// The lock is a POSIX record lock (`fcntl(F_SETLK)`) on the whole `.lock` file, which belongs
    /// to this process, plus ``openRoots`` for the caches of this process (record locks never
    /// conflict within one). Not `flock`: an `flock` belongs to the open file, so a child process
    /// of the app caught between its fork and its exec holds it through its copy of the
    /// descriptor, and a cache released meanwhile would stay locked to the next open. A record
    /// lock is not inherited by a child, and goes when this process closes the file.
    init(root: URL) throws(OfflineStoreError) {
        let rootPath = root.path
        self.root = rootPath
        filesPath = rootPath + "/files"
        temporaryPath = rootPath + "/tmp"
        for path in [rootPath, filesPath, temporaryPath] { try POSIXFile.makeDirectories(path, mode: 0o700) }
        let lockPath = rootPath + "/.lock"
        let locked = OfflineStoreError(
            .locked,
            "Another FileCache has the folder \(rootPath) open (in this process or another). Use that one, "
                + "or release it before opening the folder again.")
        // Two spellings of one folder (a trailing slash, a symbolic link) are one folder.
        let canonicalRoot = OpenOncePerPath<CacheFolder>.canonicalPath(rootPath)
        canonicalPath = canonicalRoot
        guard Self.openRoots.withLock({ $0.insert(canonicalRoot).inserted }) else { throw locked }
        let descriptor = open(lockPath, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            let error = POSIXFile.error("Opening the lock file", lockPath)
            Self.openRoots.withLock { _ = $0.remove(canonicalRoot) }
            throw error
        }
        var lock = flock()
        lock.l_type = Int16(F_WRLCK)
        lock.l_whence = Int16(SEEK_SET)  // l_start 0, l_len 0: the whole file
        while fcntl(descriptor, F_SETLK, &lock) != 0 {
            if errno == EINTR { continue }
            let code = errno
            close(descriptor)
            Self.openRoots.withLock { _ = $0.remove(canonicalRoot) }
            guard code == EAGAIN || code == EACCES else { throw POSIXFile.error("Locking", lockPath, code: code) }
            throw locked
        }
        lockDescriptor = descriptor
    }

    deinit {
        // Closing the descriptor releases the record lock; only this type opens `.lock` in a
        // process (a close of any descriptor on the file would release it too).
        close(lockDescriptor)
        Self.openRoots.withLock { _ = $0.remove(canonicalPath) }
    }

    /// The folders a cache of this process has open.
    private static let openRoots = Mutex<Set<String>>([])

    /// How long an open tries again while the folder is locked: a cache on its way out (its last
    /// reference being dropped on another thread, its last background write finishing) lets go
    /// within it.
    static let lockWait: Duration = .seconds(10)

    /// Opens the folder at `directory` on `work`, trying again every few milliseconds while it is
    /// locked, for ``lockWait`` at most; waits suspended, holding no thread (the release may
    /// need one).
    static func acquire(_ directory: URL, on work: BlockingWorkQueue) async throws -> CacheFolder {
        let deadline = ContinuousClock.now + lockWait
        while true {
            do {
                return try await work.runConcurrently { try CacheFolder(root: directory) }
            } catch let error as OfflineStoreError where error.code == .locked && ContinuousClock.now < deadline {
                try? await Task.sleep(for: .milliseconds(5))
            }
        }
    }

    func filePath(_ id: FileID) -> String { filesPath + "/" + id.hex }

    /// A fresh name in `tmp/` for a download of `id`; nothing is created.
    func newTemporaryPath(_ id: FileID) -> String {
        temporaryPath + "/" + id.hex + "-" + String(UInt64.random(in: .min ... .max), radix: 16)
    }

    /// The names in `files/` (files only; folders there are left alone).
    func listFiles() throws(OfflineStoreError) -> [String] {
        listings.withLock { $0 += 1 }
        return try POSIXFile.listDirectory(filesPath).filter { !$0.isDirectory }.map(\.name)
    }

    /// The files in `tmp/`, with their size and modification time (ms since 1970).
    func listTemporaryFiles() throws(OfflineStoreError) -> [(name: String, sizeBytes: Int, modifiedMillis: Int64)] {
        listings.withLock { $0 += 1 }
        var found: [(String, Int, Int64)] = []
        for entry in try POSIXFile.listDirectory(temporaryPath) where !entry.isDirectory {
            guard let info = Self.status(temporaryPath + "/" + entry.name) else { continue }  // gone meanwhile
            found.append((entry.name, info.sizeBytes, info.modifiedMillis))
        }
        return found
    }

    /// The size and modification time of the file at `path`, or `nil` when there is none.
    static func status(_ path: String) -> (sizeBytes: Int, modifiedMillis: Int64)? {
        var info = stat()
        guard stat(path, &info) == 0 else { return nil }
        #if canImport(Darwin)
            let modified = info.st_mtimespec
        #else
            let modified = info.st_mtim
        #endif
        return (Int(info.st_size), Int64(modified.tv_sec) * 1_000 + Int64(modified.tv_nsec) / 1_000_000)
    }

    /// Flushes the file a download wrote at `path` to stable storage and returns its size.
    func syncDownloadedFile(_ path: String, key: String) throws(OfflineStoreError) -> Int {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            if errno == ENOENT {
                throw OfflineStoreError(
                    .notFound,
                    "The download of \(key) returned without writing a file at the URL it was given. Write or move "
                        + "the body to exactly that URL before the closure returns.", key: key)
            }
            throw POSIXFile.error("Opening the download", path, key: key)
        }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw POSIXFile.error("Reading the size of", path, key: key) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw OfflineStoreError(
                .invalidValue, "The download of \(key) left something other than a file at its URL; write a file.",
                key: key)
        }
        guard fsync(descriptor) == 0 else { throw POSIXFile.error("Syncing the download", path, key: key) }
        return Int(info.st_size)
    }

    /// Renames a synced download into place under `id` and flushes `files/`, so the name
    /// survives a power cut: the one step that makes a download visible, atomic by `rename(2)`.
    func commit(_ temporary: String, as id: FileID, key: String) throws(OfflineStoreError) {
        try POSIXFile.rename(temporary, to: filePath(id), key: key)
        try POSIXFile.syncDirectory(filesPath)
    }

    /// Opens the file of `id` for reading and returns its descriptor (the caller closes it) and
    /// size, or `nil` when there is no such file.
    func openFile(_ id: FileID, key: String) throws(OfflineStoreError) -> (descriptor: Int32, sizeBytes: Int)? {
        let path = filePath(id)
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            guard errno == ENOENT else { throw POSIXFile.error("Opening the cached file", path, key: key) }
            return nil
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else {
            let failure = POSIXFile.error("Reading the size of", path, key: key)
            close(descriptor)
            throw failure
        }
        return (descriptor, Int(info.st_size))
    }

    /// Gives the file of `id` a second name in `tmp/` (a hard link: no byte copied) and returns
    /// it, or `nil` when there is no such file or the file system cannot link. A commit keeps the
    /// file it replaces this way until the new one is recorded; a crash leaves the name as a
    /// temporary file, counted and deleted after a day like any other.
    func keepAside(_ id: FileID) -> String? {
        let kept = newTemporaryPath(id)
        return link(filePath(id), kept) == 0 ? kept : nil
    }

    /// Renames a file kept by ``keepAside(_:)`` back over the name of `id` and flushes `files/`.
    func restore(_ kept: String, as id: FileID, key: String) throws(OfflineStoreError) {
        try commit(kept, as: id, key: key)
    }

    /// Removes the file at `path`; a file already gone is not an error.
    func remove(_ path: String) throws(OfflineStoreError) {
        try POSIXFile.removeFile(path, key: nil)
    }
}
