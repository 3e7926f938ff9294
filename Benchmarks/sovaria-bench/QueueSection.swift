import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import Synchronization

/// Section 7: the write queue on every engine and its encrypted form, in both durabilities:
/// enqueue (one durable store batch each, what an offline write costs the app), the
/// controller's drain step (head + remove), and, with 1,000 writes queued, opening the queue
/// (key names only) and `pending()` (every value read and decoded).
struct QueueSection {
    let options: BenchOptions
    let progress: Progress

    /// Writes queued at once for the `pending()` and open rows.
    static let queuedForReads = 1_000

    /// A typical offline write: an insert of a small note, about 250 bytes of JSON.
    static let request = DataRequest(
        method: "POST", path: "/rest/v1/notes?select=id",
        headers: ["Prefer": "return=representation", "Content-Type": "application/json"],
        body: #"{"id":"6f1c2a9e-0d4b-4f7a-9a51-3c8e2b7d4e10","owner":"b3e1f6a2-7c44-4d1e-8f0a-1e2d3c4b5a69","#
            + #""title":"Groceries","body":"Milk, eggs, bread, coffee, and something for the weekend.","#
            + #""created_at":"2026-11-30T09:41:00.000Z"}"#)

    func run() async throws -> [Measurement] {
        var rows: [Measurement] = []
        let engines = BenchEngines.plain + BenchEngines.plain.filter(\.persistent).map(BenchEngines.encrypted)
        for engine in engines where options.runs(engine: engine.name) {
            for durability in engine.persistent ? [Durability.synced, .flushed] : [.flushed] {
                let variant = engine.persistent ? "\(durability)" : ""
                let folder = options.folder.appendingPathComponent("queue-\(engine.name)-\(durability)")
                try? FileManager.default.removeItem(at: folder)
                try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                let store = try await engine.open(folder, durability)
                let enqueueAndDrain = try await measureEnqueueAndDrain(
                    store, engine: engine.name, variant: variant, durability)
                rows += enqueueAndDrain
                if durability == .flushed {
                    rows += try await measureReads(store, engine)
                    var flush = try await measureFlush(store, engine: engine.name, variant: variant)
                    // The controller's own cost per write: its time over the bare drain step's (both means).
                    if let drain = enqueueAndDrain.last, drain.nanosecondsPerOp > 0 {
                        let overhead = flush.nanosecondsPerOp / drain.nanosecondsPerOp - 1
                        flush.note =
                            (flush.note ?? "")
                            + String(
                                format: "; %+.0f%% over the drain step (mean %.1f µs)", overhead * 100,
                                drain.nanosecondsPerOp / 1_000)
                    }
                    rows.append(flush)
                }
                try? FileManager.default.removeItem(at: folder)
            }
        }
        return rows
    }

    /// Enqueues `calls` writes, then drains them, per repeat (after a warm-up round).
    private func measureEnqueueAndDrain(
        _ store: any OfflineStore, engine: String, variant: String, _ durability: Durability
    ) async throws -> [Measurement] {
        // Each synced call waits for the disk: fewer of them.
        let calls = min(
            options.keyCount,
            durability == .synced
                ? options.pick(quick: 200, standard: 50, full: 1_000)
                : options.pick(quick: 2_000, standard: 200, full: 2_000))
        let queue = try await WriteQueue(store: store, maxQueued: .max)
        var enqueues = Sample(perItemNanoseconds: [], callLatencies: [])
        var drains = Sample(perItemNanoseconds: [], callLatencies: [])
        for round in -1..<options.repeats {
            progress.update("queue: \(engine) \(variant), enqueue and drain \(calls) writes")
            let enqueued = try await Stopwatch(repeats: 1).measure(calls: calls, warmUp: false) { _, _ in
                try await queue.enqueue(Self.request)
            }
            let drained = try await Stopwatch(repeats: 1).measure(calls: calls, warmUp: false) { _, _ in
                guard let head = try await queue.head(), try await queue.remove(head.id) else {
                    throw BenchError.failed("\(engine): the queue emptied early")
                }
            }
            if round >= 0 {
                enqueues.append(enqueued)
                drains.append(drained)
            }
        }
        let section = BenchSection.queue.rawValue
        var enqueueRow = enqueues.measurement(section: section, subject: engine, variant: variant, operation: "enqueue")
        enqueueRow.note = "\(calls) per repeat"
        var drainRow = drains.measurement(
            section: section, subject: engine, variant: variant, operation: "drain step (head + remove)")
        drainRow.note = "\(calls) per repeat"
        return [enqueueRow, drainRow]
    }

    /// Queues writes offline through the controller, then times one `flush()` of all of them to an
    /// in-process server that answers 201 at once: per write, what the controller adds to the
    /// queue's own drain step (head + remove) is its overhead.
    private func measureFlush(_ store: any OfflineStore, engine: String, variant: String) async throws -> Measurement {
        let calls = min(options.keyCount, options.pick(quick: 200, standard: 300, full: 1_000))
        let server = InstantServer()
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.maxQueued = .max
        configuration.timer = IdleTimer()
        let offline = try await SovariaOffline(store: store, transport: server, configuration: configuration)
        try await offline.clear()  // the writes the pending() rows left
        var flushes = Sample(perItemNanoseconds: [], callLatencies: [])
        for round in -1..<options.repeats {
            progress.update("queue: \(engine) \(variant), flush \(calls) writes")
            server.online = false
            for _ in 0..<calls { _ = try await offline.write(Self.request) }
            server.online = true
            let start = ContinuousClock.now
            guard try await offline.flush() == calls else { throw BenchError.failed("\(engine): flush missed writes") }
            let elapsed = ContinuousClock.now - start
            let nanoseconds = Double(elapsed.components.seconds) * 1e9 + Double(elapsed.components.attoseconds) / 1e9
            if round >= 0 {
                flushes.append(Sample(perItemNanoseconds: [nanoseconds / Double(calls)], callLatencies: [nanoseconds]))
            }
        }
        await offline.close()
        var row = flushes.measurement(
            section: BenchSection.queue.rawValue, subject: engine, variant: variant,
            operation: "flush, per write (in-process server)")
        row.note = "\(calls) per flush"
        return row
    }

    /// Fills the queue to ``queuedForReads`` and times opening it and `pending()`.
    private func measureReads(_ store: any OfflineStore, _ engine: BenchEngine) async throws -> [Measurement] {
        let (engine, variant) = (engine.name, engine.persistent ? "\(Durability.flushed)" : "")
        progress.update("queue: \(engine), pending() of \(Self.queuedForReads)")
        let queue = try await WriteQueue(store: store, maxQueued: .max)
        try await queue.clear()
        for _ in 0..<Self.queuedForReads { try await queue.enqueue(Self.request) }
        let calls = options.pick(quick: 5, standard: 10, full: 20)
        let stopwatch = Stopwatch(repeats: options.repeats)
        let opens = try await stopwatch.measure(calls: calls) { _, _ in
            let reopened = try await WriteQueue(store: store, maxQueued: .max)
            guard reopened.count == Self.queuedForReads else { throw BenchError.failed("\(engine): open miscounted") }
        }
        let reads = try await stopwatch.measure(calls: calls) { _, _ in
            guard try await queue.pending().count == Self.queuedForReads else {
                throw BenchError.failed("\(engine): pending() missed writes")
            }
        }
        let section = BenchSection.queue.rawValue
        var openRow = opens.measurement(
            section: section, subject: engine, variant: variant, operation: "open (\(Self.queuedForReads) queued)")
        openRow.note = "per call: key names only"
        var readRow = reads.measurement(
            section: section, subject: engine, variant: variant, operation: "pending() of \(Self.queuedForReads)")
        readRow.note = "per call"
        return [openRow, readRow]
    }
}

/// A server in the same process that answers every request with 201 at once, or is offline.
private final class InstantServer: SyncTransport {
    private let isOnline = Mutex(true)

    var online: Bool {
        get { isOnline.withLock { $0 } }
        set { isOnline.withLock { $0 = newValue } }
    }

    func send(_ request: DataRequest) async throws -> DataResponse {
        guard online else { throw SyncTransportError.offline("the bench's server is off") }
        return DataResponse(status: 201)
    }
}

/// A timer that never fires: the bench flushes by itself.
private struct IdleTimer: SyncTimer {
    func repeating(every interval: Duration, _ fire: @escaping @Sendable () async -> Void) -> SyncTimerTicket {
        SyncTimerTicket {}
    }
}
