import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaSQLite
import SovariaSync
import Synchronization

/// Section 8: local-first reads. A cached list of 1,000 rows read offline with 0, 10 and 100
/// pending writes on its table (through the controller, repeated: the overlay is computed once
/// per change; and the overlay's evaluation alone, what the first read after a change costs),
/// and a live query's delivery after a local write.
struct LocalFirstSection {
    let options: BenchOptions
    let progress: Progress

    static let rows = 1_000
    static let list = DataRequest(method: "GET", path: "/rest/v1/items?select=*&order=id")
    static let overlay = PostgRESTOverlay(
        tables: ["items": .init(primaryKey: "id", defaults: ["qty": "0", "note": "null"])], textOrder: .bytes)

    /// The server's answer: 1,000 rows of about 90 bytes.
    static let body = body(rows: rows)

    /// A server's answer of `count` rows of about 90 bytes.
    static func body(rows count: Int) -> String {
        let rows = (0..<count).map { index in
            let id = String(format: "r%05d", index)
            return #"{"id":"\#(id)","name":"Item \#(index)","qty":\#(index % 17),"note":"#
                + (index % 3 == 0 ? "null" : #""note \#(index)""#) + "}"
        }
        return "[" + rows.joined(separator: ",") + "]"
    }

    /// The `index`th pending write: a patch of a cached row, an insert, or a delete.
    static func write(_ index: Int, rows: Int = rows) -> DataRequest {
        switch index % 5 {
        case 0, 1:
            PostgREST.update(
                "items", where: [.eq("id", String(format: "r%05d", index * 7 % rows))], json: #"{"qty":\#(index)}"#)
        case 2, 3: PostgREST.insert(into: "items", json: #"{"id":"n\#(index)","name":"New \#(index)"}"#)
        default: PostgREST.delete(from: "items", where: [.eq("id", String(format: "r%05d", index * 13 % rows))])
        }
    }

    func run() async throws -> [Measurement] {
        let section = BenchSection.localFirst.rawValue
        let calls = options.pick(quick: 50, standard: 200, full: 1_000)
        let stopwatch = Stopwatch(repeats: max(2, options.repeats))
        var rows: [Measurement] = []
        for engine in ["memory", "sqlite"] where options.runs(engine: engine) {
            progress.update("local-first reads on \(engine)")
            var reads: [Int: Measurement] = [:]
            var evaluations: [Int: Measurement] = [:]
            for pending in [0, 10, 100] {
                let (offline, transport, folder) = try await Self.controller(engine, options: options)
                defer { try? FileManager.default.removeItem(at: folder) }
                _ = try await offline.read(Self.list)
                transport.isOffline = true
                for index in 0..<pending { _ = try await offline.write(Self.write(index)) }
                let read = try await stopwatch.measure(calls: calls) { _, _ in
                    guard try await offline.read(Self.list, policy: .cacheOnly).body != nil else {
                        throw BenchError.failed("no answer")
                    }
                }
                let variant = "1,000 rows, \(pending) pending"
                reads[pending] = read.measurement(
                    section: section, subject: engine, variant: variant, operation: "read (repeated)")
                let writes = try await offline.pendingWrites().map {
                    OverlayWrite(id: $0.id, request: $0.request, isPending: true)
                }
                let evaluation = try await stopwatch.measure(calls: max(5, calls / 10)) { _, _ in
                    _ = Self.overlay.answer(Self.list, cachedBody: Self.body, writes: writes)
                }
                evaluations[pending] = evaluation.measurement(
                    section: section, subject: "overlay", variant: variant,
                    operation: "evaluate from the text (cold)")
                if pending == 10 {
                    rows.append(
                        try await measureLiveQuery(offline, transport: transport, engine: engine, calls: calls / 4))
                }
                await offline.close()
            }
            for pending in [0, 10, 100] {
                guard var read = reads[pending], var evaluation = evaluations[pending] else { continue }
                if pending > 0, let none = reads[0], let bare = evaluations[0] {
                    read.ratio = read.p50Nanoseconds / max(1, none.p50Nanoseconds)
                    read.baseline = "the same read with none pending"
                    evaluation.ratio = evaluation.p50Nanoseconds / max(1, bare.p50Nanoseconds)
                    evaluation.baseline = "the evaluation with none pending"
                }
                rows += [read, evaluation]
            }
        }
        rows += try await measureScaleAndFloors(stopwatch: stopwatch, calls: calls)
        rows += try await measureReadShapes(stopwatch: stopwatch, calls: calls)
        return rows
    }

    /// From a local write to the live query's next answer that shows it, with 10 writes pending
    /// each time: between calls (untimed) the queue syncs and the list is fetched again. The first
    /// call is untimed: it is the process's first session evaluation of an appended write (the
    /// repeated reads before it evaluate nothing new), cold.
    private func measureLiveQuery(
        _ offline: SovariaOffline, transport: ListServer, engine: String, calls: Int
    ) async throws -> Measurement {
        var answers = offline.observe(Self.list, policy: .cacheOnly).makeAsyncIterator()
        _ = try await answers.next()
        let latencies = try await Stopwatch.latenciesAfterWarmUp(calls: calls) { call in
            let start = Stopwatch.now()
            _ = try await offline.write(Self.write(call * 5 + 2))  // an insert: the answer changes
            guard try await answers.next() != nil else { throw BenchError.failed("the live query ended") }
            let elapsed = Stopwatch.now() - start
            // Back to the same state, untimed: sync the write, fetch the list again, queue 10 writes.
            transport.isOffline = false
            _ = try await offline.flush()
            _ = try await offline.read(Self.list, policy: .networkOnly)
            transport.isOffline = true
            for index in 0..<10 { _ = try await offline.write(Self.write(index)) }
            _ = try await answers.next()
            return elapsed
        }
        let sample = Sample(
            perItemNanoseconds: [latencies.reduce(0, +) / Double(max(1, calls))], callLatencies: latencies)
        return sample.measurement(
            section: BenchSection.localFirst.rawValue, subject: engine, variant: "1,000 rows, 10 pending",
            operation: "observe: write to next answer")
    }

    static func controller(
        _ engine: String, options: BenchOptions, rows count: Int = rows
    ) async throws -> (SovariaOffline, ListServer, URL) {
        let folder = options.folder.appendingPathComponent("local-first-\(engine)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let store: any OfflineStore =
            engine == "memory"
            ? MemoryOfflineStore()
            : try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("s.sqlite"), durability: .flushed)
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.overlay = overlay
        configuration.maxQueued = 10_000
        let transport = ListServer(body: count == rows ? body : Self.body(rows: count))
        return (
            try await SovariaOffline(store: store, transport: transport, configuration: configuration), transport,
            folder
        )
    }
}

/// A server in the process: the list for a read, 201 for a write; can go offline.
final class ListServer: SyncTransport {
    let body: String
    private let offline = Mutex(false)

    init(body: String) { self.body = body }

    var isOffline: Bool {
        get { offline.withLock { $0 } }
        set { offline.withLock { $0 = newValue } }
    }

    func send(_ request: DataRequest) async throws -> DataResponse {
        if isOffline { throw SyncTransportError.offline("the bench's server is off") }
        return request.method == "GET" ? DataResponse(status: 200, body: body) : DataResponse(status: 201)
    }
}
