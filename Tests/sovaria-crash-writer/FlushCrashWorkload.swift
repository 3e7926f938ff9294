import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import Synchronization

/// The crash writer's flush mode (`flush-<engine>`): queues ten writes offline, then flushes them
/// to a server that logs every request it receives, again and again; the kill lands in enqueues
/// and inside flushes, between a send the server applied and the removal from the queue.
///
/// Prints `enqueuing N` / `queued N` around each offline write and `flushing N` / `flushed N`
/// around each flush (N: the last write queued). The server kills the process right after it
/// applies its seventh write, so every run that gets that far dies in the one window a lost
/// acknowledgement opens: applied by the server, still in the queue.
enum FlushCrashWorkload {
    static let enginePrefix = "flush-"

    static func run(_ store: any OfflineStore, folder: URL, first: Int) async throws -> Never {
        let server = LogServer(path: folder.appendingPathComponent("server.log").path, dieAfterApplying: 7)
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = NeverFiringTimer()
        let offline = try await SovariaOffline(store: store, transport: server, configuration: configuration)
        CrashWriter.acknowledge("ready")
        var index = first
        while true {
            server.online = false
            for _ in 0..<10 {
                CrashWriter.acknowledge("enqueuing \(index)")
                guard case .queued = try await offline.write(QueueCrashWorkload.request(index)) else {
                    throw OfflineStoreError(.io, "an offline write was sent")
                }
                CrashWriter.acknowledge("queued \(index)")
                index += 1
            }
            server.online = true
            CrashWriter.acknowledge("flushing \(index - 1)")
            _ = try await offline.flush()
            CrashWriter.acknowledge("flushed \(index - 1)")
        }
    }
}

/// A server for the flush crash test: appends `<Idempotency-Key> <n>` to a log file for every
/// write it receives (before it answers, as a server applies a write before its answer can be
/// lost) and answers 201. Offline while ``online`` is false. The test reads the log to see what
/// the server applied: each key once, however often it was sent.
final class LogServer: SyncTransport {
    let path: String
    private let isOnline = Mutex(true)
    /// Kills this process (SIGKILL) right after the write with this number of its run is logged.
    private let dieAfterApplying: Int?
    private let applied = Mutex(0)

    init(path: String, dieAfterApplying: Int? = nil) {
        self.path = path
        self.dieAfterApplying = dieAfterApplying
    }

    var online: Bool {
        get { isOnline.withLock { $0 } }
        set { isOnline.withLock { $0 = newValue } }
    }

    func send(_ request: DataRequest) async throws -> DataResponse {
        guard online else { throw SyncTransportError.offline("the crash test's server is off") }
        let key = request.headers[SovariaOffline.idempotencyHeader] ?? "-"
        let number = request.path.split(separator: "=").last.map(String.init) ?? "-"
        let line = Array("\(key) \(number)\n".utf8)
        let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else { throw SyncTransportError.offline("the crash test's log cannot be opened") }
        defer { close(descriptor) }
        guard line.withUnsafeBytes({ write(descriptor, $0.baseAddress, $0.count) }) == line.count else {
            throw SyncTransportError.offline("the crash test's log cannot be written")
        }
        let count = applied.withLock { count in
            count += 1
            return count
        }
        if count == dieAfterApplying { kill(getpid(), SIGKILL) }
        return DataResponse(status: 201)
    }

    /// Every `(key, number)` the server received, in order.
    func received() throws -> [(key: String, number: Int)] {
        guard let text = try? String(contentsOfFile: path, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: " ")
            guard parts.count == 2, let number = Int(parts[1]) else { return nil }
            return (String(parts[0]), number)
        }
    }
}

/// A timer that never fires: the workload flushes by itself.
struct NeverFiringTimer: SyncTimer {
    func repeating(every interval: Duration, _ fire: @escaping @Sendable () async -> Void) -> SyncTimerTicket {
        SyncTimerTicket {}
    }
}
