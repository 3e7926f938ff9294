import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// The `.lock` file of a ``FileOfflineStore`` folder: `flock` on it keeps the writes of two
/// processes on one folder apart (each batch, with its journal, is one critical section), and the
/// number in it counts writes, so a process sees that another one changed the folder and lists
/// it again instead of trusting its cached key list.
final class FolderLock: Sendable {
    static let name = ".lock"
    /// The writers' descriptor (exclusive locks) and the write count.
    private let descriptor: Int32
    /// The readers' descriptor, its own open file: a `flock` belongs to an open file, so shared
    /// locks taken on the writers' one would be dropped by any unlock of it.
    private let readerDescriptor: Int32
    /// How many reads of this process hold the shared lock: the first takes it, the last drops it.
    private let sharedHolders = Mutex(0)

    /// Opens (creating) the lock file in `root`; throws when it cannot be opened for writing.
    init(root: String) throws(OfflineStoreError) {
        let path = root + "/" + Self.name
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXFile.error("Opening the lock file", path) }
        let readerDescriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard readerDescriptor >= 0 else {
            let error = POSIXFile.error("Opening the lock file", path)
            close(descriptor)
            throw error
        }
        self.descriptor = descriptor
        self.readerDescriptor = readerDescriptor
    }

    deinit {
        close(descriptor)
        close(readerDescriptor)
    }

    /// Runs `body` holding the folder's exclusive lock, shared with every process that uses it.
    func withExclusiveLock<Result>(_ body: () throws(OfflineStoreError) -> Result) throws(OfflineStoreError) -> Result {
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw POSIXFile.error("Locking the folder of", Self.name) }
        }
        defer { flock(descriptor, LOCK_UN) }
        return try body()
    }

    /// Runs `body` holding the folder's lock shared: no process's write runs meanwhile, other
    /// shared holders may (the multi-key reads of ``FileOfflineStore``).
    func withSharedLock<Result>(_ body: () throws(OfflineStoreError) -> Result) throws(OfflineStoreError) -> Result {
        try sharedHolders.withLock { holders throws(OfflineStoreError) in
            if holders == 0 {
                while flock(readerDescriptor, LOCK_SH) != 0 {
                    guard errno == EINTR else { throw POSIXFile.error("Locking the folder of", Self.name) }
                }
            }
            holders += 1
        }
        defer {
            sharedHolders.withLock { holders in
                holders -= 1
                if holders == 0 { flock(readerDescriptor, LOCK_UN) }
            }
        }
        return try body()
    }

    /// How many writes any process made to the folder (a hint for caches: not synced, not exact
    /// across a power cut, only ever compared for equality).
    var writeCount: UInt64 {
        var count: UInt64 = 0
        let read = withUnsafeMutableBytes(of: &count) { pread(descriptor, $0.baseAddress, 8, 0) }
        return read == 8 ? UInt64(littleEndian: count) : 0
    }

    /// Adds one to ``writeCount``; call holding the exclusive lock.
    func countWrite() {
        var next = (writeCount &+ 1).littleEndian
        _ = withUnsafeBytes(of: &next) { pwrite(descriptor, $0.baseAddress, 8, 0) }
    }
}
