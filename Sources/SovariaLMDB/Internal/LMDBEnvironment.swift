import CLMDB
import Foundation
import Sovaria
import SovariaPlumbing
import Synchronization

/// One open LMDB environment (the `data.mdb` and `lock.mdb` of one folder), shared by every
/// ``LMDBOfflineStore`` on that folder in this process, since LMDB must never open a path twice.
///
/// Locks, in the order a thread takes them (checked in debug builds):
/// 1. ``writer``: whoever runs a write transaction in this process holds it, for the whole
///    transaction and the map growths it needs;
/// 2. ``handles``' readers-writer lock: every transaction holds its shared side; resizing the map,
///    reopening and the compaction swap hold its exclusive side;
/// 3. ``readTransactions``' lock: taken for an instant inside either side.
final class LMDBEnvironment: Sendable {
    /// The open environment's C handles, with the lock transactions hold.
    let handles: LockedHandles

    typealias Handles = LockedHandles.Handles

    /// How the environment is opened; the first store on a folder decides.
    struct Options: Sendable {
        var durability: Durability
        var initialMapSizeBytes: Int
        var maxMapSizeBytes: Int
        var maxReaders: Int
    }

    /// The open environments of this process, one per canonical folder path.
    static let openEnvironments = OpenOncePerPath<LMDBEnvironment>()

    /// Read transactions kept between reads.
    let readTransactions: ReadTransactionPool

    /// The canonical path of the folder.
    let path: String
    /// The options the environment was opened with.
    let options: Options
    /// Write transactions and compaction run here, one at a time, each as one synchronous block, so a
    /// write transaction begins and commits on one thread.
    let writeQueue = BlockingWorkQueue(label: "sovaria.lmdb.write")
    /// Held by whoever runs a write transaction in this process: the write queue, or a caller's
    /// thread that found it free (``writeIfIdle(_:forceSync:)``), so an inline write never waits
    /// behind a queued one's commit. Helpers that write take the ``Writer`` it guards.
    private let writer = RankedMutex(LockRank.lmdbWriter, Writer())

    /// Proof that the code holding it holds ``writer``: made once, kept in the lock.
    struct Writer: ~Copyable {
        fileprivate init() {}
    }

    /// Batches that arrive while a commit runs join the next one (group commit), one after
    /// another in one shared write transaction.
    private let commits: GroupCommit<GroupItem>

    /// One batch of a group commit (it carries its environment: the committer is made before
    /// the environment is whole).
    struct GroupItem: Sendable {
        let environment: LMDBEnvironment
        let batch: [StoreWrite]
        let forceSync: Bool
    }

    /// The most writes one shared commit takes (a bigger batch still commits, alone).
    static let maxWritesPerGroup = 4_096
    /// Scans too long to run on the caller's thread run here, alongside each other.
    let scanQueue = BlockingWorkQueue(label: "sovaria.lmdb.scan")
    /// Reader slots of dead processes that `mdb_reader_check` cleared when the environment opened.
    let staleReadersCleared: Int

    /// The environment open in `directory`, shared with every other store on it in this process; opens
    /// it (creating the folder with mode 0700) when none is.
    static func shared(directory: URL, options: Options) throws -> LMDBEnvironment {
        let requestedPath = directory.standardizedFileURL.path
        try LMDBFolder.create(requestedPath)
        let path = OpenOncePerPath<LMDBEnvironment>.canonicalPath(requestedPath)
        // The registry also makes this wait while a previous environment on the path is closing.
        return try openEnvironments.handle(for: path) { try LMDBEnvironment(path: path, options: options) }
    }

    private init(path: String, options: Options) throws {
        self.path = path
        self.options = options
        readTransactions = ReadTransactionPool(
            capacity: min(32, options.maxReaders / 4), rank: .lmdbReadTransactions)
        LMDBFolder.removeAbandonedCopies(in: path)
        let (handles, cleared) = try Self.openHandles(path: path, options: options, mapSizeBytes: nil)
        self.handles = LockedHandles(handles, rank: .lmdbHandles)
        staleReadersCleared = cleared
        commits = GroupCommit(queue: writeQueue, maxSizePerCommit: Self.maxWritesPerGroup) { items in
            items.first?.environment.commitGroup(items) ?? []
        }
    }

    /// Commits `batch` on the write queue, sharing the commit with every batch that arrives
    /// while another commit runs (group commit): a synced group syncs once.
    func commit(_ batch: [StoreWrite], forceSync: Bool) async throws {
        try await commits.write(GroupItem(environment: self, batch: batch, forceSync: forceSync), size: batch.count)
    }

    deinit {
        handles.withExclusive { handles in
            abortIdleReadTransactions()
            if let handles { mdb_env_close(handles.env) }
        }
        Self.openEnvironments.didClose(path)
    }

    // MARK: - Opening

    /// Creates and opens an environment in `path` with `MDB_NOTLS`, clears stale readers and opens the
    /// main database. `mapSizeBytes` overrides the initial size (after a reopen).
    static func openHandles(path: String, options: Options, mapSizeBytes: Int?) throws -> (Handles, cleared: Int) {
        var created: OpaquePointer?
        try checkLMDB(mdb_env_create(&created), "Creating the LMDB environment for \(path) failed")
        guard let env = created else {
            throw OfflineStoreError.lmdb(ENOMEM, "Creating the LMDB environment for \(path) failed")
        }
        do {
            try checkLMDB(
                mdb_env_set_maxreaders(env, UInt32(clamping: options.maxReaders)),
                "Setting LMDB's reader slots to \(options.maxReaders) failed")
            let mapSize = mapSizeBytes ?? options.initialMapSizeBytes
            try checkLMDB(mdb_env_set_mapsize(env, mapSize), "Setting LMDB's map to \(mapSize) bytes failed")
            var flags = UInt32(MDB_NOTLS)
            // `.flushed` survives a crash of the process, not of the machine: LMDB's MDB_NOSYNC (the
            // pages are in the OS's cache when the commit returns; LMDB's own docs: integrity holds
            // on an application crash, a system crash may undo the last transactions).
            if options.durability == .flushed { flags |= UInt32(MDB_NOSYNC) }
            try checkLMDB(mdb_env_open(env, path, flags, 0o600), "Opening the LMDB environment in \(path) failed")
            Self.closeOnExec(env, path: path)
            try checkDataFileIsWhole(env, path: path)
            var dead: Int32 = 0
            try checkLMDB(mdb_reader_check(env, &dead), "Clearing stale LMDB reader slots in \(path) failed")
            let dbi = try openMainDatabase(env)
            return (Handles(env: env, dbi: dbi), Int(dead))
        } catch {
            mdb_env_close(env)
            throw (error as? OfflineStoreError)?.namingDamagedFile(path + "/data.mdb") ?? error
        }
    }

    /// Marks the descriptors LMDB opened on `data.mdb` and `lock.mdb` close-on-exec. LMDB 0.9
    /// opens them without it, so a child the app starts (a `Process`) would keep them open for its
    /// whole life (and, with them, the volume busy). `mdb_env_get_fd` gives the data file's; the
    /// others (the lock file, the data file's second descriptor for meta pages) are found among this
    /// process's descriptors by their path. A child forked between LMDB's open and this still gets
    /// them, as with any descriptor.
    private static func closeOnExec(_ env: OpaquePointer, path: String) {
        var data: Int32 = -1
        if mdb_env_get_fd(env, &data) == MDB_SUCCESS, data >= 0 { _ = fcntl(data, F_SETFD, FD_CLOEXEC) }
        let folder = canonicalPath(path) + "/"
        for (descriptor, target) in openDescriptorPaths()
        where target == folder + "data.mdb" || target == folder + "lock.mdb" {
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
    }

    /// This process's open descriptors and the paths of the files they are open on, symbolic links
    /// resolved: on Linux from `/proc/self/fd`, on Apple platforms by `F_GETPATH` on each descriptor.
    private static func openDescriptorPaths() -> [(descriptor: Int32, path: String)] {
        #if os(Linux)
            let names = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
            return names.compactMap { name in
                guard let descriptor = Int32(name),
                    let target = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + name)
                else { return nil }
                return (descriptor, target)
            }
        #elseif canImport(Darwin)
            var paths: [(descriptor: Int32, path: String)] = []
            var buffer = [UInt8](repeating: 0, count: Int(MAXPATHLEN))
            // Every descriptor number the process may hold (its RLIMIT_NOFILE), within reason.
            for descriptor in 0..<min(getdtablesize(), 1 << 16) {
                let found = buffer.withUnsafeMutableBytes { fcntl(descriptor, F_GETPATH, $0.baseAddress!) }
                guard found != -1 else { continue }
                paths.append((descriptor, String(decoding: buffer.prefix { $0 != 0 }, as: UTF8.self)))
            }
            return paths
        #else
            return []
        #endif
    }

    /// `path` with every symbolic link resolved, as the system names an open file (`realpath`; on
    /// Apple platforms `/var/…` is `/private/var/…`); `path` standardized when it cannot be resolved.
    private static func canonicalPath(_ path: String) -> String {
        guard let resolved = realpath(path, nil) else { return URL(fileURLWithPath: path).standardizedFileURL.path }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Throws ``OfflineStoreError/Code/corrupt`` when `data.mdb` is shorter than the pages its newest
    /// meta page says it holds. LMDB maps the file and would touch those pages on the first read,
    /// and a page past the end of a mapped file kills the process with SIGBUS.
    static func checkDataFileIsWhole(_ env: OpaquePointer, path: String) throws(OfflineStoreError) {
        var status = MDB_stat()
        mdb_env_stat(env, &status)
        let lastPage = info(env).me_last_pgno
        var file = stat()
        let dataPath = path + "/data.mdb"
        guard stat(dataPath, &file) == 0 else { return }  // LMDB opened it: it exists
        let needed = (Int(lastPage) + 1) * Int(status.ms_psize)
        guard Int(file.st_size) < needed else { return }
        throw OfflineStoreError(
            .corrupt,
            "The LMDB file \(dataPath) is cut short: it has \(file.st_size) bytes, but its last page ends at byte "
                + "\(needed) (a copy that did not finish, or a damaged disk). Restore the folder from a backup, or "
                + "delete it to start empty.",
            engine: .lmdb)
    }

    private static func openMainDatabase(_ env: OpaquePointer) throws -> MDB_dbi {
        var begun: OpaquePointer?
        var rc = mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &begun)
        // Another process grew the map between our open and this read: adopt its size (no
        // transaction of ours is active yet) and start again.
        while rc == MDB_MAP_RESIZED {
            try checkLMDB(mdb_env_set_mapsize(env, 0), "Adopting the LMDB map size another process set failed")
            rc = mdb_txn_begin(env, nil, UInt32(MDB_RDONLY), &begun)
        }
        try checkLMDB(rc, "Starting an LMDB read failed")
        guard let txn = begun else { throw OfflineStoreError.lmdb(ENOMEM, "Starting an LMDB read failed") }
        var dbi: MDB_dbi = 0
        rc = mdb_dbi_open(txn, nil, 0, &dbi)
        guard rc == MDB_SUCCESS else {
            mdb_txn_abort(txn)
            throw OfflineStoreError.lmdb(rc, "Opening LMDB's main database failed")
        }
        try checkLMDB(mdb_txn_commit(txn), "Opening LMDB's main database failed")
        return dbi
    }

    /// Opens the environment again when a swap left it closed. Holds the exclusive side.
    func reopenIfClosed() throws {
        try handles.withExclusive { handles in
            guard handles == nil else { return }
            handles = try Self.openHandles(path: path, options: options, mapSizeBytes: nil).0
        }
    }

    // MARK: - Reads

    /// How one try at a transaction ended.
    enum Attempt<Result> {
        case done(Result)
        /// `MDB_MAP_FULL`: grow the map, then run the whole transaction again.
        case mapFull
        /// `MDB_MAP_RESIZED`: another process grew the map; adopt its size, then run again.
        case mapResized
        /// A compaction swap left the environment closed: reopen, then run again.
        case closed
    }

    /// Runs `body` in a read-only transaction on the calling thread, holding the shared side of
    /// ``handles``' lock.
    ///
    /// `body` must copy out whatever it keeps: the transaction is reset when it returns.
    func read<Result>(_ body: (_ txn: OpaquePointer, _ dbi: MDB_dbi) throws -> Result) throws -> Result {
        while true {
            let attempt: Attempt<Result> = try handles.withShared { handles in
                guard let handles else { return .closed }
                guard let txn = try readTransactions.take(handles.env) else { return .mapResized }
                defer { readTransactions.give(txn) }
                do {
                    return .done(try body(txn, handles.dbi))
                } catch let error as OfflineStoreError {
                    throw error.namingDamagedFile(path + "/data.mdb")
                }
            }
            switch attempt {
            case .done(let result): return result
            case .mapFull: try growMap()
            case .mapResized: try adoptLargerMap()
            case .closed: try reopenIfClosed()
            }
        }
    }

    /// Aborts every idle read transaction (each holds a reader slot). Call with the exclusive side held.
    func abortIdleReadTransactions() {
        readTransactions.abortIdle()
    }

    // MARK: - Writes

    /// Runs `batch` on the calling thread if no write of this process is running; returns whether
    /// it did. For flushed commits (no fsync): a caller's thread then waits for LMDB's own writer
    /// lock only while another process commits.
    func writeIfIdle(_ batch: [StoreWrite], forceSync: Bool) throws -> Bool {
        try writer.withLockIfAvailable { writer in try write(writer, batch, forceSync: forceSync) } != nil
    }

    /// Runs a group's batches in one write transaction, one after another, with one commit (one
    /// sync) for the group. Every key was validated before the batch joined, so the shared
    /// transaction fails only on what no caller chose (a full map, a resize, an I/O error): then
    /// every batch runs alone, so each caller gets its own outcome; sets and deletes applied twice,
    /// in the same order, end the same.
    private func commitGroup(_ items: [GroupItem]) -> [Result<Void, any Error>] {
        writer.withLock { writer in
            if items.count > 1 {
                let forceSync = items.contains { $0.forceSync }
                let shared: Attempt<Void>? = try? handles.withShared { handles in
                    guard let handles else { return .closed }
                    return try commit(writer, items.flatMap(\.batch), in: handles, forceSync: forceSync)
                }
                if case .done? = shared { return items.map { _ in .success(()) } }
            }
            var results: [Result<Void, any Error>] = []
            for item in items {
                results.append(Result { try write(writer, item.batch, forceSync: item.forceSync) })
            }
            return results
        }
    }

    /// Applies `batch` in one write transaction, all or nothing. On `MDB_MAP_FULL` the transaction is
    /// aborted, the map grows with no transaction active, and the whole batch runs again.
    ///
    /// Runs on one thread, holding ``writer``: the transaction begins and commits there, and nothing
    /// in it waits for anything but LMDB. `forceSync` flushes the data and meta pages after the commit
    /// (`mdb_env_sync` with force), for a synced store sharing an environment opened with `MDB_NOSYNC`.
    private func write(_ writer: borrowing Writer, _ batch: [StoreWrite], forceSync: Bool) throws {
        while true {
            let attempt: Attempt<Void> = try handles.withShared { handles in
                guard let handles else { return .closed }
                do {
                    return try commit(writer, batch, in: handles, forceSync: forceSync)
                } catch let error as OfflineStoreError {
                    throw error.namingDamagedFile(path + "/data.mdb")
                }
            }
            switch attempt {
            case .done: return
            case .mapFull: try growMap()
            case .mapResized: try adoptLargerMap()
            case .closed: try reopenIfClosed()
            }
        }
    }

    /// One try at the batch, holding ``writer`` and the shared side of ``handles``' lock.
    private func commit(
        _ writer: borrowing Writer, _ batch: [StoreWrite], in handles: Handles, forceSync: Bool
    ) throws -> Attempt<Void> {
        var begun: OpaquePointer?
        var rc = mdb_txn_begin(handles.env, nil, 0, &begun)
        if rc == MDB_MAP_RESIZED { return .mapResized }
        try checkLMDB(rc, "Starting an LMDB write failed")
        guard let txn = begun else { throw OfflineStoreError.lmdb(ENOMEM, "Starting an LMDB write failed") }
        for write in batch {
            rc = Self.apply(write, txn: txn, dbi: handles.dbi)
            guard rc == MDB_SUCCESS else {
                mdb_txn_abort(txn)  // after MDB_MAP_FULL the transaction is dead: only abort is allowed
                if rc == MDB_MAP_FULL { return .mapFull }
                throw OfflineStoreError.lmdb(rc, "Writing \(write.key.debugDescription) to LMDB failed", key: write.key)
            }
        }
        rc = mdb_txn_commit(txn)  // frees the transaction, also when it fails
        if rc == MDB_MAP_FULL { return .mapFull }
        if rc == EIO, LMDBFolder.diskIsFull(path) {
            throw OfflineStoreError.lmdb(ENOSPC, "Committing an LMDB write failed")
        }
        try checkLMDB(rc, "Committing an LMDB write failed")
        if forceSync { try checkLMDB(mdb_env_sync(handles.env, 1), "Flushing LMDB to disk failed") }
        return .done(())
    }

    private static func apply(_ write: StoreWrite, txn: OpaquePointer, dbi: MDB_dbi) -> Int32 {
        switch write {
        case .set(let key, let value):
            return key.withMDBVal { key in value.withMDBVal { value in mdb_put(txn, dbi, &key, &value, 0) } }
        case .setData(let key, let data):
            return key.withMDBVal { key in data.withMDBVal { value in mdb_put(txn, dbi, &key, &value, 0) } }
        case .delete(let key):
            let rc = key.withMDBVal { key in mdb_del(txn, dbi, &key, nil) }
            return rc == MDB_NOTFOUND ? MDB_SUCCESS : rc
        }
    }
}
