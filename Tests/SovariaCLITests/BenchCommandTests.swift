import Foundation
import Testing

@testable import sovaria

/// `sovaria bench` hands its arguments to the sovaria-bench beside it, and without one says how to
/// run the Benchmarks package (the library's build does not make sovaria-bench).
@Suite struct BenchCommandTests {
    /// A copy of the built `sovaria` in `<folder>/debug/` (a debug build, as the path says), with a
    /// stand-in `sovaria-bench` beside it when `withBench`: a script that prints its arguments.
    static func copiedTool(in folder: Fixtures.Folder, withBench: Bool) throws -> String {
        let bin = folder.file("debug")
        try FileManager.default.createDirectory(atPath: bin, withIntermediateDirectories: true)
        try writeExecutable(try Data(contentsOf: URL(fileURLWithPath: CommandRunner.executable)), to: bin + "/sovaria")
        if withBench {
            let bench = bin + "/sovaria-bench"
            try writeExecutable(Data("#!/bin/sh\necho \"sovaria-bench ran with: $*\"\n".utf8), to: bench)
        }
        return bin + "/sovaria"
    }

    /// Writes `bytes` to a new executable file at `path` through a descriptor opened close-on-exec:
    /// a child another test starts meanwhile must not inherit it open for writing, or running the
    /// file fails with "Text file busy" (ETXTBSY).
    static func writeExecutable(_ bytes: Data, to path: String) throws {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o755)
        guard descriptor >= 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path]) }
        let written = bytes.withUnsafeBytes { buffer in
            var offset = 0
            while offset < buffer.count {
                let count = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        guard close(descriptor) == 0, written else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: path])
        }
    }

    @Test func runsTheBenchmarkBesideIt() async throws {
        let folder = try Fixtures.Folder()
        let tool = try Self.copiedTool(in: folder, withBench: true)
        let run = try await CommandRunner.run(["bench", "--quick", "--section", "store"], program: tool)
        #expect(run.status == 0, "\(run)")
        #expect(run.output.contains("sovaria-bench ran with: --quick --section store"), "\(run)")
        #expect(run.errors.contains("debug build"), "a debug build says its figures are not comparable")
    }

    @Test func saysHowToRunTheBenchmarkPackageWithoutOneBesideIt() async throws {
        let folder = try Fixtures.Folder()
        let tool = try Self.copiedTool(in: folder, withBench: false)
        let run = try await CommandRunner.run(["bench", "--quick"], program: tool)
        #expect(run.status == 1, "\(run)")
        #expect(run.errors.contains("sovaria-bench is not next to this sovaria"), "\(run)")
        #expect(run.errors.contains("make bench"), "\(run)")
        #expect(
            run.errors.contains("swift run -c release --package-path Benchmarks sovaria-bench --quick"), "\(run)")
    }

    /// Where `/proc/self/exe` is not (Apple platforms without a bundle answer): the first argument
    /// resolved as a shell would, by path or through `PATH`.
    @Test func findsItsOwnFileFromTheNameItWasStartedBy() throws {
        let folder = try Fixtures.Folder()
        let bin = folder.file("bin")
        try FileManager.default.createDirectory(atPath: bin + "/sovaria-dir", withIntermediateDirectories: true)
        let tool = bin + "/sovaria"
        try Data("#!/bin/sh\n".utf8).write(to: URL(fileURLWithPath: tool))
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: tool)
        let plain = folder.file("plain")
        try Data().write(to: URL(fileURLWithPath: plain))

        func found(_ name: String, in directory: String = "/", path: String) -> String? {
            BenchCommand.executable(named: name, currentDirectory: directory, searchPath: path)?.path
        }
        #expect(found(tool, path: "") == tool, "an absolute path is itself")
        #expect(found("bin/sovaria", in: folder.path, path: "") == tool, "a relative path from the current folder")
        #expect(found("./bin/../bin/sovaria", in: folder.path, path: "") == tool)
        #expect(found("sovaria", path: "/nonexistent:\(bin)") == tool, "the first PATH entry that has it")
        #expect(found("sovaria", in: bin, path: "/nonexistent::") == tool, "an empty PATH entry is the current folder")
        #expect(found("sovaria", path: "/nonexistent") == nil)
        #expect(found("plain", path: folder.path) == nil, "a file that is not executable is not it")
        #expect(found("sovaria-dir", path: bin) == nil, "a folder is not it")
    }

    @Test func findsItsOwnFile() {
        let own = BenchCommand.ownExecutable()
        #expect(own.lastPathComponent != "exe", "the program's file, not the kernel's link: \(own.path)")
        #expect(FileManager.default.isExecutableFile(atPath: own.path), "\(own.path)")
    }
}
