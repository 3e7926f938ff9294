import CLibPQ
import Foundation
import Sovaria
import Synchronization

/// Keeps entries in one PostgreSQL table that any number of processes and machines share:
/// atomic batches, ordered scans from the key index, and the server's replication and backups.
///
/// The table has a `bytea` primary key, so keys compare as bytes (memcmp) and prefix scans are
/// index range scans (`key >= prefix AND key < successor(prefix)`). Values are `bytea` too,
/// holding the value's UTF-8 bytes: PostgreSQL's `text` cannot hold `"\0"`, which values may
/// contain, and would check encodings on every row. Every key and value travels as a binary
/// parameter of a prepared statement, never inside SQL text. The table is created on first use
/// (or checked, when it exists: other columns throw `OfflineStoreError.Code.unsupported`).
///
/// Durability is PostgreSQL's `synchronous_commit`, set per connection: `Durability.synced` is
/// `on` (the commit is flushed to the server's WAL on disk before the call returns; with
/// synchronous replication configured, also to the standbys), `Durability.flushed` is `off`:
/// the call returns before the server flushes its WAL, so a write survives a crash of this
/// process (the server has it), but a crash of the server loses the writes of up to three times
/// its `wal_writer_delay` (200 ms by default). Neither ever leaves half a batch.
///
/// - Important: Safe from any number of tasks, and from any number of processes and machines on
///   the same table. Every call runs on a private Dispatch queue (libpq blocks on the network), on
///   a connection from a pool of at most ``Configuration/maxConnections``; calls beyond that
///   wait, suspended. Connections open on first use, not in `init`.
///
///   After the server restarts, or a connection breaks, the next call drops the dead connection
///   and opens a new one. A call that was running when its connection broke is sent again once on
///   a new connection only when that is certainly safe: reads always; writes only when they
///   certainly did not commit (the connection broke before their `COMMIT`, or before a single
///   write was sent). A write whose commit was sent but whose answer never came throws
///   `OfflineStoreError.Code.outcomeUnknown`: it may or may not have been applied, and sending
///   it again blindly could overwrite a newer write another process made meanwhile (read its
///   keys back once the store answers; Sovaria's queue and file cache do). While the server cannot be
///   reached, calls throw `OfflineStoreError.Code.io` with libpq's reason and what to check.
///
/// ```swift
/// let store = try PostgresOfflineStore(connection: "host=db.internal dbname=app user=sovaria")
/// try await store.write([.set(key: "app:notes:0001", value: "{}"), .delete(key: "app:notes:0000")])
/// ```
public final class PostgresOfflineStore: OfflineStore {
    /// The table the entries are kept in.
    public let table: String
    /// How far a write has gone when its call returns.
    public let durability: Durability
    /// The pool size and timeouts.
    public let configuration: Configuration
    /// Where the conninfo points (`host=… port=… dbname=… user=…`; never the password); for a
    /// store with standbys, the primary and each standby.
    public let server: String
    private let schema: PostgresSchema
    /// The store's connections to the primary (internal so tests can close them).
    let pool: PostgresPool
    /// Where reads go, for a store with standbys; `nil` for a store on one server.
    let standbyReads: PostgresStandbyReads?
    /// The check of the servers' roles, for a store with standbys.
    let serverCheck: PostgresServerCheck?

    /// A store on `table` of the database `connection` names; connects on first use.
    ///
    /// - Parameters:
    ///   - connection: a libpq conninfo (`"host=/var/run/postgresql dbname=app"`) or URL
    ///     (`"postgresql://user@db.internal/app"`); a host that is a folder is a Unix socket.
    ///     Unset fields take libpq's defaults and environment (`PGHOST`, `PGPASSWORD`, …).
    ///   - table: 1 to 63 characters of `a-z`, `0-9` and `_`, not starting with a digit; created on
    ///     first use when missing. Stores on the same table share its entries.
    ///   - durability: `Durability.synced` (`synchronous_commit = on`) or `Durability.flushed`
    ///     (`off`).
    ///   - configuration: the pool size and timeouts.
    /// - Throws: `OfflineStoreError` with engine `.postgres` and code
    ///   `.unsupported` for a table name outside those rules or a conninfo libpq cannot parse.
    ///   Nothing is sent to the server here: connection problems are thrown by the first call.
    public convenience init(
        connection: String, table: String = "sovaria_kv", durability: Durability = .synced,
        configuration: Configuration = Configuration()
    ) throws {
        try self.init(servers: .one(connection), table: table, durability: durability, configuration: configuration)
    }

    /// The servers a store uses: one, or a primary and its standbys.
    enum Servers {
        case one(String)
        case several([PostgresServer])
    }

    /// The store on `servers`; `standbyClock` is the clock of the rules that leave a standby out
    /// of the reads and try it again (a test's own; `ContinuousClock` otherwise).
    init(
        servers: Servers, table: String, durability: Durability, configuration: Configuration,
        standbyClock: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) throws {
        let schema = try PostgresSchema(table: table)
        self.table = table
        self.durability = durability
        self.configuration = configuration
        self.schema = schema
        let session = PostgresSession(durability: durability, configuration: configuration)
        let schemaReady = Mutex(false)
        let prepare = { @Sendable (connection: PostgresConnection) throws(OfflineStoreError) -> PostgresConnection in
            // Each store checks its table once; calls racing on the first use may each check it.
            if !schemaReady.withLock({ $0 }) {
                try schema.prepare(on: connection)
                schemaReady.withLock { $0 = true }
            }
            try connection.prepare(schema.statements)
            return connection
        }
        switch servers {
        case .one(let conninfo):
            let server = try PostgresConninfo(conninfo).description
            self.server = server
            standbyReads = nil
            serverCheck = nil
            pool = PostgresPool(maxConnections: configuration.maxConnections) { () throws(OfflineStoreError) in
                try prepare(session.connect(conninfo, server: server))
            }
        case .several(let list):
            let reads = Mutex<PostgresStandbyReads?>(nil)
            let check = PostgresServerCheck(servers: list, session: session) { primary, primaries in
                reads.withLock { $0 }?.serversChecked(primary, primaries: primaries)
            }
            server = list.map(\.description).joined(separator: "; ")
            serverCheck = check
            pool = PostgresPool(maxConnections: configuration.maxConnections) { () throws(OfflineStoreError) in
                let (connection, server, found) = try check.connectToPrimary()
                // A standby promoted after a failover leaves the reads' rotation: its reads are these;
                // a new timeline is the floor's from now on, before this connection writes anything.
                reads.withLock { $0 }?.primaryConnected(to: server, as: found)
                return try prepare(connection)
            }
            let standbys = list.filter { $0.role != .primary }.map { server in
                PostgresStandbyReads.Standby(
                    server: server,
                    pool: PostgresPool(maxConnections: configuration.maxConnections) { () throws(OfflineStoreError) in
                        let connection = try check.connectToStandby(server)
                        try connection.prepare(schema.standbyStatements)
                        return connection
                    })
            }
            let standbyReads = PostgresStandbyReads(
                standbys: standbys, policy: configuration.readPolicy, wait: configuration.standbyWait,
                now: standbyClock)
            reads.withLock { $0 = standbyReads }
            self.standbyReads = standbyReads
        }
    }

    /// Atomic batches, persistent, ordered scans, compaction and byte values.
    public var capabilities: StoreCapabilities {
        [.atomicBatch, .persistent, .orderedScan, .compaction, .byteValues]
    }

    /// The value stored under `key`, or `nil`; one round trip. Retried once on a new connection
    /// when the connection broke.
    ///
    /// - Throws: `.invalidKey` for a key of 0 or more than 511 bytes; `.notUTF8` when the stored
    ///   value is bytes that are not UTF-8; `.io` when the server cannot be reached.
    public func get(_ key: String) async throws -> String? {
        try await value(key) { (bytes) throws(OfflineStoreError) in
            try StoreValue.string(bytes, key: key, engine: .postgres)
        }
    }

    /// The bytes stored under `key`, or `nil`; one round trip, retried as ``get(_:)`` is.
    public func data(_ key: String) async throws -> Data? {
        try await value(key) { Data($0) }
    }

    /// The value of `key` as `read` makes it from the bytes libpq received, or `nil`.
    private func value<Value: Sendable>(
        _ key: String, _ read: @escaping @Sendable (UnsafeRawBufferPointer) throws(OfflineStoreError) -> Value
    ) async throws -> Value? {
        try StoreKey.validate(key)
        let rows = try await self.rows(
            .init(statement: schema.selectValue, parameters: [.utf8(key)], key: key), while: "Reading a value")
        guard rows.rowCount > 0 else { return nil }
        // The bytes live in `rows` (libpq's result, cleared when it is released).
        return try withExtendedLifetime(rows) { () throws(OfflineStoreError) in
            try read(UnsafeRawBufferPointer(rows.bytes(row: 0, column: 0)))
        }
    }

    /// The rows of a read: from the primary, or from a standby as ``Configuration/readPolicy``
    /// allows. Retried once on a new connection when the connection broke.
    private func rows(_ call: PostgresConnection.Call, while action: String) async throws -> PostgresResult {
        guard let standbyReads, let serverCheck else {
            return try await pool.withConnection(retryable: true) { connection throws(OfflineStoreError) in
                try connection.run(call.statement, call.parameters, while: action, key: call.key)
            }
        }
        try await serverCheck.ensureChecked()
        return try await standbyReads.read(call, while: action, primary: pool)
    }

    /// Stores the bytes `data` under `key`: one statement, its own transaction, one round trip.
    public func set(_ key: String, data: Data) async throws {
        try await write([.setData(key: key, data: data)])
    }

    /// Stores `value` under `key`: one statement, its own transaction, one round trip.
    public func set(_ key: String, _ value: String) async throws {
        try await write([.set(key: key, value: value)])
    }

    /// Removes `key`; a missing key is not an error.
    public func delete(_ key: String) async throws {
        try await write([.delete(key: key)])
    }

    /// Applies `batch` in one transaction: every write, or (after an invalid key or any error)
    /// none. Other sessions see the batch whole or not at all, also across a crash of either side.
    ///
    /// A deadlock with another session's batch (PostgreSQL rolls one back) is retried up to twice.
    ///
    /// - Throws: `.invalidKey` before anything is sent; `.locked` when another session held a lock
    ///   on one of the rows longer than ``Configuration/lockTimeout``; `.full` when the server's
    ///   disk is full; `.permissionDenied` without the privileges on the table; `.io` when the
    ///   connection failed (its message says whether the batch may have been applied).
    public func write(_ batch: [StoreWrite]) async throws {
        try StoreKey.validate(batch)
        for write in batch where write.valueByteCount > Self.maxValueByteCount {
            throw OfflineStoreError(
                .invalidValue,
                "PostgreSQL keeps values of up to 1 GB (\(Self.maxValueByteCount) bytes) and this one has "
                    + "\(write.valueByteCount): split it over several keys, or keep it in a file.",
                engine: .postgres, key: write.key)
        }
        guard !batch.isEmpty else { return }
        let schema = schema
        try await serverCheck?.ensureChecked()
        // A store whose reads check standbys learns where each write's commit is in the log.
        let tracking = standbyReads?.tracksPositions == true ? standbyReads : nil
        let write = tracking?.writeStarts()
        // A synced commit is flushed when it returns: the flush position is past it and no further
        // than the standbys can reach. A flushed (asynchronous) commit is only inserted.
        let learning: PostgresConnection.Statement? =
            tracking == nil ? nil : durability == .synced ? PostgresSchema.flushPosition : PostgresSchema.walPosition
        for attempt in 1...3 {
            do {
                // Sent again after a broken connection only when it certainly did not commit.
                let position = try await pool.withConnection(retryable: true) { connection throws(OfflineStoreError) in
                    try Self.apply(batch, schema: schema, learning: learning, on: connection)
                }
                if let tracking, let write { tracking.writeCommitted(write, at: position) }
                return
            } catch let error as OfflineStoreError {
                // It may have committed: until a later write learns a position, only the primary
                // answers reads (a read-back must not miss it).
                if error.code == .outcomeUnknown, let tracking, let write { tracking.writeCommitted(write, at: nil) }
                guard attempt < 3, Self.deadlockCodes.contains(error.nativeCode ?? 0) else { throw error }
            }
        }
    }

    /// The keys that start with `prefix`, in byte order, read from the key index.
    ///
    /// - Complexity: O(log n + m) on the server for m matching keys; all m come back in one answer.
    public func keys(_ prefix: String) async throws -> [String] {
        guard let range = StoreKeyRange(prefix: prefix) else { return [] }
        let rows = try await self.rows(
            .init(statement: schema.selectKeys, parameters: [.bytes(range.lowerBound), .bytes(range.upperBound)]),
            while: "Listing keys")
        var keys: [String] = []
        keys.reserveCapacity(rows.rowCount)
        for row in 0..<rows.rowCount {
            keys.append(try rows.string(row: row, column: 0, what: "key", table: schema.table))
        }
        return keys
    }

    /// Up to `limit` entries whose keys start with `prefix` and sort after `after`, in byte
    /// order, read from the key index.
    ///
    /// - Complexity: O(log n + limit) on the server.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try await entries(prefix, after: after, limit: limit) { (key, value) throws(OfflineStoreError) in
            StoreEntry(key: key, value: try StoreValue.string(value, key: key, engine: .postgres))
        }
    }

    /// ``entries(_:after:limit:)`` with the values as bytes, on the same terms.
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        try await entries(prefix, after: after, limit: limit) { key, value in
            StoreDataEntry(key: key, data: Data(value))
        }
    }

    private func entries<Entry: Sendable>(
        _ prefix: String, after: String?, limit: Int,
        _ entry: @escaping @Sendable (String, UnsafeRawBufferPointer) throws(OfflineStoreError) -> Entry
    ) async throws -> [Entry] {
        guard limit > 0, let range = StoreKeyRange(prefix: prefix, after: after) else { return [] }
        let rows = try await page(schema.selectEntries, range, limit: limit, while: "Reading entries")
        var entries: [Entry] = []
        entries.reserveCapacity(rows.rowCount)
        // The bytes live in `rows` (libpq's result, cleared when it is released).
        try withExtendedLifetime(rows) { () throws(OfflineStoreError) in
            for row in 0..<rows.rowCount {
                let key = try rows.string(row: row, column: 0, what: "key", table: schema.table)
                entries.append(try entry(key, UnsafeRawBufferPointer(rows.bytes(row: row, column: 1))))
            }
        }
        return entries
    }

    /// The rows of `statement` for one page of `range`: up to `limit`, in key order.
    private func page(
        _ statement: PostgresConnection.Statement, _ range: StoreKeyRange, limit: Int, while action: String
    ) async throws -> PostgresResult {
        try await rows(
            .init(
                statement: statement, parameters: [.bytes(range.lowerBound), .bytes(range.upperBound), .int64(limit)]),
            while: action)
    }

    /// Hands `body` the key and value bytes of each entry of the page where libpq holds them in
    /// the page's one answer: no `String` or `Data` per entry (see
    /// `OfflineStore.withEntries(_:after:limit:_:)`). The page is read on a connection of the
    /// pool; `body` runs on the caller's executor after the connection is back in the pool.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        guard limit > 0, let range = StoreKeyRange(prefix: prefix, after: after) else { return .empty }
        let rows = try await page(schema.selectEntries, range, limit: limit, while: "Reading entries")
        return try EntryScan.run(limit: limit, body: body) { visit in
            withExtendedLifetime(rows) {
                for row in 0..<rows.rowCount {
                    let key = UnsafeRawBufferPointer(rows.bytes(row: row, column: 0))
                    guard visit(key, UnsafeRawBufferPointer(rows.bytes(row: row, column: 1))) else { return }
                }
            }
        }
    }

    /// Hands `body` the bytes of each key of the page where libpq holds them in the page's one
    /// answer (see `OfflineStore.withKeys(_:after:limit:_:)`); `body` runs on the caller's
    /// executor after the connection is back in the pool.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        guard limit > 0, let range = StoreKeyRange(prefix: prefix, after: after) else { return .empty }
        let rows = try await page(schema.selectKeysPage, range, limit: limit, while: "Listing keys")
        return try EntryScan.run(limit: limit, keys: body) { visit in
            withExtendedLifetime(rows) {
                for row in 0..<rows.rowCount {
                    guard visit(UnsafeRawBufferPointer(rows.bytes(row: row, column: 0)), EntryScan.noValue) else {
                        return
                    }
                }
            }
        }
    }

    /// The longest value PostgreSQL keeps in a `bytea` field: 1 GB.
    static let maxValueByteCount = (1 << 30) - 1

    /// Runs `VACUUM` on the table: the space of deleted and replaced rows becomes free for new
    /// rows at once, and empty pages at the end of the table go back to the operating system.
    ///
    /// - Important: `VACUUM` takes no lock that stops other sessions' reads or writes. It does not
    ///   rewrite the table, so free space in its middle stays in the table's files for reuse; to
    ///   give all of it back, an administrator runs `VACUUM FULL`, which blocks every other
    ///   session using the table while it runs (which is why this method does not).
    public func compact() async throws {
        let schema = schema
        try await pool.withConnection(retryable: true) { connection throws(OfflineStoreError) in
            try connection.execute(schema.vacuum, while: "Vacuuming table \(schema.table)")
        }
    }

    /// Closes the idle connections now instead of when the store is released; the next call
    /// opens new ones.
    public func closeIdleConnections() {
        pool.closeIdle()
    }

    /// A deadlock or serialization failure: PostgreSQL rolled the transaction back, so it is safe
    /// to run again.
    private static let deadlockCodes: Set<Int32> = [
        OfflineStoreError.packed(sqlState: "40P01"), OfflineStoreError.packed(sqlState: "40001"),
    ]

    /// Writes per pipeline chunk: one round trip each. 256 answers are a few KiB, far below a
    /// socket buffer, so neither side blocks while the other still sends.
    private static let pipelineChunk = 256

    /// One write is one statement in its own transaction (one round trip); more are one
    /// `BEGIN … COMMIT`, which nothing interrupts: no `await` inside. The writes are pipelined
    /// (one round trip per ``pipelineChunk``) and `COMMIT` goes alone after their answers, so a
    /// connection that breaks before it certainly committed nothing.
    ///
    /// With `learning`, the commit is followed in the same round trip by that statement's position
    /// of the primary's log, past the commit; returns it, or `nil` when it could not be read after
    /// the commit (the write is applied all the same).
    private static func apply(
        _ batch: [StoreWrite], schema: PostgresSchema, learning: PostgresConnection.Statement?,
        on connection: PostgresConnection
    ) throws(OfflineStoreError) -> WALPosition? {
        let calls = batch.map { write in
            switch write {
            case .set(let key, let value):
                PostgresConnection.Call(statement: schema.upsert, parameters: [.utf8(key), .utf8(value)], key: key)
            case .setData(let key, let data):
                PostgresConnection.Call(statement: schema.upsert, parameters: [.utf8(key), .data(data)], key: key)
            case .delete(let key):
                PostgresConnection.Call(statement: schema.delete, parameters: [.utf8(key)], key: key)
            }
        }
        if batch.count == 1 {
            guard let learning else {
                try run(batch[0], schema: schema, commits: true, on: connection)
                return nil
            }
            // The write is its own implicit transaction, committed by the first sync.
            let action = if case .delete = batch[0] { "Deleting a key" } else { "Storing a value" }
            let results = try connection.pipeline(
                [.call(calls[0]), .sync(commits: true), .call(.init(statement: learning)), .sync(commits: false)],
                while: action)
            return results.count == 2 ? try? WALPosition(results[1]) : nil
        }
        do {
            // Pipelined in chunks: the server's answers to a chunk must fit the socket's buffer
            // while libpq, in blocking mode, is still sending it.
            for start in stride(from: 0, to: calls.count, by: Self.pipelineChunk) {
                try connection.runPipelined(
                    calls[start..<min(calls.count, start + Self.pipelineChunk)], beginning: start == 0,
                    while: "Writing a batch of \(batch.count) writes")
            }
            guard let learning else {
                try connection.commit(while: "Committing a batch of \(batch.count) writes")
                return nil
            }
            let results = try connection.pipeline(
                [.text("COMMIT"), .sync(commits: true), .call(.init(statement: learning)), .sync(commits: false)],
                while: "Committing a batch of \(batch.count) writes")
            return results.count == 2 ? try? WALPosition(results[1]) : nil
        } catch {
            if connection.isInTransaction, !connection.isBroken {
                try? connection.execute("ROLLBACK", while: "Rolling back a batch")
            }
            throw error
        }
    }

    private static func run(
        _ write: StoreWrite, schema: PostgresSchema, commits: Bool, on connection: PostgresConnection
    ) throws(OfflineStoreError) {
        switch write {
        case .set(let key, let value):
            _ = try connection.run(
                schema.upsert, [.utf8(key), .utf8(value)], commits: commits, while: "Storing a value", key: key)
        case .setData(let key, let data):
            _ = try connection.run(
                schema.upsert, [.utf8(key), .data(data)], commits: commits, while: "Storing a value", key: key)
        case .delete(let key):
            _ = try connection.run(schema.delete, [.utf8(key)], commits: commits, while: "Deleting a key", key: key)
        }
    }
}
