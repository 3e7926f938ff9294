import Foundation
import Sovaria
import SovariaPlumbing

/// Keeps entries in an LMDB environment: a memory-mapped B+tree whose reads cost well under a
/// microsecond, with atomic batches, an ordered index and compaction.
///
/// The folder holds LMDB's `data.mdb` and `lock.mdb`; it is created with mode 0700 (files 0600) when
/// missing. Keys are stored as their UTF-8 bytes, so LMDB's own order is byte order and ``keys(_:)`` and
/// ``entries(_:after:limit:)`` walk a cursor instead of sorting. Values are stored whole, with their
/// length: `""` and `"\0"` are kept.
///
/// The memory map starts at `initialMapSizeBytes` and doubles whenever a write finds it full (up to
/// `maxMapSizeBytes`), with no action from the caller; the write then runs again whole. Reader slots
/// that crashed processes left behind are cleared when the environment opens. ``compact()`` writes a
/// compacted copy and swaps it in, so the file shrinks after deletes.
///
/// - Important: Where each call runs:
///   - ``get(_:)`` runs on the caller's executor (no hop), in a read-only transaction reused from a
///     small pool: it costs about as much as LMDB's own get plus making the `String`. Safe on the main
///     actor.
///   - ``entries(_:after:limit:)`` of up to 256 entries and 128 KiB runs on the caller's executor too
///     (as LevelDB's); larger pages and ``keys(_:)`` run on a private Dispatch queue, never on Swift's
///     cooperative threads, since their cost grows with what they return.
///   - ``set(_:_:)``, ``delete(_:)``, ``write(_:)`` and ``compact()`` run on a private serial Dispatch
///     queue shared by every store on the folder; each write transaction begins and commits there as
///     one synchronous block, so it never spans threads and never waits on an `await`.
///
/// - Important: Safe from any number of tasks. A batch is one transaction: all or nothing, also across
///   a crash, and no reader sees part of it. Open a folder as often as you like: every store on one
///   folder in a process shares one environment (LMDB must never open a path twice), and the first
///   store's `initialMapSizeBytes`, `maxMapSizeBytes` and `maxReaders` apply to all of them. Other
///   processes may use the folder at the same time, but ``compact()`` then refuses with
///   `OfflineStoreError.Code.locked`.
///
/// - Important: Durability: `Durability.synced` commits with LMDB's default full sync;
///   `Durability.flushed` opens the environment with `MDB_NOSYNC`: a commit returns once its pages
///   are in the operating system's cache, so it survives a crash of the process but a crash of the
///   machine may undo the last commits (never tear one). A synced store that shares a flushed
///   environment flushes it (`mdb_env_sync`) after each of its commits.
///
/// ```swift
/// let store = try LMDBOfflineStore(directory: appSupport.appendingPathComponent("offline.lmdb"))
/// try await store.write([.set(key: "app:notes:0001", value: "{}"), .delete(key: "app:notes:0000")])
/// let value = try await store.get("app:notes:0001")
/// ```
public final class LMDBOfflineStore: OfflineStore {
    /// The largest `limit` for which ``entries(_:after:limit:)`` runs on the caller's executor.
    static let inlinePageLimit = 256
    /// Bytes of keys and values a page read on the caller's executor may hold; a page that holds
    /// more is read again, whole, on the queue.
    static let inlinePageMaxBytes = 128 * 1_024
    /// Keys ``keys(_:)`` reads on the caller's executor before it continues on a queue.
    static let inlineKeysLimit = 1_000

    /// The folder holding `data.mdb` and `lock.mdb`.
    public let directory: URL
    /// How far a write has gone when its call returns.
    public let durability: Durability

    /// The environment, shared with every store on the same folder in this process.
    let environment: LMDBEnvironment
    /// Set when this store wants `.synced` but shares an environment opened `.flushed`.
    private let flushesAfterCommit: Bool

    /// Opens (creating when missing) the LMDB environment in `directory`.
    ///
    /// - Parameters:
    ///   - directory: The folder; created with mode 0700 when missing.
    ///   - durability: `Durability.synced` (default) or `Durability.flushed`.
    /// - Throws: `OfflineStoreError` when the folder can't be created or the environment can't be opened
    ///   (`OfflineStoreError.Code.permissionDenied`, `OfflineStoreError.Code.corrupt`, …).
    public convenience init(directory: URL, durability: Durability = .synced) throws {
        try self.init(directory: directory, configuration: Configuration(durability: durability))
    }

    /// Opens (creating when missing) the LMDB environment in `directory` as `configuration` says.
    ///
    /// - Throws: `OfflineStoreError` when the folder can't be created or the environment can't be opened
    ///   (`OfflineStoreError.Code.permissionDenied`, `OfflineStoreError.Code.corrupt`, …).
    public init(directory: URL, configuration: Configuration) throws {
        let pageSize = Self.systemPageSize
        let initial = Self.roundUp(max(configuration.initialMapSizeBytes, pageSize), toMultipleOf: pageSize)
        let options = LMDBEnvironment.Options(
            durability: configuration.durability,
            initialMapSizeBytes: initial,
            maxMapSizeBytes: max(initial, Self.roundUp(configuration.maxMapSizeBytes, toMultipleOf: pageSize)),
            maxReaders: max(1, configuration.maxReaders)
        )
        self.directory = directory
        durability = configuration.durability
        environment = try LMDBEnvironment.shared(directory: directory, options: options)
        flushesAfterCommit = durability == .synced && environment.options.durability == .flushed
    }

    /// Atomic batches, persistent, ordered scans from LMDB's index, compaction and byte values.
    public var capabilities: StoreCapabilities {
        [.atomicBatch, .persistent, .orderedScan, .compaction, .byteValues]
    }

    /// The memory map's current size in bytes: how large the data file may grow before the map doubles.
    public var mapSizeBytes: Int { environment.mapSizeBytes }

    /// How many reader slots of crashed processes were cleared when this folder's environment opened.
    public var staleReadersClearedAtOpen: Int { environment.staleReadersCleared }

    /// The value stored under `key`, or `nil`.
    ///
    /// - Important: Runs on the caller's executor: one read-only transaction, no hop.
    public func get(_ key: String) async throws -> String? {
        try StoreKey.validate(key)
        return try environment.value(for: key)
    }

    /// The bytes stored under `key`, copied out of the map, or `nil`.
    ///
    /// - Important: Runs on the caller's executor: one read-only transaction, no hop.
    public func data(_ key: String) async throws -> Data? {
        try await withValue(key) { Data($0) }
    }

    /// Stores the bytes `data` under `key` in one write transaction.
    public func set(_ key: String, data: Data) async throws {
        try await write([.setData(key: key, data: data)])
    }

    /// Calls `body` with the value's bytes where they lie in LMDB's map, inside one read
    /// transaction: no copy, no `String`, no UTF-8 check (see `OfflineStore.withValue(_:_:)`).
    ///
    /// - Important: Runs on the caller's executor. `body` must not call the store.
    public func withValue<Result>(
        _ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) async throws -> Result? {
        try StoreKey.validate(key)
        // Through a closure that returns nothing, so the environment's read is not generic:
        // called through `any OfflineStore` this method is, and each generic layer below it
        // looked up type metadata on every call.
        let slot = ResultSlot(for: Result.self)
        defer { slot.free() }
        guard try environment.visitValue(for: key, { slot.store(try body($0)) }) else { return nil }
        return slot.take(Result.self)
    }

    /// Stores `value` under `key` in one write transaction.
    public func set(_ key: String, _ value: String) async throws {
        try await write([.set(key: key, value: value)])
    }

    /// Removes `key`; a missing key is not an error.
    public func delete(_ key: String) async throws {
        try await write([.delete(key: key)])
    }

    /// Applies the whole batch in one write transaction, or none of it.
    ///
    /// Every key is validated before the transaction begins. When the map is full the transaction is
    /// aborted, the map grows, and the whole batch runs again.
    ///
    /// - Important: A flushed batch of up to `inlineWriteMaxEntries` writes and
    ///   `inlineWriteMaxBytes` bytes runs on the caller's executor when no other write of this
    ///   process is running (its commit does not wait for the disk: a hop would cost more than it);
    ///   everything else runs on the environment's private write queue.
    public func write(_ batch: [StoreWrite]) async throws {
        try StoreKey.validate(batch)
        guard !batch.isEmpty else { return }
        let environment = environment
        let forceSync = flushesAfterCommit
        if !forceSync, environment.options.durability == .flushed, Self.isSmall(batch),
            try environment.writeIfIdle(batch, forceSync: false)
        {
            return
        }
        try await environment.commit(batch, forceSync: forceSync)
    }

    /// The most writes, and bytes, of a flushed batch that runs on the caller's thread.
    static let inlineWriteMaxEntries = 256
    static let inlineWriteMaxBytes = 64 * 1_024

    private static func isSmall(_ batch: [StoreWrite]) -> Bool {
        guard batch.count <= inlineWriteMaxEntries else { return false }
        var bytes = 0
        for write in batch {
            if write.isSet { bytes += write.key.utf8.count + write.valueByteCount }
        }
        return bytes <= inlineWriteMaxBytes
    }

    /// The keys that start with `prefix` (byte prefix), in byte order, from an LMDB cursor.
    ///
    /// - Complexity: O(log n + m) for m matching keys.
    /// - Important: A scan of up to `inlineKeysLimit` keys runs on the caller's executor (a hop
    ///   to a queue would cost more than a short scan). A longer one is read again, whole, on a
    ///   private Dispatch queue, so the answer still comes from one read transaction.
    public func keys(_ prefix: String) async throws -> [String] {
        let environment = environment
        let first = try environment.keys(prefix: prefix, limit: Self.inlineKeysLimit + 1)
        guard first.count > Self.inlineKeysLimit else { return first }
        return try await environment.scanQueue.runConcurrently { try environment.keys(prefix: prefix) }
    }

    /// Up to `limit` entries after `after` whose keys start with `prefix`, in byte order, from an LMDB
    /// cursor.
    ///
    /// - Complexity: O(log n + limit).
    /// - Important: Runs on the caller's executor when the page has at most `inlinePageLimit` entries
    ///   and `inlinePageMaxBytes` bytes, else on a private Dispatch queue (one read transaction either
    ///   way).
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        guard limit > 0 else { return [] }
        let environment = environment
        if limit <= Self.inlinePageLimit,
            let page = try environment.entries(
                prefix: prefix, after: after, limit: limit, maxBytes: Self.inlinePageMaxBytes)
        {
            return page
        }
        return try await environment.scanQueue.runConcurrently {
            try environment.entries(prefix: prefix, after: after, limit: limit, maxBytes: .max) ?? []
        }
    }

    /// ``entries(_:after:limit:)`` with the values as bytes, on the same terms.
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        guard limit > 0 else { return [] }
        let environment = environment
        if limit <= Self.inlinePageLimit,
            let page = try environment.dataEntries(
                prefix: prefix, after: after, limit: limit, maxBytes: Self.inlinePageMaxBytes)
        {
            return page
        }
        return try await environment.scanQueue.runConcurrently {
            try environment.dataEntries(prefix: prefix, after: after, limit: limit, maxBytes: .max) ?? []
        }
    }

    /// Hands `body` the key and value bytes of each entry of the page where they lie in LMDB's
    /// map: one read transaction and one cursor for the page, no copy, no `String` (see
    /// `OfflineStore.withEntries(_:after:limit:_:)`).
    ///
    /// - Important: Runs on the caller's executor, whatever the page's size: a long page holds
    ///   its read transaction (and so the pages it reads) for as long as `body` takes. `body`
    ///   must not call the store.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        try EntryScan.run(limit: limit, body: body) { visit in
            try environment.scan(prefix: prefix, after: after, limit: limit) { key, value in
                visit(key.bytes, value.bytes)
            }
        }
    }

    /// Hands `body` the bytes of each key of the page where they lie in LMDB's map: one read
    /// transaction and one cursor, no value touched (see `OfflineStore.withKeys(_:after:limit:_:)`).
    ///
    /// - Important: Runs on the caller's executor, whatever the page's size. `body` must not call
    ///   the store.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        try EntryScan.run(limit: limit, keys: body) { visit in
            try environment.scan(prefix: prefix, after: after, limit: limit) { key, _ in
                visit(key.bytes, EntryScan.noValue)
            }
        }
    }

    /// LMDB's own accounts of the environment held against a walk of every entry: what `sovaria
    /// verify` runs as LMDB's check (``LMDBIntegrityReport``). Clears reader slots of dead
    /// processes, as an open does.
    ///
    /// LMDB keeps no checksums: a changed byte inside a value is not seen (wrap the store in
    /// `ChecksummedOfflineStore` for that).
    ///
    /// - Important: Reads every page, in one read transaction on a private Dispatch queue; writes
    ///   go on meanwhile. LMDB reads its pages in place: a page damaged so that its offsets point
    ///   outside the map can end the process with SIGSEGV (run the check in a process of its own,
    ///   as `sovaria verify` is).
    package func integrityReport() async throws -> LMDBIntegrityReport {
        let environment = environment
        return try await environment.scanQueue.runConcurrently { try environment.check() }
    }

    /// Shrinks `data.mdb` to the pages in use: writes a compacted copy (`MDB_CP_COMPACT`) and swaps it in.
    ///
    /// Reads go on during the copy and wait only for the swap. Needs free disk space for the copy.
    ///
    /// - Important: Runs on the environment's private write queue. Throws
    ///   `OfflineStoreError.Code.locked`, changing nothing, when another process has the folder open.
    public func compact() async throws {
        let environment = environment
        try await environment.writeQueue.runAlone { try environment.compact() }
    }

    private static var systemPageSize: Int {
        let size = sysconf(Int32(_SC_PAGESIZE))
        return size > 0 ? size : 4_096
    }

    private static func roundUp(_ value: Int, toMultipleOf unit: Int) -> Int {
        let (sum, overflow) = value.addingReportingOverflow(unit - 1)
        return overflow ? Int.max / unit * unit : sum / unit * unit
    }
}
