import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `sovaria-crash-writer` and kills it with SIGKILL after a number of acknowledgements.
enum CrashChild {
    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    /// The writer binary, built beside this test bundle (or named by `SOVARIA_CRASH_WRITER`).
    static var executable: URL {
        if let path = ProcessInfo.processInfo.environment["SOVARIA_CRASH_WRITER"] { return URL(fileURLWithPath: path) }
        let testBinary = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        return testBinary.deletingLastPathComponent().appendingPathComponent("sovaria-crash-writer")
    }

    /// Starts the writer, reads its acknowledgements, kills it after `killAfterAcknowledgements`
    /// of them, and returns every acknowledgement it printed before it died.
    static func run(
        engine: String, path: String, durability: String, first: Int, killAfterAcknowledgements: Int
    ) async throws -> Acknowledged {
        try await withCheckedThrowingContinuation { continuation in
            // Blocking pipe reads: kept off Swift's cooperative threads.
            DispatchQueue.global().async {
                continuation.resume(
                    with: Result {
                        try runBlocking(
                            engine: engine, path: path, durability: durability, first: first,
                            killAfter: killAfterAcknowledgements)
                    })
            }
        }
    }

    private static func runBlocking(
        engine: String, path: String, durability: String, first: Int, killAfter: Int
    ) throws -> Acknowledged {
        let process = Process()
        process.executableURL = executable
        process.arguments = [engine, path, durability, String(first)]
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let reader = output.fileHandleForReading
        var acknowledged = Acknowledged()
        var pending = Data()
        var killed = false
        var lastWasSet = false
        var lastSetSeen: UInt64 = 0
        var batchNanoseconds: UInt64 = 100_000  // how long a batch call takes, measured from the acks
        while true {
            let chunk = reader.availableData  // blocks until data or end of file
            if chunk.isEmpty { break }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                let parts = line.split(separator: " ")
                guard parts.count == 2, let index = Int(parts[1]) else { continue }
                if parts[0] == "set" { acknowledged.sets.insert(index) }
                if parts[0] == "batch" { acknowledged.batches.insert(index) }
                lastWasSet = parts[0] == "set"
                let now = DispatchTime.now().uptimeNanoseconds
                if lastWasSet { lastSetSeen = now } else if lastSetSeen > 0 { batchNanoseconds = now - lastSetSeen }
            }
            // Kill while a batch is in flight (right after a set was acknowledged), at a random
            // point of it: the moment a torn or half-applied batch would show.
            if !killed, lastWasSet, acknowledged.sets.count + acknowledged.batches.count >= killAfter {
                spin(nanoseconds: UInt64.random(in: 0...batchNanoseconds))
                kill(process.processIdentifier, SIGKILL)
                killed = true  // keep reading: lines already in the pipe were acknowledged too
            }
        }
        process.waitUntilExit()
        guard killed, process.terminationReason == .uncaughtSignal, process.terminationStatus == SIGKILL else {
            let message = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            throw Failure(description: "crash writer exited on its own (\(process.terminationStatus)): \(message)")
        }
        return acknowledged
    }

    /// Busy-waits: picks a random kill moment inside a call, which a sleep is too coarse for.
    private static func spin(nanoseconds: UInt64) {
        let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
        while DispatchTime.now().uptimeNanoseconds < end {}
    }
}
