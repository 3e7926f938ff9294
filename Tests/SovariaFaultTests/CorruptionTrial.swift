import Foundation
import Sovaria
import SovariaTestKit
import SovariaTestServers
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// How a store's reader fared with one damaged file: what `sovaria-crash-writer read-<engine>`
/// printed, held against the fixture's expectations.
struct CorruptionTrial: Sendable {
    /// The child died of a signal or failed: `nil` when it ran to its end.
    var crash: String?
    /// The open threw: its code and message.
    var openError: (code: String, message: String)?
    /// Reads that returned the value last written.
    var intact = 0
    /// Reads that returned a value the key held at an earlier commit (newest writes lost).
    var rolledBack = 0
    /// Reads that returned `nil` for a key that holds a value (and never was absent).
    var missing = 0
    /// Reads that threw `.corrupt`, with one of their messages.
    var detected = 0
    var detectedMessage: String?
    /// Reads that threw another code.
    var otherErrors: [String] = []
    /// Reads that returned a value the key never held: garbage, or `sameAsAnotherKey` of them
    /// another key's value.
    var wrong = 0
    var sameAsAnotherKey = 0
    /// Entries of the full scan that are neither a key's current nor an older value, and the scan's
    /// error, if it threw.
    var scanWrong = 0
    var scanError: (code: String, message: String)?
    /// What each read of a key index found: `intact`, `rolledBack`, `missing`, `wrong` or the error's code.
    var outcomes: [Int: String] = [:]

    /// One word for the matrix: the worst thing the reader saw.
    var verdict: String {
        if let crash { return "CRASH (\(crash))" }
        if let openError { return openError.code == "corrupt" ? "open .corrupt" : "open .\(openError.code)" }
        if sameAsAnotherKey > 0 { return "ANOTHER KEY'S VALUE" }
        if wrong > 0 || scanWrong > 0 { return "undetected: wrong value" }
        if missing > 0 { return "undetected: entry lost" }
        if rolledBack > 0 { return "undetected: rolled back" }
        if let other = otherErrors.first { return "read .\(other)" }
        if detected > 0 { return "read .corrupt" }
        if let scanError { return "scan .\(scanError.code)" }
        return "no effect"
    }

    /// Runs the reader child on `store` and judges what it read.
    static func run(engine: String, store: URL, fixture: CorruptionFixture) async throws -> CorruptionTrial {
        let (status, output) = try await PostgresCluster.onThread { () throws -> (Int32, String) in
            let child = try ChildProcess(
                readerExecutable.path, ["read-\(engine)", store.path, "synced", "\(CorruptionFixture.count)"],
                environment: ["SWIFT_BACKTRACE": "enable=no"], captureOutput: true)
            let data = child.output?.readDataToEndOfFile() ?? Data()
            return (child.waitBlocking(), String(decoding: data, as: UTF8.self))
        }
        var trial = CorruptionTrial()
        let lines = output.split(separator: "\n", omittingEmptySubsequences: true)
        if !ChildProcess.succeeded(status) || (lines.last != "done" && !output.hasPrefix("open-error")) {
            trial.crash = status & 0x7F != 0 ? "signal \(status & 0x7F)" : "exit \((status >> 8) & 0xFF)"
            return trial
        }
        let allValues = Set(fixture.expected.flatMap { [$0.current] + $0.older }.compactMap { $0 })
        for line in lines {
            let fields = line.split(separator: " ", maxSplits: 4, omittingEmptySubsequences: false).map(String.init)
            switch fields[0] {
            case "open-error":
                trial.openError = (fields[1], fields.dropFirst(2).joined(separator: " "))
            case "get":
                let expected = fixture.expected[Int(fields[1])!]
                switch fields[2] {
                case "value":
                    trial.outcomes[Int(fields[1])!] = trial.judge(
                        value: unhex(fields[3]), expected, allValues: allValues)
                case "nil":
                    trial.outcomes[Int(fields[1])!] = trial.judge(value: nil, expected, allValues: allValues)
                default:
                    let (code, message) = (fields[3], fields.count > 4 ? fields[4] : "")
                    trial.outcomes[Int(fields[1])!] = code
                    if code == "corrupt" {
                        trial.detected += 1
                        trial.detectedMessage = trial.detectedMessage ?? message
                    } else {
                        trial.otherErrors.append("\(code) (\(message))")
                    }
                }
            case "scan":
                let key = unhex(fields[1])
                let index = key.hasPrefix("sov:k:") ? Int(key.dropFirst(6)).map { $0 - 1_000 } : nil
                guard let index, fixture.expected.indices.contains(index) else {
                    trial.scanWrong += 1
                    continue
                }
                let expectation = fixture.expected[index]
                let value = unhex(fields[2])
                if value != expectation.current && !expectation.older.contains(value) { trial.scanWrong += 1 }
            case "scan-error":
                trial.scanError = (fields[1], fields.dropFirst(2).joined(separator: " "))
            default:
                break
            }
        }
        return trial
    }

    private mutating func judge(
        value: String?, _ expected: CorruptionFixture.Expectation, allValues: Set<String>
    ) -> String {
        if value == expected.current {
            intact += 1
            return "intact"
        } else if expected.older.contains(value) {
            rolledBack += 1
            return "rolledBack"
        } else if let value {
            wrong += 1
            if allValues.contains(value) { sameAsAnotherKey += 1 }
            return "wrong"
        } else {
            missing += 1
            return "missing"
        }
    }

    /// `sovaria-crash-writer`, built beside this test bundle.
    static var readerExecutable: URL {
        URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("sovaria-crash-writer")
    }

    private static func unhex(_ text: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count / 2)
        var high: UInt8?
        for digit in text.utf8 {
            let nibble = digit <= 0x39 ? digit &- 0x30 : digit &- 0x57
            if let first = high {
                bytes.append(first << 4 | nibble)
                high = nil
            } else {
                high = nibble
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
