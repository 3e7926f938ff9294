import Foundation
import SovariaTestKit
import SovariaTestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The sweep that takes away the disks a killed test run left mounted (``TestMounts``).
@Suite struct TestMountsTests {
    /// A tmpfs mounted on a mount folder in `root` named for `pid`, as a disk of that process
    /// would be. (In a folder of the test's own: the disks other tests make meanwhile sweep the
    /// temporary directory.)
    static func mountedFolder(of pid: pid_t, in root: URL) throws -> URL {
        let folder = root.appendingPathComponent(TestMounts.folderName(pid: pid), isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        _ = try ChildProcess.run("/bin/mount", ["-t", "tmpfs", "-o", "size=65536", "tmpfs", folder.path])
        try Data("left".utf8).write(to: folder.appendingPathComponent("file"))
        return folder
    }

    /// A process that ran and is gone: its pid, reaped.
    static func finishedProcess() throws -> pid_t {
        let child = try ChildProcess("/bin/true", [], captureOutput: false)
        _ = child.waitBlocking()
        return child.pid
    }

    @Test func aKilledRunsDiskIsUnmountedAndRemovedByTheNextSweep() throws {
        try #require(getuid() == 0, "mounts a tmpfs and needs root (make test runs as root in CI)")
        let root = try TemporaryFolder()
        let gone = try Self.mountedFolder(of: try Self.finishedProcess(), in: root.url)
        defer {
            // Should the sweep leave it mounted, it must not stay so; the root lives until here.
            _ = try? ChildProcess.run("/bin/umount", ["-l", gone.path])
            withExtendedLifetime(root) {}
        }
        try #require(TestMounts.mountPoints(under: gone.path) == [gone.path])

        let removed = TestMounts.sweepLeftovers(in: root.url)

        #expect(removed.map(\.path) == [gone.resolvingSymlinksInPath().path])
        #expect(TestMounts.mountPoints(under: gone.path).isEmpty)
        #expect(!FileManager.default.fileExists(atPath: gone.path))
    }

    @Test func aRunningProcesssDiskIsLeftMountedAndWhole() throws {
        try #require(getuid() == 0, "mounts a tmpfs and needs root (make test runs as root in CI)")
        let root = try TemporaryFolder()
        let ours = try Self.mountedFolder(of: getpid(), in: root.url)
        defer {
            _ = try? ChildProcess.run("/bin/umount", ["-l", ours.path])
            try? FileManager.default.removeItem(at: ours)
            withExtendedLifetime(root) {}
        }

        let removed = TestMounts.sweepLeftovers(in: root.url)

        #expect(removed.isEmpty)
        #expect(TestMounts.mountPoints(under: ours.path) == [ours.path])
        #expect(FileManager.default.fileExists(atPath: ours.appendingPathComponent("file").path))
    }

    @Test func aDiskOfAnotherPidNamespaceIsLeftAlone() throws {
        try #require(getuid() == 0, "mounts a tmpfs and needs root (make test runs as root in CI)")
        let root = try TemporaryFolder()
        // A process that ran here and is gone, named as if of another namespace: its pid there
        // says nothing about a process here.
        let pid = try Self.finishedProcess()
        let name = "\(TestMounts.namePrefix)\(pid)-\(TestMounts.pidNamespace &+ 1)-\(UUID().uuidString)"
        let other = root.url.appendingPathComponent(name, isDirectory: true)
        try FileManager.default.createDirectory(at: other, withIntermediateDirectories: true)
        try Data("theirs".utf8).write(to: other.appendingPathComponent("file"))

        let removed = TestMounts.sweepLeftovers(in: root.url)

        #expect(removed.isEmpty)
        #expect(FileManager.default.fileExists(atPath: other.appendingPathComponent("file").path))
    }

    @Test func aMountPastTheFirst4KBOfTheMountTableIsFound() throws {
        try #require(getuid() == 0, "mounts a tmpfs and needs root (make test runs as root in CI)")
        let root = try TemporaryFolder()
        var mounted: [String] = []
        defer {
            for path in mounted.reversed() { _ = try? ChildProcess.run("/bin/umount", ["-l", path]) }
            withExtendedLifetime(root) {}
        }
        // About 100 bytes of the table each: the last is well past its first 8 KB.
        for index in 0..<90 {
            let path = root.child("disk-\(index)").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            _ = try ChildProcess.run("/bin/mount", ["-t", "tmpfs", "-o", "size=65536", "tmpfs", path])
            mounted.append(path)
        }

        #expect(TestMounts.mountPoints(under: root.url.path) == mounted)
    }

    @Test func aFolderNameTellsItsProcessAndNamespace() {
        let name = TestMounts.folderName(pid: 4242)
        #expect(TestMounts.owner(ofFolderNamed: name)?.pid == 4242)
        #expect(TestMounts.owner(ofFolderNamed: name)?.namespace == TestMounts.pidNamespace)
        #expect(TestMounts.owner(ofFolderNamed: "sovaria-test-6F1C0D2E-1111-2222-3333-444455556666") == nil)
        #expect(TestMounts.owner(ofFolderNamed: "sovaria-mount-x-1-6F1C0D2E") == nil)
        #expect(TestMounts.owner(ofFolderNamed: "sovaria-mount-77-6F1C0D2E") == nil)
        #expect(TestMounts.owner(ofFolderNamed: "sovaria-mount-77") == nil)
    }
}
