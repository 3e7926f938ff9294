import Foundation
import SovariaTestKit
import Testing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The test kit's folders leave nothing behind, however deep the tree a test wrote in them.
@Suite struct TemporaryFolderTests {
    /// Makes `depth` nested folders of 200-byte names under `root`, a file in the deepest: a
    /// tree whose paths pass `PATH_MAX`, as a store made in a deeply nested folder makes. Made a
    /// folder at a time (a whole path that long cannot be named). With `link`: a symbolic link to
    /// it beside the file.
    static func makeDeepTree(under root: URL, depth: Int, link: URL? = nil) throws {
        var folder = open(root.path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        try #require(folder >= 0)
        defer { close(folder) }  // the deepest one opened
        let name = String(repeating: "d", count: 200)
        for _ in 0..<depth {
            try #require(mkdirat(folder, name, 0o700) == 0, "mkdirat: errno \(errno)")
            let next = openat(folder, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
            try #require(next >= 0)
            close(folder)
            folder = next
        }
        let file = openat(folder, "value", O_CREAT | O_WRONLY | O_CLOEXEC, 0o600)
        try #require(file >= 0)
        close(file)
        if let link { try #require(symlinkat(link.path, folder, "link") == 0, "symlinkat: errno \(errno)") }
    }

    @Test func aTreeDeeperThanAPathCanNameIsRemovedWithItsFolder() throws {
        var folder: TemporaryFolder? = try TemporaryFolder()
        let url = try #require(folder?.url)
        // A folder outside, linked to from the deepest folder: the removal must not follow it.
        let outside = try TemporaryFolder()
        try Data("kept".utf8).write(to: outside.child("file"))
        // 45 × 201 bytes: past Linux's 4,096 and the 8,192 Darwin's removal takes.
        try Self.makeDeepTree(under: url, depth: 45, link: outside.url)
        // What the folder once did, and failed at: a removal by whole paths.
        #expect(throws: (any Error).self) { try FileManager.default.removeItem(at: url) }

        folder = nil

        #expect(!FileManager.default.fileExists(atPath: url.path))
        #expect(FileManager.default.fileExists(atPath: outside.child("file").path), "a link is not followed")
    }

    @Test func aFolderWithFilesAndFoldersIsRemoved() throws {
        var folder: TemporaryFolder? = try TemporaryFolder()
        let url = try #require(folder?.url)
        try FileManager.default.createDirectory(
            at: url.appendingPathComponent("a/b"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: url.appendingPathComponent("a/b/c"))
        try Data("y".utf8).write(to: url.appendingPathComponent("d"))

        folder = nil

        #expect(!FileManager.default.fileExists(atPath: url.path))
    }
}
