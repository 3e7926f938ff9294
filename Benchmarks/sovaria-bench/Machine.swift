import Foundation
import SovariaLMDB
import SovariaLevelDB
import SovariaSQLite
import SovariaSodium

/// What the numbers were measured on.
enum Machine {
    static func describe(options: BenchOptions) -> [String: String] {
        var info: [String: String] = [:]
        info["cores"] = "\(ProcessInfo.processInfo.activeProcessorCount)"
        info["memory"] = String(format: "%.0f GiB", Double(ProcessInfo.processInfo.physicalMemory) / 1_073_741_824)
        info["os"] = operatingSystem()
        info["swift"] = swiftVersion
        info["engines"] =
            "SQLite \(SQLiteLibrary.version), LMDB \(LMDBLibrary.version), LevelDB \(LevelDBLibrary.version), "
            + "libsodium \(SodiumLibrary.version)"
        info["workload"] =
            "\(options.scale.rawValue) run: \(options.keyCount) keys, \(options.valueBytes) B values, \(options.repeats) repeats"
        info["command"] = command
        if let commit { info["commit"] = commit }
        return info
    }

    /// How this run was started: `sovaria-bench` and its arguments.
    static var command: String {
        (["sovaria-bench"] + CommandLine.arguments.dropFirst()).joined(separator: " ")
    }

    /// The commit the bench was built from: `SOVARIA_COMMIT`, else `git rev-parse --short HEAD`
    /// in the current folder (with `+` when the tree has changes), else none.
    static let commit: String? = {
        if let given = ProcessInfo.processInfo.environment["SOVARIA_COMMIT"], !given.isEmpty { return given }
        func git(_ arguments: [String]) -> String? {
            output(of: "git", arguments)?.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        guard let head = git(["rev-parse", "--short", "HEAD"]), !head.isEmpty else { return nil }
        let changed = git(["status", "--porcelain", "--untracked-files=no"]).map { !$0.isEmpty } ?? false
        return head + (changed ? "+" : "")
    }()

    /// Runs `tool` (found on the `PATH`) with `arguments`; its standard output, or `nil` when it
    /// is missing or fails.
    static func output(of tool: String, _ arguments: [String]) -> String? {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [tool] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return nil }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return process.terminationStatus == 0 ? String(decoding: data, as: UTF8.self) : nil
    }

    private static func operatingSystem() -> String {
        if let release = try? String(contentsOfFile: "/etc/os-release", encoding: .utf8),
            let line = release.split(separator: "\n").first(where: { $0.hasPrefix("PRETTY_NAME=") })
        {
            return line.dropFirst("PRETTY_NAME=".count).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
        }
        return ProcessInfo.processInfo.operatingSystemVersionString
    }

    private static var swiftVersion: String {
        #if compiler(>=6.4)
            "6.4+"
        #elseif compiler(>=6.3)
            "6.3"
        #elseif compiler(>=6.2)
            "6.2"
        #else
            "6.0–6.1"
        #endif
    }
}
