import Foundation
import Testing

/// The writer outlives no test run: when the process that started it dies (a `swift test`
/// killed midway), it exits on its own instead of writing forever in the background.
@Suite struct OrphanedWriterTests {
    /// A shell starts a writer of 100 million batches in the background and exits at once,
    /// leaving the writer an orphan. The writer holds the pipe's write end as its output, so the
    /// read below ends only when the writer has exited.
    @Test(.timeLimit(.minutes(1)))
    func aWriterWhoseParentDiedExits() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sovaria-orphan-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let shell = Process()
        shell.executableURL = URL(fileURLWithPath: "/bin/sh")
        shell.arguments = [
            "-c", #"SOVARIA_CRASH_PARENT=$$ "$0" batches-file "$1" flushed 100000000 2>/dev/null & echo $!"#,
            CrashChild.executable.path,
            folder.path,
        ]
        let output = Pipe()
        shell.standardOutput = output
        try shell.run()
        let reader = output.fileHandleForReading
        // The shell's one line: the writer's process id.
        let pid = try await Self.blocking { Int32(String(decoding: reader.availableData, as: UTF8.self).trimmed) }
        let writer = try #require(pid)
        // The writer prints nothing for batches: the end of file means it has exited. Should the
        // time limit cancel the test first, the writer is killed, which ends the read.
        let rest = try await withTaskCancellationHandler {
            try await Self.blocking { reader.readDataToEndOfFile() }
        } onCancel: {
            kill(writer, SIGKILL)
        }
        #expect(!Task.isCancelled, "the orphaned writer \(writer) did not exit on its own")
        #expect(rest.isEmpty)
    }

    /// Runs a blocking read on a thread of its own, off Swift's cooperative threads.
    static func blocking<Value: Sendable>(_ body: @escaping @Sendable () -> Value) async throws -> Value {
        await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }
}

extension String {
    fileprivate var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
