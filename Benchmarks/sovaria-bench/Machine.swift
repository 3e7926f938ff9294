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
        return info
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
