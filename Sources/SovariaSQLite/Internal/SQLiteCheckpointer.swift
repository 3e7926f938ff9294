import CSQLite
import Sovaria
import Synchronization

#if canImport(Dispatch)
    import Dispatch
#endif

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

/// The writer connection's WAL hook: checkpoints behind the writes instead of inside them, and
/// keeps the WAL's size so a write can tell beforehand whether its commit would checkpoint.
///
/// SQLite checkpoints inside the commit that takes the WAL past 1,000 pages, and syncs the
/// database file there: milliseconds instead of microseconds, in whatever write happened to be
/// that one (a file-cache download, a queue enqueue, a cache put). Here that commit only asks a
/// connection of the checkpointer's own to run the same passive checkpoint on a queue of its own,
/// while writes go on (WAL mode lets a checkpoint and a writer run at once). Only if the WAL still
/// reaches ``pagesBeforeInlineCheckpoint`` (the background checkpoint cannot keep up, or cannot
/// open its connection) does a commit checkpoint where it runs, as SQLite would.
///
/// A write that runs on its caller's thread (a small `.flushed` one, perhaps from the main actor)
/// must never be such a commit, so it asks ``hasRoom(forPages:)`` first and goes to the queue when
/// the answer is no.
final class SQLiteCheckpointer: Sendable {
    /// The WAL size, in pages, from which a checkpoint starts behind the writes (SQLite's default
    /// automatic checkpoint).
    static let pagesBeforeCheckpoint: Int32 = 1_000
    /// The WAL size, in pages, from which a commit checkpoints itself: the bound on the WAL when
    /// the background checkpoint falls behind.
    static let pagesBeforeInlineCheckpoint: Int32 = 2_000

    /// The database file, for the checkpoint connection.
    private let path: String
    /// The WAL's size in pages after the last commit of the writer connection.
    private let walPages = Atomic<Int32>(0)
    /// Whether a background checkpoint is waiting to run (at most one waits; one may also run).
    private let scheduled = Atomic<Bool>(false)
    private let closed = Atomic<Bool>(false)
    /// Checkpoints run behind the writes, and inside commits; for tests and diagnostics.
    let checkpointCounts = Mutex<(behind: Int, inCommit: Int)>((0, 0))
    /// The checkpoint connection, opened by the first background checkpoint; used on `queue` only.
    private let connection = Mutex<SQLiteConnection?>(nil)
    private let queue = DispatchQueue(label: "sovaria.sqlite.checkpoint", qos: .utility)

    /// A checkpointer for the database at `path`.
    init(path: String) { self.path = path }

    /// Makes `checkpointer` the WAL hook of `handle`, in place of the automatic checkpoint. The
    /// checkpointer must outlive the connection's open life (the writer owns both).
    static func install(_ checkpointer: SQLiteCheckpointer, on handle: OpaquePointer) {
        sqlite3_wal_hook(
            handle,
            { context, handle, _, pages in
                guard let context else { return SQLITE_OK }
                let checkpointer = Unmanaged<SQLiteCheckpointer>.fromOpaque(context).takeUnretainedValue()
                checkpointer.walPages.store(pages, ordering: .relaxed)
                if pages >= SQLiteCheckpointer.pagesBeforeInlineCheckpoint {
                    // As SQLite's own hook: a checkpoint that cannot finish (a reader on an old
                    // snapshot) is tried again by the next commit.
                    sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                    checkpointer.checkpointCounts.withLock { $0.inCommit += 1 }
                } else if pages >= SQLiteCheckpointer.pagesBeforeCheckpoint {
                    checkpointer.checkpointBehind()
                }
                return SQLITE_OK
            }, Unmanaged.passUnretained(checkpointer).toOpaque())
    }

    /// Whether a commit adding about `pages` pages leaves the WAL short of a checkpoint in the
    /// commit, judged by the writer's last commit (another process's commits are not counted, so
    /// the answer can be wrong by those: the commit then checkpoints where it runs, as SQLite would).
    func hasRoom(forPages pages: Int) -> Bool {
        Int(walPages.load(ordering: .relaxed)) + pages < Int(Self.pagesBeforeInlineCheckpoint)
    }

    /// Waits for a background checkpoint that runs and closes the checkpoint connection: call
    /// before the writer closes, so that its close finds no other connection and removes the WAL.
    func close() {
        closed.store(true, ordering: .relaxed)
        queue.sync {}
        connection.withLock { connection in
            connection?.close()
            connection = nil
        }
    }

    /// Starts a passive checkpoint on ``queue`` unless one is already waiting there.
    private func checkpointBehind() {
        guard !closed.load(ordering: .relaxed),
            scheduled.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged
        else { return }
        queue.async { [self] in
            scheduled.store(false, ordering: .relaxed)
            guard !closed.load(ordering: .relaxed) else { return }
            connection.withLock { connection in
                if connection == nil {
                    // No busy wait: a passive checkpoint never waits, and the open only reads the schema.
                    connection = try? SQLiteConnection(path: path, readOnly: false, busyTimeoutMilliseconds: 0)
                }
                guard let handle = connection?.handle else { return }
                sqlite3_wal_checkpoint_v2(handle, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
                checkpointCounts.withLock { $0.behind += 1 }
            }
        }
    }

    /// Waits until no checkpoint runs or waits behind the writes; for tests.
    func waitForCheckpointsBehind() { queue.sync {} }
}
