import Foundation

/// `sovaria bench [ARGUMENTS…]`: runs `sovaria-bench` (the benchmark product) from the folder this
/// `sovaria` was built into, with the arguments given (`--quick`, `--full`, `--postgres CONNINFO`…).
///
/// `make bench` builds both in release and is the documented way; this is the same program for an
/// operator who has the binaries only.
enum BenchCommand {
    static let usage = "sovaria bench [--quick | --full] [sovaria-bench options…]"

    static func run(_ arguments: ArraySlice<String>) throws(CommandFailure) {
        let executable = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        let bench = executable.deletingLastPathComponent().appendingPathComponent("sovaria-bench").path
        guard FileManager.default.isExecutableFile(atPath: bench) else {
            throw CommandFailure(
                .other,
                "sovaria-bench is not next to this sovaria (\(bench)). Run `make bench`, or build it with "
                    + "`swift build -c release --product sovaria-bench`.")
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
}
