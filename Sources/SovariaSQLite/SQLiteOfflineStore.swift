import Foundation
import Sovaria
import SovariaPlumbing

/// Keeps entries in one SQLite file: atomic batches, ordered scans from the key index, and
/// compaction that gives deleted space back to the operating system.
///
/// The file holds one rowid table with a BLOB primary key, so keys compare as bytes (memcmp) and
/// `"\0"` survives in keys and values. It runs in WAL mode; `Durability.synced` commits with
/// `synchronous=FULL` (survives power loss), `Durability.flushed` with `NORMAL` (survives a
/// crash of the process). New files get mode 0600 and incremental auto-vacuum; the layout
/// version is kept in `PRAGMA user_version`.
///
/// - Important: Safe from any number of tasks. Where each call runs:
///   - ``get(_:)``, ``keys(_:)`` and ``entries(_:after:limit:)`` run **on the caller's executor**
///     (the main actor too), on a read-only connection taken from a small pool under a lock held
///     only to take it and give it back. A WAL reader never waits for the writer, so a point read
///     costs about what a raw prepared `sqlite3_step` does (docs/ARCHITECTURE.md, "Where calls
///     run", has the figures).
///   - ``set(_:_:)``, ``delete(_:)``, ``write(_:)`` and ``compact()`` run on a private Dispatch
///     queue, one at a time, on the file's single writer connection, so a commit waiting for the
///     disk or for another process's lock never parks a thread of Swift's cooperative pool.
///     Every write is one `BEGIN IMMEDIATE` transaction, and nothing awaits inside it.
///     A small `.flushed` batch (256 writes and 64 KiB at most) is the exception: its commit
///     does not wait for the disk, so it runs on the caller's thread when the writer is free and
///     no other process holds the lock, and saves the hop to the queue and back; otherwise it goes
///     to the queue like any other. Such a commit still syncs
///     at a WAL checkpoint (every 1,000 pages), a few milliseconds on the caller's thread.
///
///   Each file is open once per process: stores on the same file (by any spelling of its path)
///   share one writer and one reader pool, and see each other's writes at once; each store's
///   writes keep its own ``durability``. Other processes may open the file too; a write that
///   waits longer than 5 s for their lock throws `OfflineStoreError.Code.locked`.
///
/// ```swift
/// let url = URL.applicationSupportDirectory.appendingPathComponent("sovaria/offline.sqlite")
/// let store = try SQLiteOfflineStore(fileURL: url)
/// try await store.write([.set(key: "app:notes:0001", value: "{}"), .delete(key: "app:notes:0000")])
/// ```
public final class SQLiteOfflineStore: OfflineStore {
    /// The database file.
    public let fileURL: URL
    /// How far a write has gone when its call returns.
    public let durability: Durability
    /// The file's shared connections (internal so tests can check two stores share them).
    let database: SQLiteDatabase

    /// Opens the database at `fileURL`, creating it (and its folder) when missing.
    ///
    /// - Throws: `OfflineStoreError` with engine `OfflineStoreError.Engine.sqlite`: `.corrupt` when
    ///   the file is not an SQLite database, `.unsupported` when a newer Sovaria wrote it or WAL mode is
    ///   unavailable, `.permissionDenied` (a read-only mount says so), `.locked` or `.io` when it cannot be
    ///   opened.
    public convenience init(fileURL: URL, durability: Durability = .synced) throws {
        try self.init(fileURL: fileURL, configuration: Configuration(durability: durability))
    }

    /// Opens the database at `fileURL` as `configuration` says; a file already open in this process
    /// keeps the busy timeout it was opened with.
    ///
    /// - Throws: the errors of ``init(fileURL:durability:)``.
    public init(fileURL: URL, configuration: Configuration) throws {
        self.fileURL = fileURL
        durability = configuration.durability
        database = try SQLiteDatabase.open(
            fileURL: fileURL, durability: durability, busyTimeoutMilliseconds: configuration.busyTimeoutMilliseconds)
    }

    /// Atomic batches, persistent, ordered scans, compaction and byte values.
    public var capabilities: StoreCapabilities {
        [.atomicBatch, .persistent, .orderedScan, .compaction, .byteValues]
    }

    /// The value stored under `key`, or `nil`; runs on the caller's executor.
    ///
    /// - Throws: `.invalidKey` for a key of 0 or more than 511 bytes; `.notUTF8` when the stored
    ///   value is bytes that are not UTF-8.
    public func get(_ key: String) async throws -> String? {
        try StoreKey.validate(key)
        return try database.read { reader throws(OfflineStoreError) in try reader.value(for: key) }
    }

    /// The bytes stored under `key`, or `nil`: one copy out of the row; runs on the caller's
    /// executor.
    public func data(_ key: String) async throws -> Data? {
        try await withValue(key) { Data($0) }
    }

    /// Stores the bytes `data` under `key` in its own transaction.
    public func set(_ key: String, data: Data) async throws {
        try await write([.setData(key: key, data: data)])
    }

    /// Calls `body` with the value's bytes as SQLite holds them in the row: no `String`, no UTF-8
    /// check (see `OfflineStore.withValue(_:_:)`); runs on the caller's executor.
    ///
    /// - Important: `body` must not call the store.
    public func withValue<Result>(
        _ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) async throws -> Result? {
        try StoreKey.validate(key)
        // The connection's read takes only the store's own errors: `body`'s pass around it. The
        // read itself returns only whether there was a value, so it is not generic: called
        // through `any OfflineStore` this method is, and every generic layer below it would look
        // up type metadata on each call.
        let slot = ResultSlot(for: Result.self)
        defer { slot.free() }
        var bodyError: (any Error)?
        let found = try database.read { reader throws(OfflineStoreError) -> Bool in
            try reader.visitValue(for: key) { bytes in
                do {
                    slot.store(try body(bytes))
                } catch {
                    bodyError = error
                }
            }
        }
        if let bodyError { throw bodyError }
        guard found else { return nil }
        return slot.take(Result.self)
    }

    /// Stores `value` under `key` in its own transaction.
    public func set(_ key: String, _ value: String) async throws {
        try await write([.set(key: key, value: value)])
    }

    /// Removes `key`; a missing key is not an error.
    public func delete(_ key: String) async throws {
        try await write([.delete(key: key)])
    }

    /// Applies `batch` in one transaction: every write, or (after an invalid key or any engine
    /// error) none. Readers see the batch whole or not at all, also across a crash.
    ///
    /// - Throws: `.invalidKey` before anything is written; `.full` when the disk is full even
    ///   after the WAL was checkpointed and the batch retried once; `.locked` when another
    ///   process held the write lock for more than 5 s; `.io` for other engine errors.
    public func write(_ batch: [StoreWrite]) async throws {
        try StoreKey.validate(batch)
        guard !batch.isEmpty else { return }
        let durability = durability
        if runsInline(batch) {
            let written = try database.writeIfIdle { writer throws(OfflineStoreError) in
                try writer.applyWithoutWaiting(batch, durability: durability)
            }
            if written { return }
        }
        try await database.commit(batch, durability: durability)
    }

    /// The most writes, and bytes, of a batch that runs on the caller's thread.
    static let inlineWriteMaxEntries = 256
    static let inlineWriteMaxBytes = 64 * 1_024

    /// Whether `batch` runs on the caller's executor: only a flushed one (a synced commit waits for
    /// the disk), only a small one, and only when it need not wait for a lock (see ``write(_:)``).
    private func runsInline(_ batch: [StoreWrite]) -> Bool {
        guard durability == .flushed, batch.count <= Self.inlineWriteMaxEntries else { return false }
        var bytes = 0
        for write in batch {
            if write.isSet { bytes += write.key.utf8.count + write.valueByteCount }
        }
        return bytes <= Self.inlineWriteMaxBytes
    }

    /// The keys that start with `prefix`, in byte order, read from the key index; runs on the
    /// caller's executor.
    ///
    /// - Complexity: O(log n + m) for m matching keys.
    public func keys(_ prefix: String) async throws -> [String] {
        guard let range = StoreKeyRange(prefix: prefix) else { return [] }
        return try database.read { reader throws(OfflineStoreError) in try reader.keys(in: range) }
    }

    /// Up to `limit` entries whose keys start with `prefix` and sort after `after`, in byte
    /// order, read from the key index; runs on the caller's executor.
    ///
    /// - Complexity: O(log n + limit).
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        guard limit > 0, let range = StoreKeyRange(prefix: prefix, after: after) else { return [] }
        return try database.read { reader throws(OfflineStoreError) in try reader.entries(in: range, limit: limit) }
    }

    /// ``entries(_:after:limit:)`` with the values as bytes.
    ///
    /// - Complexity: O(log n + limit).
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        guard limit > 0, let range = StoreKeyRange(prefix: prefix, after: after) else { return [] }
        return try database.read { reader throws(OfflineStoreError) in
            try reader.dataEntries(in: range, limit: limit)
        }
    }

    /// Hands `body` the key and value bytes of each entry of the page as SQLite holds them in the
    /// row: one statement, no `String` or `Data` per entry (see
    /// `OfflineStore.withEntries(_:after:limit:_:)`); runs on the caller's executor.
    ///
    /// - Important: `body` must not call the store: the page's read holds one of the store's
    ///   reader connections while it runs.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        guard let range = StoreKeyRange(prefix: prefix, after: after) else { return .empty }
        return try EntryScan.run(limit: limit, body: body) { visit in
            try database.read { reader throws(OfflineStoreError) in
                try reader.visitEntries(in: range, limit: limit, visit)
            }
        }
    }

    /// Hands `body` the bytes of each key of the page as SQLite holds them in the index: one
    /// statement, no value read, no `String` (see `OfflineStore.withKeys(_:after:limit:_:)`);
    /// runs on the caller's executor.
    ///
    /// - Important: `body` must not call the store.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        guard let range = StoreKeyRange(prefix: prefix, after: after) else { return .empty }
        return try EntryScan.run(limit: limit, keys: body) { visit in
            try database.read { reader throws(OfflineStoreError) in
                try reader.visitKeys(in: range) { key in visit(key, EntryScan.noValue) }
            }
        }
    }

    /// Checkpoints and truncates the WAL and runs `VACUUM`, so the file shrinks to what its
    /// entries need; runs on the private queue.
    ///
    /// - Important: `VACUUM` rewrites the whole file and needs about its size free on disk. When
    ///   the disk is too full for that, the free pages are still given back by an incremental
    ///   vacuum. Reads go on meanwhile; writes wait.
    public func compact() async throws {
        try await database.write { writer in try writer.compact() }
    }

    /// Whether `PRAGMA quick_check` finds the file sound; for tests and crash checks. Runs on the
    /// private queue, as it reads the whole file.
    package func quickCheck() async throws -> Bool {
        try await database.readOnQueue { reader throws(OfflineStoreError) in try reader.quickCheck() == ["ok"] }
    }

    /// The problems SQLite's own check lists for the file, as SQLite words them; empty when it is
    /// sound. What `sovaria verify` runs.
    ///
    /// `PRAGMA integrity_check` reads every page: the b-tree structure, the free list, and every row
    /// against the key index. `quick` runs `PRAGMA quick_check`, the same without the index cross-check
    /// (about as fast as reading the file). Neither sees a changed byte inside a value: SQLite keeps
    /// no checksum of its own (wrap the store in `ChecksummedOfflineStore` for that).
    ///
    /// - Important: Reads the whole file on the private queue, on a read connection of its own
    ///   snapshot (WAL): writes go on meanwhile.
    /// - Throws: ``OfflineStoreError/Code/corrupt`` when the damage stops the check itself.
    package func integrityProblems(quick: Bool = false) async throws -> [String] {
        try await database.readOnQueue { reader throws(OfflineStoreError) in try reader.integrityProblems(quick: quick)
        }
    }

    /// The first column of `sql`'s first row, run on the writer connection (`PRAGMA`s that are
    /// per connection, such as `synchronous`); for tests and diagnostics.
    func writerText(_ sql: String) async throws -> String? {
        try await database.write { writer in try writer.text(sql) }
    }
}
