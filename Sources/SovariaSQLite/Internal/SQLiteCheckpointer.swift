import CSQLite
import Sovaria
import Synchronization

/// The lock held by whoever uses the writer connection: a job on the queue, or a write run on its
/// caller's thread.
final class SQLiteWriterLock: Sendable {
    private let mutex = Mutex(())

    /// Runs `body` holding the lock, waiting for it.
    func withLock<Result>(_ body: () throws -> Result) rethrows -> Result {
        try mutex.withLock { _ in try body() }
    }

    /// Runs `body` holding the lock when it is free at once; `nil` when it is not.
    func withLockIfAvailable<Result>(_ body: () -> Result) -> Result? {
        mutex.withLockIfAvailable { _ in body() }
    }
}

/// The writer connection's WAL hook: checkpoints as SQLite's automatic checkpoint does, and keeps
/// the WAL's size so a write can tell beforehand whether its commit would be the one to checkpoint.
///
/// SQLite checkpoints inside the commit that takes the WAL past 1,000 pages, and syncs the file
/// there: milliseconds instead of microseconds. A write that runs on its caller's thread (a small
/// `.flushed` one, perhaps from the main actor) must not be that commit, so it asks
/// ``hasRoom(forPages:)`` first and goes to the queue when the answer is no.
final class SQLiteCheckpointer: Sendable {
    /// The WAL size, in pages, from which a commit checkpoints (SQLite's default).
    static let pagesBeforeCheckpoint: Int32 = 1_000

    /// The WAL's size in pages after the last commit of this connection.
    private let walPages = Atomic<Int32>(0)

    /// Makes `checkpointer` the WAL hook of `handle`, in place of the automatic checkpoint. The
    /// checkpointer must outlive the connection's open life (the writer owns both).
    static func install(_ checkpointer: SQLiteCheckpointer, on handle: OpaquePointer) {
        sqlite3_wal_hook(
            handle,
            { context, handle, _, pages in
                guard let context else { return SQLITE_OK }
                let checkpointer = Unmanaged<SQLiteCheckpointer>.fromOpaque(context).takeUnretainedValue()
                checkpointer.walPages.store(pages, ordering: .relaxed)
                // As SQLite's own hook: a checkpoint that cannot finish (a reader on an old
                // snapshot) is tried again by the next commit.
                if pages >= SQLiteCheckpointer.pagesBeforeCheckpoint {
                    sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(checkpointer).toOpaque())
    }

    /// Whether a commit adding about `pages` pages leaves the WAL short of a checkpoint, judged
    /// by this connection's last commit (another process's commits are not counted, so the
    /// answer can be wrong by those: the commit then checkpoints where it runs, as SQLite would).
    func hasRoom(forPages pages: Int) -> Bool {
        Int(walPages.load(ordering: .relaxed)) + pages < Int(Self.pagesBeforeCheckpoint)
    }
}
