import Foundation

/// One line on standard error that says what the run is doing now.
final class Progress: @unchecked Sendable {  // used from the benchmark's one task only
    private var lastLength = 0
    private let enabled = isatty(STDERR_FILENO) != 0 || ProcessInfo.processInfo.environment["SOVARIA_PROGRESS"] != nil

    func update(_ text: String) {
        if enabled {
            let padding = String(repeating: " ", count: max(0, lastLength - text.count))
            FileHandle.standardError.write(Data("\r\(text)\(padding)".utf8))
            lastLength = text.count
        } else {
            FileHandle.standardError.write(Data("… \(text)\n".utf8))
        }
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\r\(String(repeating: " ", count: lastLength))\r".utf8)) }
    }
}
