import Foundation
import SovariaTestServers

#if canImport(Glibc)
    import Glibc
#endif

/// Runs `sovaria-crash-writer` and kills it with SIGKILL (or cuts its power, see
/// ``run(engine:path:durability:first:killAfterAcknowledgements:environment:interrupt:)``) after a number of
/// acknowledgements.
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
    ///
    /// `environment` is added to the child's (`SWIFT_BACKTRACE=enable=no` always is). `interrupt`,
    /// when given, ends the child at that moment instead of SIGKILL alone, on the thread reading
    /// its output (the power-cut tests stop the child, shut its file system down, then kill it).
    /// The child may then end on its own before the SIGKILL reaches it: a stop signal does not
    /// reach a thread blocked in the kernel at once, and another thread can meet the shut-down
    /// file system's I/O errors first. That is recorded in ``Acknowledged/exitMessage``; ending
    /// on its own before the interrupt still throws.
    static func run(
        engine: String, path: String, durability: String, first: Int, killAfterAcknowledgements: Int,
        environment: [String: String] = [:], interrupt: (@Sendable (ChildProcess) -> Void)? = nil
    ) async throws -> Acknowledged {
        try await withCheckedThrowingContinuation { continuation in
            // Blocking pipe reads for as long as the child runs: on a thread of their own, off
            // Swift's cooperative threads and off Dispatch's pool, whose few threads the stores
            // under test (file, SQLite, LMDB) need for their own work meanwhile.
            let reader = Thread {
                continuation.resume(
                    with: Result {
                        try runBlocking(
                            engine: engine, path: path, durability: durability, first: first,
                            killAfter: killAfterAcknowledgements, environment: environment, interrupt: interrupt)
                    })
            }
            reader.start()
        }
    }

    private static func runBlocking(
        engine: String, path: String, durability: String, first: Int, killAfter: Int,
        environment: [String: String], interrupt: ((ChildProcess) -> Void)?
    ) throws -> Acknowledged {
        let errorFile = NSTemporaryDirectory() + "sovaria-crash-\(UUID().uuidString).err"
        defer { try? FileManager.default.removeItem(atPath: errorFile) }
        // A child that dies of an error would otherwise start swift-backtrace, which keeps its
        // files (and a power-cut test's mount) busy for a long time.
        let process = try ChildProcess(
            executable.path, [engine, path, durability, String(first)],
            environment: environment.merging(["SWIFT_BACKTRACE": "enable=no"]) { _, new in new },
            captureOutput: true, errorFile: errorFile)
        guard let reader = process.output else { throw Failure(description: "no output pipe") }
        var acknowledged = Acknowledged()
        var pending = Data()
        var killed = false
        var callInFlight = false
        var callStarted: UInt64 = 0
        var callNanoseconds: UInt64 = 100_000  // how long the call after a kill point takes, measured from the lines
        while true {
            let chunk = reader.availableData  // blocks until data or end of file
            if chunk.isEmpty { break }
            pending.append(chunk)
            while let newline = pending.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: pending[pending.startIndex..<newline], as: UTF8.self)
                pending.removeSubrange(pending.startIndex...newline)
                let parts = line.split(separator: " ")
                guard parts.count >= 2, let index = Int(parts[1]) else { continue }
                switch parts[0] {
                case "set": acknowledged.sets.insert(index)
                case "batch": acknowledged.batches.insert(index)
                default:
                    let sequence = parts.count > 2 ? UInt64(parts[2]) : nil
                    acknowledged.queue.append(QueueEvent(kind: String(parts[0]), index: index, sequence: sequence))
                }
                let now = DispatchTime.now().uptimeNanoseconds
                if callInFlight { callNanoseconds = now - callStarted }
                // A set is followed by a batch call; the queue, file-cache and feed modes announce their calls.
                let callStarts = [
                    "set", "enqueuing", "removing", "flushing", "downloading", "evicting", "pulling", "switching",
                ]
                callInFlight = callStarts.contains(String(parts[0]))
                if callInFlight { callStarted = now }
            }
            // Kill while a call is in flight (a batch right after a set was acknowledged, or an
            // announced queue call), at a random point of it: the moment a torn or half-applied
            // write would show.
            if !killed, callInFlight, acknowledged.count >= killAfter {
                spin(nanoseconds: UInt64.random(in: 0...callNanoseconds))
                if let interrupt { interrupt(process) } else { process.send(SIGKILL) }
                killed = true  // keep reading: lines already in the pipe were acknowledged too
            }
        }
        let status = process.waitBlocking()
        // A child may also kill itself with SIGKILL (the flush test's server does, at a chosen moment).
        if !ChildProcess.killed(status, by: SIGKILL) {
            let message = (try? String(contentsOfFile: errorFile, encoding: .utf8)) ?? ""
            guard killed, interrupt != nil else {
                throw Failure(description: "crash writer exited on its own (wait status \(status)): \(message)")
            }
            acknowledged.exitMessage = "wait status \(status): \(message)"
        }
        return acknowledged
    }

    /// Busy-waits: picks a random kill moment inside a call, which a sleep is too coarse for.
    private static func spin(nanoseconds: UInt64) {
        let end = DispatchTime.now().uptimeNanoseconds + nanoseconds
        while DispatchTime.now().uptimeNanoseconds < end {}
    }
}
