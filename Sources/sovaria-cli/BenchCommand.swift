import Foundation

/// `sovaria bench [ARGUMENTS…]`: runs `sovaria-bench` from the folder this `sovaria` is in, with the
/// arguments given (`--quick`, `--full`, `--postgres CONNINFO`…).
///
/// The bench is a package of its own (`Benchmarks/Package.swift`) that the library's build does not
/// make: `make bench` builds and runs it in release and is the documented way; this is the same
/// program for an operator who has put both binaries in one folder. Without one beside it, the
/// command says how to build and run the bench package.
enum BenchCommand {
    static let usage = "sovaria bench [--quick | --full] [sovaria-bench options…]"

    static func run(_ arguments: ArraySlice<String>) throws(CommandFailure) {
        let executable = ownExecutable()
        let bench = executable.deletingLastPathComponent().appendingPathComponent("sovaria-bench").path
        guard FileManager.default.isExecutableFile(atPath: bench) else {
            throw CommandFailure(
                .other,
                "sovaria-bench is not next to this sovaria (\(bench)). The benchmark is a package of its own: "
                    + "run `make bench` from the source folder, or "
                    + "`swift run -c release --package-path Benchmarks sovaria-bench \(arguments.joined(separator: " "))`."
            )
        }
        if executable.path.contains("/debug/") {
            Terminal.printError("sovaria: note: this is a debug build; figures are only comparable from `make bench`.")
        }
        let argv = [bench] + arguments
        var cArguments = argv.map { strdup($0) } + [nil]
        execv(bench, &cArguments)
        // execv returns only on failure.
        let reason = String(cString: strerror(errno))
        throw CommandFailure(.other, "Could not start \(bench): \(reason).")
    }

    /// This program's file, symbolic links resolved: on Linux the kernel's `/proc/self/exe`, on
    /// Apple platforms `Bundle.main.executableURL`; else (or when those say nothing) the first
    /// argument resolved as a shell would (``executable(named:currentDirectory:searchPath:)``).
    static func ownExecutable() -> URL {
        #if os(Linux)
            if let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
                return URL(fileURLWithPath: target).resolvingSymlinksInPath()
            }
        #else
            if let url = Bundle.main.executableURL { return url.resolvingSymlinksInPath() }
        #endif
        let named = executable(
            named: CommandLine.arguments.first ?? "sovaria",
            currentDirectory: FileManager.default.currentDirectoryPath,
            searchPath: ProcessInfo.processInfo.environment["PATH"] ?? "")
        return (named ?? URL(fileURLWithPath: CommandLine.arguments.first ?? "sovaria")).resolvingSymlinksInPath()
    }

    /// The file a program started as `name` runs from, as a shell finds it: a name with a `/` is a
    /// path (relative to `currentDirectory`), else the first executable file of that name in the
    /// `:`-separated `searchPath` (an empty entry is the current folder). `nil` when none is.
    static func executable(named name: String, currentDirectory: String, searchPath: String) -> URL? {
        let base = URL(fileURLWithPath: currentDirectory, isDirectory: true)
        if name.contains("/") {
            return URL(fileURLWithPath: name, relativeTo: base).standardizedFileURL
        }
        for folder in searchPath.split(separator: ":", omittingEmptySubsequences: false) {
            let folderURL = folder.isEmpty ? base : URL(fileURLWithPath: String(folder), relativeTo: base)
            let candidate = folderURL.appendingPathComponent(name).standardizedFileURL
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isFolder), !isFolder.boolValue,
                FileManager.default.isExecutableFile(atPath: candidate.path)
            {
                return candidate
            }
        }
        return nil
    }
}
