import Foundation
import Sovaria

/// The child process of the crash tests: opens a store, then writes numbered entries and
/// two-key batches forever, printing an acknowledgement after each call returns, until the
/// test kills it with SIGKILL.
///
/// Usage: `sovaria-crash-writer ENGINE PATH synced|flushed FIRST-INDEX`, where PATH is a libpq
/// conninfo for the `postgres` ENGINE; an ENGINE of `queue-<engine>` runs the write queue's
/// workload instead (``QueueCrashWorkload``), one of `flush-<engine>` the controller's
/// (``FlushCrashWorkload``), one of `switch-<engine>` users signing in and out of one store
/// (``AccountSwitchCrashWorkload``), one of `http-<engine>` a flush through the HTTP transport
/// (``HTTPCrashWorkload``, FIRST being the test server's port), one of `conflict-http-<engine>` a
/// flush killed before its update that matched no row became a conflict (``ConflictCrashWorkload``), one of `feed-<engine>`
/// change-feed pages applied to cached answers (``FeedCrashWorkload``), and one of `files-<engine>` the
/// file cache's (``FileCacheCrashWorkload``); one of `read-<engine>` reads a damaged store
/// (``CorruptionReader``, FIRST being the number of keys); one of `io-<engine>` is a short run for
/// `strace --inject` (``IOErrorWorkload``), one of `bulk-<engine>` large inputs
/// (``BulkInputWorkload``), one of `batches-<engine>` three-key batches another process reads
/// (``BatchWriterWorkload``), and one of `history-<engine>` several tasks writing through the
/// controller to the test server (``QueueHistoryWorkload``).
@main
enum CrashWriter {
    static func main() async {
        exitWhenOrphaned()
        let arguments = CommandLine.arguments
        guard arguments.count == 5, let first = Int(arguments[4]) else {
            FileHandle.standardError.write(Data("usage: sovaria-crash-writer ENGINE PATH synced|flushed FIRST\n".utf8))
            exit(2)
        }
        let durability: Durability = arguments[3] == "synced" ? .synced : .flushed
        do {
            let engine = arguments[1]
            if engine.hasPrefix(CorruptionReader.enginePrefix) {
                await CorruptionReader.run(
                    engine: String(engine.dropFirst(CorruptionReader.enginePrefix.count)), path: arguments[2],
                    count: first)
            }
            if engine.hasPrefix(BatchWriterWorkload.enginePrefix) {
                await BatchWriterWorkload.run(
                    engine: String(engine.dropFirst(BatchWriterWorkload.enginePrefix.count)), location: arguments[2],
                    durability: durability, count: first)
            }
            if engine.hasPrefix(QueueHistoryWorkload.enginePrefix) {
                let store = try await CrashStores.open(
                    String(engine.dropFirst(QueueHistoryWorkload.enginePrefix.count)), location: arguments[2],
                    durability: durability)
                try await QueueHistoryWorkload.run(store, port: first)
            }
            if engine.hasPrefix(BulkInputWorkload.enginePrefix) {
                await BulkInputWorkload.run(
                    engine: String(engine.dropFirst(BulkInputWorkload.enginePrefix.count)), location: arguments[2],
                    durability: durability,
                    mebibytes: first)
            }
            if engine.hasPrefix(IOErrorWorkload.enginePrefix) {
                await IOErrorWorkload.run(
                    engine: String(engine.dropFirst(IOErrorWorkload.enginePrefix.count)), location: arguments[2],
                    durability: durability, first: first)
            }
            if engine.hasPrefix(QueueCrashWorkload.enginePrefix) {
                let store = try await CrashStores.open(
                    String(engine.dropFirst(QueueCrashWorkload.enginePrefix.count)),
                    at: URL(fileURLWithPath: arguments[2]), durability: durability)
                try await QueueCrashWorkload.run(store, first: first)
            }
            if engine.hasPrefix(FlushCrashWorkload.enginePrefix) {
                let folder = URL(fileURLWithPath: arguments[2])
                let store = try await CrashStores.open(
                    String(engine.dropFirst(FlushCrashWorkload.enginePrefix.count)), at: folder, durability: durability)
                try await FlushCrashWorkload.run(store, folder: folder, first: first)
            }
            if engine.hasPrefix(AccountSwitchCrashWorkload.enginePrefix) {
                let folder = URL(fileURLWithPath: arguments[2])
                let store = try await CrashStores.open(
                    String(engine.dropFirst(AccountSwitchCrashWorkload.enginePrefix.count)), at: folder,
                    durability: durability)
                try await AccountSwitchCrashWorkload.run(store, folder: folder, first: first)
            }
            if engine.hasPrefix(FeedCrashWorkload.enginePrefix) {
                let store = try await CrashStores.open(
                    String(engine.dropFirst(FeedCrashWorkload.enginePrefix.count)),
                    at: URL(fileURLWithPath: arguments[2]), durability: durability)
                try await FeedCrashWorkload.run(store, first: first)
            }
            if engine.hasPrefix(ConflictCrashWorkload.enginePrefix) {
                let store = try await CrashStores.open(
                    String(engine.dropFirst(ConflictCrashWorkload.enginePrefix.count)), location: arguments[2],
                    durability: durability)
                try await ConflictCrashWorkload.run(store, port: first)
            }
            if engine.hasPrefix(HTTPCrashWorkload.enginePrefix) {
                let store = try await CrashStores.open(
                    String(engine.dropFirst(HTTPCrashWorkload.enginePrefix.count)), location: arguments[2],
                    durability: durability)
                try await HTTPCrashWorkload.run(store, port: first)
            }
            if engine.hasPrefix(FileCacheCrashWorkload.enginePrefix) {
                try await FileCacheCrashWorkload.run(
                    engine: String(engine.dropFirst(FileCacheCrashWorkload.enginePrefix.count)),
                    folder: URL(fileURLWithPath: arguments[2]), durability: durability, first: first)
            }
            let store = try await CrashStores.open(engine, location: arguments[2], durability: durability)
            acknowledge("ready")
            // `SOVARIA_CRASH_WRITERS` tasks write at once (group commit joins their writes), each
            // from its own million indexes; every line is one write(2), whole.
            let writers = ProcessInfo.processInfo.environment["SOVARIA_CRASH_WRITERS"].flatMap { Int($0) } ?? 1
            try await withThrowingTaskGroup(of: Void.self) { group in
                for writer in 0..<max(1, min(writers, 9)) {
                    group.addTask {
                        var index = first + writer * 1_000_000
                        while true {
                            try await store.set(CrashWorkload.singleKey(index), CrashWorkload.value(index))
                            acknowledge("set \(index)")
                            try await store.write(CrashWorkload.batch(index))
                            acknowledge("batch \(index)")
                            index += 1
                        }
                    }
                }
                try await group.waitForAll()
            }
        } catch {
            FileHandle.standardError.write(Data("crash writer failed: \(error)\n".utf8))
            exit(1)
        }
    }

    /// Writes `line` straight to standard output (no buffer), so a printed line means the call
    /// before it returned.
    ///
    /// With `SOVARIA_CRASH_ACK_GATE` naming a file on the file system a power-cut test shuts
    /// down, the line is printed only if that file still opens (so the call returned before the
    /// cut); otherwise the writer exits. A shut-down ext4 fails every open, while an `fsync`
    /// already waiting when the shutdown aborts its journal can still return success (a real power
    /// cut leaves no process to acknowledge anything).
    static func acknowledge(_ line: String) {
        if let gate = acknowledgementGate {
            let descriptor = open(gate, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else {
                let reason = String(cString: strerror(errno))
                FileHandle.standardError.write(Data("crash writer stops: its file system is cut (\(reason))\n".utf8))
                exit(3)
            }
            close(descriptor)
        }
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    /// The file `acknowledge(_:)` opens before each line, if any.
    static let acknowledgementGate = ProcessInfo.processInfo.environment["SOVARIA_CRASH_ACK_GATE"]

    /// Exits once the test process that started this writer is gone, so a test run killed
    /// midway leaves no writer behind looping forever: the tests stop their writers with
    /// SIGKILL, and nobody would stop those of a run that died first.
    ///
    /// A parent that dies hands its children to init (or a subreaper), which changes
    /// `getppid()`; a background thread looks once a second. The parent is the one named by
    /// `SOVARIA_CRASH_PARENT` if set (a parent that may die before this process starts to
    /// watch), else the one this process has at start.
    static func exitWhenOrphaned() {
        let named = ProcessInfo.processInfo.environment["SOVARIA_CRASH_PARENT"].flatMap { pid_t($0) }
        let parent = named ?? getppid()
        Thread.detachNewThread {
            while getppid() == parent { Thread.sleep(forTimeInterval: 1) }
            // `_exit`, not `exit`: no atexit handler runs while the main thread is mid-write.
            _exit(3)
        }
    }
}
