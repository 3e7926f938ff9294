import Foundation
import Sovaria

/// The one read-write connection of a database, with its prepared writes.
///
/// Every write is a `BEGIN IMMEDIATE` transaction: the write lock is taken before anything is
/// read, so a deferred transaction can never fail half-way with `SQLITE_BUSY_SNAPSHOT`. Nothing
/// awaits inside a transaction: each runs whole in one synchronous call.
// @unchecked: used only inside BlockingWorkQueue.write blocks, which run one at a time.
final class SQLiteWriter: @unchecked Sendable {
    /// The WAL file is cut back to this size after a checkpoint, so one huge batch does not keep
    /// its space forever.
    static let walSizeLimitBytes = 64 * 1_024 * 1_024

    private let connection: SQLiteConnection
    private let begin: SQLiteStatement
    private let commit: SQLiteStatement
    private let rollback: SQLiteStatement
    /// A savepoint per batch of a shared commit, so one batch's failure undoes only its writes.
    private let savepoint: SQLiteStatement
    private let releaseSavepoint: SQLiteStatement
    private let rollbackToSavepoint: SQLiteStatement
    private let upsert: SQLiteStatement
    private let delete: SQLiteStatement
    /// The durability `PRAGMA synchronous` is set for (it is per connection, not per file).
    private var durability: Durability
    /// Disk space set aside for deleting on a full disk (`<file>-reserve`).
    private let reserve: DiskReserve
    static let reserveBytes = 1 << 20
    /// Checkpoints like SQLite, and knows the WAL's size (see ``applyWithoutWaiting(_:durability:)``).
    private let checkpointer = SQLiteCheckpointer()

    /// Opens (creating when missing) and sets up the database at `path`.
    init(
        path: String, durability: Durability, busyTimeoutMilliseconds: Int32
    ) throws(OfflineStoreError) {
        connection = try SQLiteConnection(path: path, readOnly: false, busyTimeoutMilliseconds: busyTimeoutMilliseconds)
        try SQLiteSchema.prepare(connection)
        SQLiteCheckpointer.install(checkpointer, on: connection.handle)
        reserve = DiskReserve(path: path + "-reserve", sizeBytes: Self.reserveBytes)
        self.durability = durability
        try Self.setSynchronous(for: durability, on: connection)
        try connection.execute(
            "PRAGMA journal_size_limit = \(Self.walSizeLimitBytes)", purpose: "Limiting the write-ahead log")
        // Debian builds SQLite with secure_delete on: every page a delete frees is overwritten
        // with zeros, so deleting a 256 KiB value writes 64 pages to the WAL (an eviction pass
        // wrote as much as it freed, and its commits checkpointed in the puts' path). FAST zeroes
        // what costs no extra I/O (the b-tree pages the delete rewrites anyway) and leaves freed
        // overflow pages as they were, until compact() or reuse; secrets belong in the
        // encryption wrapper, which stores no plaintext at all.
        try connection.execute("PRAGMA secure_delete = FAST", purpose: "Setting how deletes clear pages")
        let database = connection.handle
        begin = try SQLiteStatement("BEGIN IMMEDIATE", purpose: "Starting a write transaction", on: database)
        commit = try SQLiteStatement("COMMIT", purpose: "Committing a write transaction", on: database)
        rollback = try SQLiteStatement("ROLLBACK", purpose: "Rolling back a write transaction", on: database)
        savepoint = try SQLiteStatement("SAVEPOINT batch", purpose: "Starting a batch of a shared commit", on: database)
        releaseSavepoint = try SQLiteStatement(
            "RELEASE batch", purpose: "Ending a batch of a shared commit", on: database)
        rollbackToSavepoint = try SQLiteStatement(
            "ROLLBACK TO batch", purpose: "Undoing a batch of a shared commit", on: database)
        upsert = try SQLiteStatement(SQLiteSchema.upsert, purpose: "Storing a value", on: database)
        delete = try SQLiteStatement(SQLiteSchema.delete, purpose: "Deleting a key", on: database)
    }

    deinit { close() }

    /// Applies `batch` in one transaction, durable as `durability` says: all of it, or (on any
    /// error) none of it.
    ///
    /// When the disk is full, the WAL is checkpointed into the database file and truncated, and
    /// the batch is tried once more: the WAL only shrinks at a checkpoint, so on a nearly full
    /// disk it can fill the disk long before its automatic checkpoint (1000 pages), and then even
    /// the deletes meant to free space would fail. A batch of deletes also gets the reserve's
    /// space, so that it succeeds on a disk with no byte left.
    func apply(_ batch: [StoreWrite], durability: Durability) throws(OfflineStoreError) {
        try use(durability)
        do {
            try applyInTransaction(batch)
        } catch {
            guard error.code == .full else { throw error }
            // Deletes are how an app frees space: give them the reserve, whose space their log needs.
            let releasedReserve = DiskReserve.isOnlyDeletes(batch) && reserve.release()
            guard (try? connection.checkpointAndTruncateLog()) != nil || releasedReserve else { throw error }
            try applyInTransaction(batch)
        }
    }

    /// A generous guess of the pages a commit of `batch` adds to the WAL: each write may touch a
    /// leaf and an interior page of each index, and a value spills into a page per 4 KiB.
    static func pagesWritten(by batch: [StoreWrite]) -> Int {
        var pages = 4
        for write in batch {
            pages += 4
            if write.isSet { pages += write.valueByteCount / 4_096 + 1 }
        }
        return pages
    }

    /// Applies `batch` like ``apply(_:durability:)`` when that takes no waiting: `false` (and
    /// nothing written) when another process holds the write lock, the disk is full, or the
    /// commit would checkpoint the WAL (which syncs the file), so the caller hands it to
    /// ``apply(_:durability:)`` on the queue, which waits, checkpoints and recovers there.
    func applyWithoutWaiting(_ batch: [StoreWrite], durability: Durability) throws(OfflineStoreError) -> Bool {
        guard checkpointer.hasRoom(forPages: Self.pagesWritten(by: batch)) else { return false }
        try use(durability)
        do {
            try connection.withoutBusyWait { () throws(OfflineStoreError) in try applyInTransaction(batch) }
            return true
        } catch {
            guard error.code == .locked || error.code == .full else { throw error }
            return false
        }
    }

    /// Sets `PRAGMA synchronous` for `durability` when the last write had another one.
    private func use(_ durability: Durability) throws(OfflineStoreError) {
        guard durability != self.durability else { return }
        try Self.setSynchronous(for: durability, on: connection)
        self.durability = durability
    }

    /// Applies the batches of a group in one transaction, each inside a savepoint, and commits
    /// once (one sync for a synced group): a batch that fails is undone alone and gets its error.
    /// When the shared transaction itself fails (the commit, a full disk, an I/O error), each
    /// batch is applied alone with ``apply(_:durability:)``, so every caller gets its own
    /// outcome; sets and deletes applied twice end the same.
    func applyGroup(_ items: [(batch: [StoreWrite], durability: Durability)]) -> [Result<Void, any Error>] {
        let alone = { (item: (batch: [StoreWrite], durability: Durability)) -> Result<Void, any Error> in
            Result { () throws(OfflineStoreError) in try self.apply(item.batch, durability: item.durability) }
        }
        guard items.count > 1 else { return items.map(alone) }
        // The group is as durable as its most durable batch.
        let durability: Durability = items.contains { $0.durability == .synced } ? .synced : .flushed
        do throws(OfflineStoreError) {
            try use(durability)
            try begin.run()
            var results: [Result<Void, any Error>] = []
            for item in items {
                try savepoint.run()
                do throws(OfflineStoreError) {
                    try applyWrites(item.batch)
                    try releaseSavepoint.run()
                    results.append(.success(()))
                } catch {
                    // SQLite ends the whole transaction after some errors: then every batch goes alone.
                    guard connection.isInTransaction else { throw error }
                    try rollbackToSavepoint.run()
                    try releaseSavepoint.run()
                    results.append(.failure(error))
                }
            }
            try commit.run()
            return results
        } catch {
            if connection.isInTransaction { try? rollback.run() }
            return items.map(alone)
        }
    }

    private func applyWrites(_ batch: [StoreWrite]) throws(OfflineStoreError) {
        for write in batch {
            switch write {
            case .set(let key, let value):
                try upsert.bind(key, at: 1, key: key)
                try upsert.bind(value, at: 2, key: key)
                try upsert.run(key: key)
            case .setData(let key, let data):
                try upsert.bind(key, at: 1, key: key)
                try upsert.bind(data, at: 2, key: key)
                try upsert.run(key: key)
            case .delete(let key):
                try delete.bind(key, at: 1, key: key)
                try delete.run(key: key)
            }
        }
    }

    private func applyInTransaction(_ batch: [StoreWrite]) throws(OfflineStoreError) {
        try begin.run()
        do {
            try applyWrites(batch)
            try commit.run()
        } catch {
            // After some errors (SQLITE_FULL, SQLITE_IOERR) SQLite has already rolled back.
            if connection.isInTransaction { try? rollback.run() }
            throw error
        }
    }

    /// Rewrites the file without its free pages and truncates the WAL, so the operating system
    /// gets back what deletes freed.
    ///
    /// `VACUUM` needs about the file's size free on disk; when that is missing, the incremental
    /// vacuum (which moves pages inside the file) still gives back the free pages.
    func compact() throws(OfflineStoreError) {
        try connection.checkpointAndTruncateLog()
        do {
            try connection.execute("VACUUM", purpose: "Compacting the database")
        } catch {
            guard error.code == .full else { throw error }
            try connection.execute("PRAGMA incremental_vacuum", purpose: "Compacting the database in place")
        }
        try connection.checkpointAndTruncateLog()
    }

    /// The first column of `sql`'s first row as text; for tests and diagnostics.
    func text(_ sql: String) throws(OfflineStoreError) -> String? {
        try connection.text(sql, purpose: "Reading \(sql)")
    }

    /// Finalizes the statements, then closes the connection (which checkpoints the WAL and
    /// removes it when no other connection has the file open).
    func close() {
        let statements = [begin, commit, rollback, savepoint, releaseSavepoint, rollbackToSavepoint, upsert, delete]
        for statement in statements { statement.finalize() }
        connection.close()
    }

    /// `synchronous=FULL` syncs the WAL at every commit (survives power loss); `NORMAL` syncs it
    /// only at checkpoints (survives a crash of the process).
    private static func setSynchronous(
        for durability: Durability, on connection: SQLiteConnection
    )
        throws(OfflineStoreError)
    {
        let level = durability == .synced ? "FULL" : "NORMAL"
        try connection.execute("PRAGMA synchronous = \(level)", purpose: "Setting the durability")
    }
}
