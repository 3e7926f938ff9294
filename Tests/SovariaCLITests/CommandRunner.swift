import Foundation
import SovariaTestServers

/// Runs the built `sovaria` executable (beside the test bundle) as a child process.
struct CommandRunner {
    /// How one run of `sovaria` ended.
    struct Run: Sendable {
        /// The exit status, or `nil` when a signal ended the process.
        let status: Int32?
        let output: String
        let errors: String

        /// The non-empty lines of standard output.
        var lines: [String] { output.split(separator: "\n").map(String.init) }
    }

    static var executable: String {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("sovaria").path
    }

    /// Runs `sovaria arguments…` to its end; standard input is `inputFile` or /dev/null. `program`
    /// is the `sovaria` to run: the built one unless a test copies it elsewhere.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], inputFile: String? = nil,
        program: String = executable
    )
        async throws -> Run
    {
        try await PostgresCluster.onThread {
            let child = try start(arguments, environment: environment, inputFile: inputFile, program: program)
            let output = child.process.output?.readDataToEndOfFile() ?? Data()
            return finish(child, output: output)
        }
    }

    /// A started `sovaria`, its standard error going to `errorFile`.
    struct Started: @unchecked Sendable {
        let process: ChildProcess
        let errorFile: String
    }

    static func start(
        _ arguments: [String], environment: [String: String] = [:], inputFile: String? = nil,
        program: String = executable
    ) throws
        -> Started
    {
        let errorFile = NSTemporaryDirectory() + "sovaria-cli-\(UUID().uuidString).err"
        // ChildProcess gives the child /dev/null as standard input: a shell redirects a file instead.
        var shellEnvironment = environment
        shellEnvironment["SOVARIA_TEST_INPUT"] = inputFile ?? "/dev/null"
        let process = try ChildProcess(
            "/bin/sh", ["-c", #"exec "$0" "$@" < "$SOVARIA_TEST_INPUT""#, program] + arguments,
            environment: shellEnvironment, captureOutput: true, errorFile: errorFile)
        return Started(process: process, errorFile: errorFile)
    }

    /// Waits for a started `sovaria` (blocking) and collects what it wrote.
    static func finish(_ started: Started, output: Data) -> Run {
        let raw = started.process.waitBlocking()
        let errors = (try? String(contentsOfFile: started.errorFile, encoding: .utf8)) ?? ""
        try? FileManager.default.removeItem(atPath: started.errorFile)
        let status: Int32? = raw & 0x7F == 0 ? (raw >> 8) & 0xFF : nil
        return Run(status: status, output: String(decoding: output, as: UTF8.self), errors: errors)
    }

    /// Reads standard output up to its first line containing `marker` (blocking).
    static func readUntil(_ marker: String, from started: Started) -> Data {
        var seen = Data()
        guard let output = started.process.output else { return seen }
        while !String(decoding: seen, as: UTF8.self).contains(marker) {
            let chunk = output.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        return seen
    }
}
