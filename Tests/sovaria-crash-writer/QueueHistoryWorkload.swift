import Foundation
import Sovaria
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import Synchronization

/// The crash writer's queue-history mode (`history-<engine>`, FIRST being the test server's
/// port): ``tasks`` tasks write numbered notes through one ``SovariaOffline`` at once, while a
/// flusher task flushes after every write that was queued, over `URLSessionTransport` to the
/// scripted server (`Tests/Server/restserver.py`). A transport in front of it plays offline for
/// 3 sends in 10. Three writers outpace one flusher, so writes almost always queue behind it (a
/// write is sent directly only when it finds the queue empty and the controller online).
///
/// Prints `base B` first; then `enqueuing N` before each write, and `sent N STATUS` or
/// `queued N SEQUENCE` after it returns. Note N comes from task `(N - B) % tasks`, in the order
/// the task wrote them; its request carries `Idempotency-Key: hist-N`.
///
/// With `SOVARIA_HISTORY_DRAIN=1` it writes nothing: it flushes what the queue holds until it is
/// empty, prints `drained COUNT` and exits with status 0.
enum QueueHistoryWorkload {
    static let enginePrefix = "history-"
    static let tasks = 3

    /// The insert of note `number`, with its own idempotency key.
    static func request(_ number: Int) -> DataRequest {
        var request = PostgREST.insert(
            into: "notes", json: #"{"id":"h-\#(number)","title":"history \#(number)"}"#, returning: false)
        request.headers[SovariaOffline.idempotencyHeader] = key(number)
        return request
    }

    /// The `Idempotency-Key` of note `number`.
    static func key(_ number: Int) -> String { "hist-\(number)" }

    /// Writes and flushes on `store` to the server on `port` until killed (or drains, see above).
    static func run(_ store: any OfflineStore, port: Int) async throws -> Never {
        let drain = ProcessInfo.processInfo.environment["SOVARIA_HISTORY_DRAIN"] == "1"
        let transport = SometimesOffline(
            URLSessionTransport(baseURL: URL(string: "http://127.0.0.1:\(port)")!, tokens: FixedToken("token-alice")),
            offline: !drain)
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = NeverFiringTimer()
        configuration.maxQueued = .max
        // An hour passes between two readings: a retry delay the controller set (after a timeout,
        // say) has passed by the next flush, so no run waits on the wall clock.
        let hours = Mutex(0.0)
        configuration.clock = {
            Date(
                timeIntervalSince1970: 1_800_000_000 + 3_600
                    * hours.withLock {
                        $0 += 1; return $0
                    })
        }
        let offline = try await SovariaOffline(store: store, transport: transport, configuration: configuration)
        if drain {
            var sent = 0
            while try await !offline.pendingWrites().isEmpty { sent += try await offline.flush() }
            CrashWriter.acknowledge("drained \(sent)")
            exit(0)
        }
        let base = Int.random(in: 1...1_000_000) * 1_000
        CrashWriter.acknowledge("base \(base)")
        let (queuedWrites, signal) = AsyncStream<Void>.makeStream()
        await withTaskGroup(of: Void.self) { group in
            group.addTask {
                await exitOnError {
                    _ = try await offline.flush()  // what the last run left queued goes first
                    for await _ in queuedWrites { _ = try await offline.flush() }
                }
            }
            for task in 0..<tasks {
                group.addTask {
                    await exitOnError {
                        for step in 0... {
                            let number = base + step * tasks + task
                            CrashWriter.acknowledge("enqueuing \(number)")
                            switch try await offline.write(request(number)) {
                            case .sent(let response): CrashWriter.acknowledge("sent \(number) \(response.status)")
                            case .rejected(let rejected): CrashWriter.acknowledge("sent \(number) \(rejected.status)")
                            case .queued(let write):
                                CrashWriter.acknowledge("queued \(number) \(write.sequence)")
                                signal.yield()
                            }
                        }
                    }
                }
            }
        }
        exit(1)
    }

    /// Runs `body`; an error ends the process at once (status 1, the error on standard error),
    /// so the test sees it rather than waiting on tasks that will never finish.
    private static func exitOnError(_ body: () async throws -> Void) async {
        do {
            try await body()
        } catch {
            FileHandle.standardError.write(Data("queue history workload failed: \(error)\n".utf8))
            exit(1)
        }
    }
}

/// A transport that throws ``SyncTransportError/offline(_:)`` for 3 sends in every 10 (when
/// `offline` is set) and passes the others on.
final class SometimesOffline: SyncTransport {
    private let inner: any SyncTransport
    private let offline: Bool
    private let sends = Mutex(0)

    /// Wraps `inner`; `offline: false` passes every send on.
    init(_ inner: any SyncTransport, offline: Bool) {
        self.inner = inner
        self.offline = offline
    }

    /// Sends `request` through the wrapped transport, or plays offline.
    func send(_ request: DataRequest) async throws -> DataResponse {
        let count = sends.withLock { count in
            count += 1
            return count
        }
        if offline, count % 10 < 3 { throw SyncTransportError.offline("the history test's network is down") }
        return try await inner.send(request)
    }
}
