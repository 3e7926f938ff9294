#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Tells an open whether the folder's temporary files need a sweep: only after an unclean end.
///
/// Every process holds a shared `flock` on `.open` while it has the folder open. An open that
/// gets it exclusively is alone: the `.clean` mark, left by the last process to close, says no
/// crash has left temporary files since, and it takes the mark away (an open is not a clean
/// close). An open that finds others there leaves `.shared`, and the last process to close then
/// sweeps before it leaves the mark: it cannot tell whether one of the others crashed.
/// Listing the folder (10,000 files: several milliseconds) is then needed only after a crash, or
/// at the last close of a folder several processes shared.
final class CleanCloseMark: Sendable {
    static let lockName = ".open"
    static let markName = ".clean"
    static let sharedName = ".shared"

    private let root: String
    private let descriptor: Int32

    /// Opens the folder's `.open` file; `nil` when it cannot be (a read-only folder: always sweep).
    init?(root: String) {
        self.root = root
        let descriptor = open(root + "/" + Self.lockName, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { return nil }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Whether the last end was clean (no sweep needed); holds the shared lock from now on. Call
    /// holding the folder's write lock.
    func claimOpen() -> Bool {
        var clean = false
        if flock(descriptor, LOCK_EX | LOCK_NB) == 0 {
            clean = unlink(root + "/" + Self.markName) == 0
        } else {
            let shared = open(root + "/" + Self.sharedName, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
            if shared >= 0 { close(shared) }
        }
        while flock(descriptor, LOCK_SH) != 0, errno == EINTR {}
        return clean
    }

    /// At a close: the last process to close sweeps if others shared the folder (`sweep`), then
    /// leaves the mark. Call holding the folder's write lock.
    func releaseOpen(sweep: () -> Void) {
        defer { flock(descriptor, LOCK_UN) }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else { return }
        if unlink(root + "/" + Self.sharedName) == 0 { sweep() }
        let mark = open(root + "/" + Self.markName, O_WRONLY | O_CREAT | O_CLOEXEC, 0o600)
        if mark >= 0 { close(mark) }
    }
}
