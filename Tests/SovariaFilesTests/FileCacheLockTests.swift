import Foundation
import Sovaria
import SovariaTestKit
import Testing

@testable import SovariaFiles

#if canImport(Glibc)
    import Glibc
#endif

/// The folder lock of a file cache: one `FileCache` per folder, in this process or another, and
/// nothing else ever holds it (issue 35, item 4).
///
/// The defect these tests pin: the lock was an `flock`, which belongs to the open file, and a
/// child process another test spawned copies every descriptor at its fork and keeps the copies
/// until its exec. A cache dropped while such a child sat between the two stayed locked to the
/// next open: a CI run whose machine was loaded (children slow to exec) saw `.locked` after 10 s.
/// A forked child that waits on a pipe here is that child, held in the window for as long as the
/// test needs.
@Suite struct FileCacheLockTests {
    @Test(arguments: MetadataEngine.all)
    func aCacheReleasedWhileAChildIsBetweenForkAndExecOpensAgainAtOnce(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        var first: FileCache? = try await bench.open(.unlimited)
        try await put(try #require(first), "photo", 1_000)
        let lock = try lockDescriptors(under: bench.directory)
        try #require(!lock.isEmpty, "the cache holds no descriptor on \(bench.directory.path)/.lock")
        let child = try HeldChild(keeping: lock)
        defer { child.release() }
        first = nil
        // The child still holds the first cache's lock descriptor; the open must not need it
        // gone (with the old lock it tried for 10 s, then threw `.locked`).
        let reopened = try await bench.open(.unlimited)
        #expect(try #require(try await reopened.open("photo")).sizeBytes == 1_000)
        child.release()
    }

    @Test func aSecondCacheOnTheFolderInThisProcessIsLocked() throws {
        let folder = try TemporaryFolder()
        let first = try CacheFolder(root: folder.url)
        let error = try #require(throws: OfflineStoreError.self) { try CacheFolder(root: folder.url) }
        #expect(error.code == .locked, "\(error)")
        withExtendedLifetime(first) {}
        _ = consume first
        _ = try CacheFolder(root: folder.url)
    }

    @Test func aCacheAnotherProcessHoldsIsLocked() throws {
        let folder = try TemporaryFolder()
        // The other process takes the lock the way a cache there would: a write lock on `.lock`.
        let child = try HeldChild(lockingFileAt: folder.url.path + "/.lock")
        defer { child.release() }
        let error = try #require(throws: OfflineStoreError.self) { try CacheFolder(root: folder.url) }
        #expect(error.code == .locked, "\(error)")
        child.release()
        _ = try CacheFolder(root: folder.url)
    }
}

/// The descriptors this process has open on a file named `.lock` under `folder`.
private func lockDescriptors(under folder: URL) throws -> [Int32] {
    let open = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")
    return open.compactMap { name -> Int32? in
        guard let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name),
            target.hasPrefix(folder.resolvingSymlinksInPath().path), target.hasSuffix("/.lock")
        else { return nil }
        return Int32(name)
    }
}

/// A child process made by `fork` alone, that waits on a pipe until ``release()``: it holds its
/// copy of each descriptor in `keeping`, as a child between its fork and its exec does. It closes
/// every other one it inherited: a copy of another test's descriptor would pin that test's files
/// (a read-only remount of a disk fails as busy while a file on it is open for writing).
/// With `lockingFileAt`, it first takes a write lock on that file, as another process's cache
/// would, and says so on a second pipe before waiting.
private final class HeldChild {
    private let pid: pid_t
    private let releaseEnd: Int32
    private var released = false

    init(keeping kept: [Int32] = [], lockingFileAt lockPath: String? = nil) throws {
        var release: [Int32] = [-1, -1]
        var ready: [Int32] = [-1, -1]
        guard pipe(&release) == 0, pipe(&ready) == 0 else { throw POSIXError(.EIO) }
        let path = lockPath.map { strdup($0) } ?? nil
        defer { free(path) }
        // Closing up to the descriptor limit could be billions of calls where it is unlimited:
        // close up to the highest descriptor open now, with room for those other threads open
        // before the fork (descriptors are numbered lowest first).
        let openNow = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").compactMap { Int32($0) }
        let highest = (openNow.max() ?? 1_024) + 1_024
        // Allocated before the fork: the child may not allocate.
        let keep = UnsafeMutableBufferPointer<Int32>.allocate(capacity: kept.count + 2)
        defer { keep.deallocate() }
        _ = keep.initialize(from: kept + [release[0], ready[1]])
        let pid = fork()
        if pid == 0 {
            // Only async-signal-safe calls from here to _exit.
            var descriptor: Int32 = 3
            while descriptor < highest {
                var isKept = false
                for index in 0..<keep.count where keep[index] == descriptor { isKept = true }
                if !isKept { close(descriptor) }
                descriptor += 1
            }
            if let path {
                let descriptor = open(path, O_RDWR | O_CREAT, 0o600)
                var lock = flock()
                lock.l_type = Int16(F_WRLCK)
                lock.l_whence = Int16(SEEK_SET)
                if descriptor < 0 || fcntl(descriptor, F_SETLK, &lock) != 0 { _exit(2) }
            }
            var byte: UInt8 = 1
            _ = write(ready[1], &byte, 1)
            _ = read(release[0], &byte, 1)
            _exit(0)
        }
        close(release[0])
        close(ready[1])
        guard pid > 0 else { throw POSIXError(.EAGAIN) }
        self.pid = pid
        releaseEnd = release[1]
        var byte: UInt8 = 0
        let said = read(ready[0], &byte, 1)
        close(ready[0])
        guard said == 1 else { throw POSIXError(.ECHILD) }
    }

    /// Lets the child exit and waits for it; later calls do nothing.
    func release() {
        guard !released else { return }
        released = true
        // A byte, not the pipe's end: children forked by other tests at the same moment hold
        // copies of the write end, so closing it here would never reach end-of-file there.
        var byte: UInt8 = 1
        _ = write(releaseEnd, &byte, 1)
        close(releaseEnd)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }

    deinit { release() }
}
