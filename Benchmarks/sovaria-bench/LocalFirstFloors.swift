import CBenchSQLite
import CHeap
import Foundation
@_spi(Benchmarks) import SovariaPostgREST
import SovariaSync

/// The bytes the C heap has in use, or `nil` where that is not known (no glibc).
private func heapInUse() -> Int? {
    let bytes = sovaria_heap_in_use()
    return bytes > 0 ? Int(bytes) : nil
}

/// The local-first section's floors and scale: at 1,000 and 10,000 rows, the first answer after
/// a write through the controller (its session keeps the cached answer parsed) and the
/// evaluation from the text, beside what they cannot beat in the same run: parsing the body
/// (the overlay's parser, `JSONSerialization`) and SQLite stepping the same rows out of an
/// indexed table. Also the bytes a session holds per cached row.
extension LocalFirstSection {
    func measureScaleAndFloors(stopwatch: Stopwatch, calls: Int) async throws -> [Measurement] {
        let section = BenchSection.localFirst.rawValue
        var rows: [Measurement] = []
        for count in [1_000, 10_000] {
            let body = Self.body(rows: count)
            let scaled = max(5, calls / 10 / (count / 1_000))
            let variant = "\(count.formatted(.number.grouping(.automatic))) rows"
            let overlayParse = try await stopwatch.measure(calls: scaled) { _, _ in try JSONParserFloor.parse(body) }
            let foundationParse = try await stopwatch.measure(calls: scaled) { _, _ in
                _ = try JSONSerialization.jsonObject(with: Data(body.utf8))
            }
            let table = try SQLiteRows(count: count)
            let select = try await stopwatch.measure(calls: scaled) { _, _ in
                guard try table.selectAll() == count else { throw BenchError.failed("rows missing") }
            }
            var parse = overlayParse.measurement(
                section: section, subject: "floor", variant: variant, operation: "parse (the overlay's parser)")
            let foundation = foundationParse.measurement(
                section: section, subject: "floor", variant: variant, operation: "parse (JSONSerialization)")
            parse.ratio = parse.p50Nanoseconds / max(1, foundation.p50Nanoseconds)
            parse.baseline = "JSONSerialization"
            var sqlite = select.measurement(
                section: section, subject: "floor", variant: variant,
                operation: "SQLite SELECT of the rows (indexed, ordered)")
            sqlite.ratio = sqlite.p50Nanoseconds / max(1, foundation.p50Nanoseconds)
            sqlite.baseline = "JSONSerialization"
            rows += [foundation, parse, sqlite]
            for pending in [0, 100] where count == 10_000 || pending == 100 {
                let writes = (0..<pending).map {
                    OverlayWrite(id: "w\($0)", request: Self.write($0, rows: count), isPending: true)
                }
                let evaluation = try await stopwatch.measure(calls: scaled) { _, _ in
                    _ = Self.overlay.answer(Self.list, cachedBody: body, writes: writes)
                }
                var row = evaluation.measurement(
                    section: section, subject: "overlay", variant: "\(variant), \(pending) pending",
                    operation: "evaluate from the text (cold)")
                row.ratio = row.p50Nanoseconds / max(1, foundation.p50Nanoseconds)
                row.baseline = "JSONSerialization's parse"
                rows.append(row)
            }
            for engine in ["memory", "sqlite"] where options.runs(engine: engine) {
                for pending in [10, 100] {
                    var row = try await measureFirstAnswerAfterWrite(
                        engine, rows: count, pending: pending, calls: max(10, calls / 4))
                    row.ratio = row.p50Nanoseconds / max(1, foundation.p50Nanoseconds)
                    row.baseline = "JSONSerialization's parse"
                    if engine == "memory", pending == 100 {
                        row.note = (row.note ?? "") + "; " + sessionMemory(body: body, rows: count)
                    }
                    rows.append(row)
                }
            }
        }
        return rows
    }

    /// From a local write to the next read's answer, through the controller with `pending`
    /// writes queued before it: the read's session applies the new write alone. Each call writes
    /// one more (untimed: a patch, an insert or a delete by key), so the queue grows by `calls`.
    private func measureFirstAnswerAfterWrite(
        _ engine: String, rows count: Int, pending: Int, calls: Int
    ) async throws -> Measurement {
        let (offline, transport, folder) = try await Self.controller(engine, options: options, rows: count)
        defer { try? FileManager.default.removeItem(at: folder) }
        _ = try await offline.read(Self.list)
        transport.isOffline = true
        for index in 0..<pending { _ = try await offline.write(Self.write(index, rows: count)) }
        _ = try await offline.read(Self.list, policy: .cacheOnly)
        // One untimed write and read first: the first session evaluation of an appended write.
        let latencies = try await Stopwatch.latenciesAfterWarmUp(calls: calls) { call in
            _ = try await offline.write(Self.write(pending + call, rows: count))
            let start = Stopwatch.now()
            guard try await offline.read(Self.list, policy: .cacheOnly).body != nil else {
                throw BenchError.failed("no answer")
            }
            return Stopwatch.now() - start
        }
        await offline.close()
        let sample = Sample(
            perItemNanoseconds: [latencies.reduce(0, +) / Double(max(1, calls))], callLatencies: latencies)
        var row = sample.measurement(
            section: BenchSection.localFirst.rawValue, subject: engine,
            variant: "\(count.formatted(.number.grouping(.automatic))) rows, \(pending) pending",
            operation: "first answer after a write")
        row.note = "\(pending + 2) to \(pending + calls + 1) pending over the timed calls"
        return row
    }

    /// The bytes a session holds per cached row: glibc's heap in use before and after making
    /// one (the answer parsed, one write applied), beside the session's own estimate.
    private func sessionMemory(body: String, rows count: Int) -> String {
        let write = [OverlayWrite(id: "w", request: Self.write(0, rows: count), isPending: true)]
        let before = heapInUse()
        let session = Self.overlay.session(Self.list, cachedBody: body, related: [])
        _ = session.answer(writes: write)
        let after = heapInUse()
        var measured = "not measured"
        if let before, let after { measured = "\(max(0, after - before) / count) B measured (heap in use)" }
        let estimated = session.estimatedBytes / count
        withExtendedLifetime(session) {}
        return "a session holds per row: \(measured), \(estimated) B estimated, \(body.utf8.count / count) B of text"
    }
}

/// The rows of the bench's answer in an SQLite table keyed by `id`, in memory: the floor of
/// reading them from a database.
final class SQLiteRows {
    private let handle: OpaquePointer
    private let select: OpaquePointer

    init(count: Int) throws {
        var opened: OpaquePointer?
        guard sqlite3_open(":memory:", &opened) == SQLITE_OK, let opened else {
            throw BenchError.failed("sqlite: cannot open a database in memory")
        }
        handle = opened
        let create = "CREATE TABLE items(id TEXT PRIMARY KEY, name TEXT, qty INTEGER, note TEXT) WITHOUT ROWID"
        guard sqlite3_exec(handle, create, nil, nil, nil) == SQLITE_OK else {
            sqlite3_close(handle)
            throw BenchError.failed("sqlite: cannot create the table")
        }
        var insert: OpaquePointer?
        sqlite3_prepare_v2(handle, "INSERT INTO items VALUES (?, ?, ?, ?)", -1, &insert, nil)
        sqlite3_exec(handle, "BEGIN", nil, nil, nil)
        let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
        for index in 0..<count {
            sqlite3_bind_text(insert, 1, String(format: "r%05d", index), -1, transient)
            sqlite3_bind_text(insert, 2, "Item \(index)", -1, transient)
            sqlite3_bind_int64(insert, 3, Int64(index % 17))
            if index % 3 == 0 {
                sqlite3_bind_null(insert, 4)
            } else {
                sqlite3_bind_text(insert, 4, "note \(index)", -1, transient)
            }
            sqlite3_step(insert)
            sqlite3_reset(insert)
        }
        sqlite3_finalize(insert)
        sqlite3_exec(handle, "COMMIT", nil, nil, nil)
        var prepared: OpaquePointer?
        guard
            sqlite3_prepare_v2(handle, "SELECT id, name, qty, note FROM items ORDER BY id", -1, &prepared, nil)
                == SQLITE_OK, let prepared
        else {
            sqlite3_close(handle)
            throw BenchError.failed("sqlite: cannot prepare the select")
        }
        select = prepared
    }

    deinit {
        sqlite3_finalize(select)
        sqlite3_close(handle)
    }

    /// Column `index` of the current row as text, read by its length (a value may hold NUL),
    /// or `nil` for SQL NULL.
    private func text(_ index: Int32) -> String? {
        guard let start = sqlite3_column_text(select, index) else { return nil }
        let count = Int(sqlite3_column_bytes(select, index))
        return String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    }

    /// Steps every row into Swift values, as an app reading them would; returns how many.
    func selectAll() throws -> Int {
        defer { sqlite3_reset(select) }
        var rows: [(String, String, Int64, String?)] = []
        while sqlite3_step(select) == SQLITE_ROW {
            let id = text(0) ?? ""
            let name = text(1) ?? ""
            let quantity = sqlite3_column_int64(select, 2)
            let note = text(3)
            rows.append((id, name, quantity, note))
        }
        return rows.count
    }
}
