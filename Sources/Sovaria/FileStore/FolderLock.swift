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
    private let descriptor: Int32

    /// Opens (creating) the lock file in `root`; throws when it cannot be opened for writing.
    init(root: String) throws(OfflineStoreError) {
        let path = root + "/" + Self.name
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw POSIXFile.error("Opening the lock file", path) }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Runs `body` holding the folder's exclusive lock, shared with every process that uses it.
    func withExclusiveLock<Result>(_ body: () throws(OfflineStoreError) -> Result) throws(OfflineStoreError) -> Result {
        while flock(descriptor, LOCK_EX) != 0 {
            guard errno == EINTR else { throw POSIXFile.error("Locking the folder of", Self.name) }
        }
        defer { flock(descriptor, LOCK_UN) }
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
