/// Registered in BenchEngines as the raw baseline of "postgres".
import CBenchLibPQ
import Foundation
import Sovaria

/// The PostgreSQL adapter's work done straight through libpq: what `PostgresOfflineStore` costs
/// over a hand-written caller of the same server and table.
///
/// Same layout and settings as `PostgresSchema` and `PostgresConnection`: a table with a `bytea`
/// primary key and a `bytea` value, `synchronous_commit` on (`.synced`) or off (`.flushed`), the
/// adapter's statements prepared once and run with binary parameters and results. A single set is
/// one statement in its own transaction; a batch is `BEGIN` and one statement a write, pipelined
/// 256 at a time (one round trip each), then `COMMIT` on its own, as in the adapter.
///
/// What it leaves out is the adapter's cost: no Strings (keys and values are the workload's
/// bytes), no key validation, no pool, no hop to a Dispatch queue: it calls libpq on the
/// benchmark's own thread, one connection for everything. Results are still copied out.
final class RawPostgresSubject: BenchSubject {
    private let workload: Workload
    private let connection: OpaquePointer
    private let pageUpperBound: [UInt8]
    private var state = RawReadState()

    init(conninfo: String, durability: Durability, workload: Workload) throws {
        self.workload = workload
        guard let upper = StoreKey.successor(ofPrefix: state.pagePrefix) else {
            throw BenchError.failed("raw postgres: the workload's prefix has no upper bound")
        }
        pageUpperBound = upper
        guard let connection = PQconnectdb(conninfo) else { throw BenchError.failed("raw postgres: out of memory") }
        self.connection = connection  // from here on, deinit finishes it
        guard PQstatus(connection) == CONNECTION_OK else { throw failure("connecting") }
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        let table = BenchPostgres.freshTableName()
        try execute(
            "SET synchronous_commit = \(durability == .synced ? "on" : "off"); "
                + "CREATE TABLE \(table) (key bytea PRIMARY KEY CHECK (octet_length(key) BETWEEN 1 AND 511), "
                + "value bytea NOT NULL)")
        let statements = [
            ("get", "SELECT value FROM \(table) WHERE key = $1"),
            (
                "set",
                "INSERT INTO \(table) (key, value) VALUES ($1, $2) ON CONFLICT (key) DO UPDATE SET value = excluded.value"
            ),
            ("delete", "DELETE FROM \(table) WHERE key = $1"),
            ("keys", "SELECT key FROM \(table) WHERE key >= $1 AND key < $2 ORDER BY key"),
            ("entries", "SELECT key, value FROM \(table) WHERE key >= $1 AND key < $2 ORDER BY key LIMIT $3"),
        ]
        for (name, sql) in statements {
            let result = PQprepare(connection, name, sql, 0, nil)
            defer { PQclear(result) }
            guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw failure("preparing \(name)") }
        }
    }

    deinit { PQfinish(connection) }

    func set(_ index: Int, variant: Int) async throws {
        try run("set", [workload.keyBytes[index], workload.valueBytes[variant]]) { _ in }
    }

    func setBatch(_ indexes: Range<Int>, variant: Int) async throws {
        try pipelinedTransaction(indexes.map { ("set", [workload.keyBytes[$0], workload.valueBytes[variant]]) })
    }

    func get(_ index: Int) async throws -> Bool { try get(workload.keyBytes[index]) }

    func getMiss(_ index: Int) async throws -> Bool { try get(workload.missKeyBytes[index]) }

    func scan(prefix index: Int) async throws -> Int {
        let lower = workload.prefixBytes[index]
        let upper = StoreKey.successor(ofPrefix: lower) ?? [UInt8](repeating: 0xFF, count: StoreKey.maxUTF8Count + 1)
        var keys: [[UInt8]] = []
        try run("keys", [lower, upper]) { result in
            for row in 0..<PQntuples(result) { keys.append(column(result, row, 0)) }
        }
        state.lastKeys = keys
        return keys.count
    }

    func nextPage(limit: Int, restart: Bool) async throws -> Int {
        if restart { state.cursor = nil }
        var lower = state.pagePrefix
        if let cursor = state.cursor {
            let justAfter = cursor + [0]
            if lower.lexicographicallyPrecedes(justAfter) { lower = justAfter }
        }
        let limitBytes = withUnsafeBytes(of: Int64(limit).bigEndian) { Array($0) }
        var page: [(key: [UInt8], value: [UInt8])] = []
        page.reserveCapacity(limit)
        try run("entries", [lower, pageUpperBound, limitBytes]) { result in
            for row in 0..<PQntuples(result) {
                page.append((key: column(result, row, 0), value: column(result, row, 1)))
            }
        }
        state.cursor = page.last?.key
        state.lastPage = page
        return page.count
    }

    func deleteBatch(_ indexes: Range<Int>) async throws {
        try pipelinedTransaction(indexes.map { ("delete", [workload.keyBytes[$0]]) })
    }

    // MARK: - Steps

    private func get(_ key: [UInt8]) throws -> Bool {
        var found = false
        try run("get", [key]) { result in
            guard PQntuples(result) > 0 else { return }
            state.lastValue = column(result, 0, 0)
            found = true
        }
        return found
    }

    /// `BEGIN` and `calls` pipelined 256 at a time, then `COMMIT`; `ROLLBACK` after an error.
    private func pipelinedTransaction(_ calls: [(String, [[UInt8]])]) throws {
        do {
            for start in stride(from: 0, to: calls.count, by: 256) {
                try pipeline(calls[start..<min(calls.count, start + 256)], beginning: start == 0)
            }
            try execute("COMMIT")
        } catch {
            try? execute("ROLLBACK")
            throw error
        }
    }

    private func pipeline(_ calls: ArraySlice<(String, [[UInt8]])>, beginning: Bool) throws {
        guard PQenterPipelineMode(connection) == 1 else { throw failure("entering pipeline mode") }
        defer { PQexitPipelineMode(connection) }
        var sent = 0
        if beginning {
            guard PQsendQueryParams(connection, "BEGIN", 0, nil, nil, nil, nil, 1) == 1 else { throw failure("BEGIN") }
            sent += 1
        }
        for (name, parameters) in calls {
            let lengths = parameters.map { Int32($0.count) }
            let formats = [Int32](repeating: 1, count: parameters.count)
            let queued = withPointers(parameters) { values in
                PQsendQueryPrepared(connection, name, Int32(parameters.count), values, lengths, formats, 1)
            }
            guard queued == 1 else { throw failure("sending \(name)") }
            sent += 1
        }
        guard PQpipelineSync(connection) == 1 else { throw failure("syncing the pipeline") }
        var failed = false
        for _ in 0..<sent {
            while let result = PQgetResult(connection) {
                if PQresultStatus(result) != PGRES_COMMAND_OK { failed = true }
                PQclear(result)
            }
        }
        let sync = PQgetResult(connection)
        defer { PQclear(sync) }
        guard !failed, PQresultStatus(sync) == PGRES_PIPELINE_SYNC else { throw failure("running a pipeline") }
    }

    /// Runs prepared statement `name` with binary `parameters` (the int8 `LIMIT` too: its 8 bytes
    /// big-endian), reads its rows with `body`.
    private func run(_ name: String, _ parameters: [[UInt8]], _ body: (OpaquePointer) -> Void) throws {
        let lengths = parameters.map { Int32($0.count) }
        let formats = [Int32](repeating: 1, count: parameters.count)
        let result = withPointers(parameters) { values in
            PQexecPrepared(connection, name, Int32(parameters.count), values, lengths, formats, 1)
        }
        defer { PQclear(result) }
        guard let result, [PGRES_COMMAND_OK, PGRES_TUPLES_OK].contains(PQresultStatus(result)) else {
            throw failure("running \(name)")
        }
        body(result)
    }

    private func execute(_ sql: String) throws {
        let result = PQexec(connection, sql)
        defer { PQclear(result) }
        guard PQresultStatus(result) == PGRES_COMMAND_OK else { throw failure(sql) }
    }

    private func failure(_ action: String) -> BenchError {
        let message = PQerrorMessage(connection).map { String(cString: $0) } ?? "unknown error"
        return BenchError.failed("raw postgres: \(action): \(message)")
    }
}

/// Calls `body` with pointers to each buffer's bytes (never null, even for an empty one).
private func withPointers<Result>(
    _ buffers: [[UInt8]], _ body: ([UnsafePointer<CChar>?]) -> Result
) -> Result {
    var pointers: [UnsafePointer<CChar>?] = []
    func nest(_ index: Int) -> Result {
        guard index < buffers.count else { return body(pointers) }
        return (buffers[index].isEmpty ? [0] : buffers[index]).withUnsafeBufferPointer { bytes in
            pointers.append(UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self))
            return nest(index + 1)
        }
    }
    return nest(0)
}

/// A copy of column `column` of row `row`.
private func column(_ result: OpaquePointer, _ row: Int32, _ column: Int32) -> [UInt8] {
    let count = Int(PQgetlength(result, row, column))
    guard count > 0, let start = PQgetvalue(result, row, column) else { return [] }
    return [UInt8](UnsafeRawBufferPointer(start: start, count: count))
}
