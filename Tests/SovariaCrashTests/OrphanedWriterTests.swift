import Foundation
import SovariaTestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The writer outlives no test run: when the process that started it dies (a `swift test`
/// killed midway), it exits on its own instead of writing forever in the background.
@Suite struct OrphanedWriterTests {
    /// A writer of 100 million batches told that its parent is a process that has already exited
    /// (`SOVARIA_CRASH_PARENT`): what an orphan sees, its parent id no longer the one it started
    /// with. It must exit on its own, with status 3.
    ///
    /// The writer is this process's own child, waited for with `waitpid`: no pipe whose end of
    /// file another test's child could hold back. It exits in a fraction of a second; the limit
    /// is generous because in the full suite this test's task has waited minutes to run again
    /// after the wait returned (CI: 316 s for a one-minute limit).
    @Test(.timeLimit(.minutes(10)))
    func aWriterWhoseParentIsGoneExits() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sovaria-orphan-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let gone = try ChildProcess("/bin/true", [], captureOutput: false)
        try #require(ChildProcess.succeeded(try await gone.wait()))
        let writer = try ChildProcess(
            CrashChild.executable.path, ["batches-file", folder.path, "flushed", "100000000"],
            environment: ["SOVARIA_CRASH_PARENT": String(gone.pid), "SWIFT_BACKTRACE": "enable=no"],
            captureOutput: false)
        // Should the time limit cancel the test first, the writer is killed, which ends the wait.
        let status = try await withTaskCancellationHandler {
            try await writer.wait()
        } onCancel: {
            writer.send(SIGKILL)
        }
        #expect(!ChildProcess.killed(status, by: SIGKILL), "the orphaned writer did not exit on its own")
        #expect(status & 0x7F == 0 && (status >> 8) & 0xFF == 3, "status \(status)")
    }
}
