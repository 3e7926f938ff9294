import Foundation
import SovariaTestServers
import Testing

/// A migrate into a target on a small tmpfs: exit 5, then `--resume` once there is space.
///
/// Mounts a tmpfs, so it needs root, as Tests/SovariaFaultTests does (CI runs tests as root).
@Suite struct FullDiskTests {
    @Test func fullTargetExitsFiveAndResumesOnceThereIsSpace() async throws {
        let folder = try Fixtures.Folder()
        let source = Fixtures.url("leveldb", in: folder, name: "source")
        let load = try await CommandRunner.run(["load", source], inputFile: try Fixtures.inputFile(in: folder))
        try #require(load.status == 0)
        // About 600 KB of keys and values: more than the disk holds.
        let disk = try SmallDisk(sizeBytes: 256 * 1_024)
        let target = "sqlite:" + disk.child("target.sqlite").path

        let full = try await CommandRunner.run(["migrate", "--from", source, "--to", target, "--batch", "100"])
        #expect(full.status == 5, "\(full.errors)")
        #expect(full.errors.contains("disk is full"))
        #expect(full.errors.contains("MiB of keys and values were still to copy"))
        #expect(full.errors.contains("--resume"))

        try disk.resize(toBytes: 16 * 1_024 * 1_024)
        let resumed = try await CommandRunner.run(["migrate", "--from", source, "--to", target, "--resume"])
        #expect(resumed.status == 0, "\(resumed.errors)")
        let sourceDump = try await CommandRunner.run(["dump", source])
        let targetDump = try await CommandRunner.run(["dump", target])
        #expect(Data(targetDump.output.utf8) == Data(sourceDump.output.utf8))
    }
}
