import Foundation
import SovariaTestServers
import Testing

/// Progress on standard error as a person sees it: redrawn in place on a terminal (a
/// pseudo-terminal from util-linux `script`), plain lines when piped.
@Suite struct ProgressTests {
    private func loadedSource(in folder: Fixtures.Folder) async throws -> String {
        let source = Fixtures.url("lmdb", in: folder, name: "source")
        let load = try await CommandRunner.run(["load", source], inputFile: try Fixtures.inputFile(in: folder))
        try #require(load.status == 0)
        return source
    }

    @Test func redrawsOneLineOnATerminalAndEndsWithEveryEntry() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/script"), "needs util-linux script")
        let folder = try Fixtures.Folder()
        let source = try await loadedSource(in: folder)
        let target = Fixtures.url("sqlite", in: folder, name: "target")
        // One entry per page, each synced: long enough for several redraws (one every 200 ms).
        let command = "\(CommandRunner.executable) migrate --from \(source) --to \(target) --batch 1"
        let screen = try await PostgresCluster.onThread {
            try ChildProcess.run("/usr/bin/script", ["-qec", command, "/dev/null"])
        }
        // The terminal turns each "\n" into "\r\n": the progress is everything before the first one.
        let progress = try #require(screen.components(separatedBy: "\r\n").first)
        let redraws = progress.components(separatedBy: "\r").filter { !$0.isEmpty }
        #expect(!redraws.isEmpty)
        #expect(redraws.allSatisfy { $0.hasPrefix("migrate") && $0.hasSuffix("\u{1B}[K") }, "\(redraws)")
        #expect(redraws.last?.hasPrefix("migrate 100% [####################] 2000/2000 entries") == true)
        #expect(redraws.last?.contains("done in ") == true)
        // Once the count beside the copy is in, the lines show how far and how long: a percentage
        // that never goes back, and the time left.
        let percents = redraws.compactMap { line in
            line.split(separator: "%").first.flatMap {
                Int($0.dropFirst("migrate".count).trimmingCharacters(in: .whitespaces))
            }
        }
        #expect(percents.count >= 2, "\(redraws)")
        #expect(percents == percents.sorted())
        #expect(redraws.dropLast().contains { $0.contains("ETA ") }, "\(redraws)")
        #expect(screen.contains("copied 2000"))
    }

    /// The screen a person sees at the end, from tmux: one progress line, at 100%, then the summary.
    @Test func leavesOneFinishedLineOnTheScreen() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: "/usr/bin/tmux"), "needs tmux")
        let folder = try Fixtures.Folder()
        let source = try await loadedSource(in: folder)
        let target = Fixtures.url("leveldb", in: folder, name: "target")
        let server = "sovaria-test-\(UUID().uuidString)"
        let channel = "done"
        // The pane stays open (`read`) after the command so its screen can be captured; tmux's
        // wait-for returns at once when the command signalled before the test waits.
        let command =
            "\(CommandRunner.executable) migrate --from \(source) --to \(target) --batch 1; /usr/bin/tmux -L \(server) wait-for -S \(channel); read"
        let screen = try await PostgresCluster.onThread {
            _ = try ChildProcess.run(
                "/usr/bin/tmux", ["-L", server, "new-session", "-d", "-x", "120", "-y", "20", command])
            defer { _ = try? ChildProcess.run("/usr/bin/tmux", ["-L", server, "kill-server"]) }
            _ = try ChildProcess.run("/usr/bin/tmux", ["-L", server, "wait-for", channel])
            return try ChildProcess.run("/usr/bin/tmux", ["-L", server, "capture-pane", "-p"])
        }
        let lines = screen.split(separator: "\n").map(String.init)
        let progress = lines.filter { $0.hasPrefix("migrate ") }
        #expect(progress.count == 1, "one line, redrawn in place: \(screen)")
        #expect(progress.first?.hasPrefix("migrate 100% [####################] 2000/2000 entries") == true, "\(screen)")
        #expect(lines.contains { $0.hasPrefix("migrate: read 2000 entries, copied 2000") }, "\(screen)")
    }

    @Test func printsPlainLinesWhenPiped() async throws {
        let folder = try Fixtures.Folder()
        let source = try await loadedSource(in: folder)
        let run = try await CommandRunner.run(
            ["migrate", "--from", source, "--to", Fixtures.url("leveldb", in: folder, name: "target")])
        #expect(run.status == 0)
        #expect(!run.errors.contains("\r"))
        #expect(!run.errors.contains("\u{1B}"))
        #expect(run.errors.hasSuffix("migrate: read 2000 entries, copied 2000, kept 0 the target already had.\n"))
    }
}
