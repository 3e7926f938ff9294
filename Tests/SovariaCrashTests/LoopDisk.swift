import Foundation
import SovariaTestServers
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// An ext4 file system in an image file, mounted through a loop device on a folder of its own: a
/// disk whose power the power-cut tests can cut.
///
/// The cut is `EXT4_IOC_SHUTDOWN` with `EXT4_GOING_FLAGS_NOLOGFLUSH` (what xfstests' `godown`
/// does): the journal is aborted without a last commit, so every write not yet on stable storage
/// (dirty pages, metadata of uncommitted journal transactions) is dropped, and every later call on
/// the file system fails with EIO. Writes the file system had already handed to the loop device
/// survive, as they would on a disk without a volatile cache: the cut shows a missing `fsync`, not
/// a missing cache flush.
///
/// Needs root (mount, loop devices). Blocking: call it from a thread of its own
/// (``PostgresCluster/onThread(_:)``), never from Swift's cooperative threads.
final class LoopDisk: Sendable {
    /// How a file system check went.
    struct Check: Sendable {
        /// The exit status of `e2fsck -fn`: 0 clean, 4 errors left uncorrected, 8 or more a failure.
        let status: Int32
        /// What it printed.
        let output: String
        /// Whether it found nothing to fix.
        var isClean: Bool { status == 0 }
    }

    /// `_IOR('X', 125, __u32)`, from the kernel's `fs/ext4/ext4.h`.
    static let shutdownRequest: UInt = 0x8004_587D
    /// `EXT4_GOING_FLAGS_NOLOGFLUSH`: shut down without committing the journal, as a power cut would.
    static let goingFlagsNoLogFlush: UInt32 = 2

    /// The folder holding the image and the mount point; removed in `deinit`, or by the next
    /// disk's sweep when the test process was killed (``TestMounts``).
    let folder: URL
    /// The image file.
    let image: URL
    /// Where the file system is mounted.
    let mountPoint: URL
    /// Whether the file system is mounted now.
    var mounted: Bool { mountedState.withLock { $0 } }
    private let mountedState = Mutex(false)

    /// Makes an image of `sizeBytes` with a fresh ext4 file system and mounts it.
    init(sizeBytes: Int) throws {
        try #require(getuid() == 0, "power-cut tests mount loop devices and need root (make test runs as root in CI)")
        TestMounts.sweepLeftovers()
        folder = try TestMounts.makeFolder()
        image = folder.appendingPathComponent("disk.img")
        mountPoint = folder.appendingPathComponent("mnt")
        try FileManager.default.createDirectory(at: mountPoint, withIntermediateDirectories: true)
        guard FileManager.default.createFile(atPath: image.path, contents: nil),
            truncate(image.path, off_t(sizeBytes)) == 0
        else { throw CrashChild.Failure(description: "could not make the image \(image.path): errno \(errno)") }
        _ = try ChildProcess.run("/sbin/mkfs.ext4", ["-q", "-F", image.path])
        try mount()
        try Self.createDurably(acknowledgementGate.path)
    }

    /// A file of the file system the crash writer opens before each acknowledgement
    /// (`SOVARIA_CRASH_ACK_GATE`): once the file system is cut, no open succeeds, so no call that
    /// returns after the cut is acknowledged.
    var acknowledgementGate: URL { mountPoint.appendingPathComponent("acknowledgement-gate") }

    /// Creates an empty file at `path` and syncs it and its folder, so every cut keeps it.
    private static func createDurably(_ path: String) throws {
        for (target, flags) in [(path, O_CREAT | O_WRONLY), ((path as NSString).deletingLastPathComponent, O_RDONLY)] {
            // Close-on-exec, as every descriptor of the mount: a child another test starts
            // meanwhile (a PostgreSQL cluster) would hold the mount busy for its whole life.
            let descriptor = open(target, flags | O_CLOEXEC, 0o600)
            guard descriptor >= 0, fsync(descriptor) == 0 else {
                throw CrashChild.Failure(description: "could not create \(path) durably: errno \(errno)")
            }
            close(descriptor)
        }
    }

    deinit {
        release()
        try? FileManager.default.removeItem(at: folder)
    }

    /// Unmounts the file system if it is mounted, lazily if something still holds it: for a run
    /// that ends early.
    func release() {
        guard mounted else { return }
        if (try? unmount()) == nil { _ = try? ChildProcess.run("/bin/umount", ["-l", mountPoint.path]) }
        mountedState.withLock { $0 = false }
    }

    /// Mounts the image (replaying its journal after a cut).
    func mount() throws {
        _ = try ChildProcess.run("/bin/mount", ["-o", "loop", image.path, mountPoint.path])
        mountedState.withLock { $0 = true }
    }

    /// Unmounts the file system; the loop device goes with it (mount's `autoclear`). Throws when
    /// something still holds a file of it (a store not released): that is a bug of the test.
    ///
    /// A file of the mount can stay open for a moment after its last user let go (a descriptor a
    /// child of another test, spawned at that moment, inherited and has not closed yet; a store
    /// being released): "target is busy" is retried for up to 60 s, then reported with the
    /// processes that hold the mount (`fuser -vm`). (10 s was once too short: a fresh clone's CI,
    /// on a machine busy with a parallel build, found the mount still held by the kernel after
    /// a four-writer child was killed; the wait is a bound on a hang, not a measured time.)
    func unmount() throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while true {
            do {
                _ = try ChildProcess.run("/bin/umount", [mountPoint.path])
                break
            } catch  where "\(error)".contains("target is busy") && ContinuousClock.now < deadline {
                usleep(100_000)
            } catch {
                let holders = (try? ChildProcess.run("/bin/fuser", ["-vm", mountPoint.path])) ?? "(fuser failed)"
                throw CrashChild.Failure(description: "\(error); held by: \(holders)")
            }
        }
        mountedState.withLock { $0 = false }
    }

    /// Cuts the power: shuts the file system down without committing its journal.
    func cutPower() throws {
        let descriptor = open(mountPoint.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { throw CrashChild.Failure(description: "open \(mountPoint.path): errno \(errno)") }
        defer { close(descriptor) }
        var flags = Self.goingFlagsNoLogFlush
        guard ioctl(descriptor, Self.shutdownRequest, &flags) == 0 else {
            throw CrashChild.Failure(description: "EXT4_IOC_SHUTDOWN failed: errno \(errno)")
        }
    }

    /// Copies the unmounted image to `target` (sparse), to keep the state a cut left.
    func copyImage(to target: URL) throws {
        _ = try ChildProcess.run("/bin/cp", ["--sparse=always", "-f", image.path, target.path])
    }

    /// Checks the unmounted image with `e2fsck -fn` (forced, changing nothing).
    ///
    /// After a cut the journal is not replayed yet (a read-only check cannot replay it), so e2fsck
    /// sees the file system as the cut left it on disk; after a mount and a clean unmount it must
    /// find nothing.
    func check() throws -> Check {
        let errorFile = folder.appendingPathComponent("e2fsck.err").path
        let child = try ChildProcess(
            "/sbin/e2fsck", ["-fn", image.path], captureOutput: true, errorFile: errorFile)
        let output = child.output?.readDataToEndOfFile() ?? Data()
        let status = child.waitBlocking()
        let errors = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
        let exitStatus = status & 0x7F == 0 ? (status >> 8) & 0xFF : 128 + status & 0x7F
        return Check(status: exitStatus, output: String(decoding: output, as: UTF8.self) + errors)
    }
}
