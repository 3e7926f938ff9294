import SovariaPlumbing
import Synchronization

/// What every ``FileOfflineStore`` on one folder shares in a process: the tree, the queue that
/// orders its reads and writes, the lock that orders writes across processes, and the sorted key
/// list.
///
/// Sharing them is what keeps two stores on one folder from deleting each other's temporary
/// files or journal, and what makes their batches atomic to each other's readers.
final class FileStoreHandle: Sendable {
    let path: String
    let tree: FileTree
    let queue = BlockingWorkQueue(label: "sovaria.file-store")
    /// Taken exclusively by every write (inside a barrier of ``queue``), shared by reads that run
    /// on their caller's thread instead of hopping to ``queue``: a batch is atomic to them too.
    let readers = ReadersWriterLock()
    /// The folder's lock file; `nil` when the folder cannot be written.
    let lock: FolderLock?
    /// Whether this open may skip the sweep of temporary files (the last end was clean).
    private let cleanClose: CleanCloseMark?
    /// Why writes are refused, when the folder can be read but not written.
    let readOnlyReason: OfflineStoreError?
    /// Space for the journal of a batch of deletes on a full disk (`.reserve`, 64 KiB).
    private let reserve: DiskReserve
    /// Every key in byte order, built by the first listing and dropped by any write of any process
    /// (the lock file's write count tells): paging (`entries`, `migrate`) lists the folder once,
    /// not once a page.
    let sortedKeys = Mutex<(writeCount: UInt64, keys: [StoreKey.Bytes])?>(nil)

    static let openFolders = OpenOncePerPath<FileStoreHandle>()

    /// Synced batches that arrive while a group is being written join the next one, which syncs
    /// each folder once (``applyGroup(_:)``).
    let commits: GroupCommit<GroupItem>

    /// The handle of the folder at `path` (created 0700 if missing), shared in this process.
    ///
    /// Throws only when the folder cannot be created or read. A folder that can be read but not
    /// written opens read-only (``readOnlyReason``); one on a full disk opens as usual, and its
    /// writes throw ``OfflineStoreError/Code/full`` until space is freed.
    static func shared(path: String, sync: Bool) throws(OfflineStoreError) -> FileStoreHandle {
        if try POSIXFile.makeDirectories(path, mode: 0o700), sync {
            try POSIXFile.syncDirectory(POSIXFile.parentPath(of: path))
        }
        let canonical = OpenOncePerPath<FileStoreHandle>.canonicalPath(path)
        do {
            return try openFolders.handle(for: canonical) { try FileStoreHandle(path: canonical, sync: sync) }
        } catch let error as OfflineStoreError {
            throw error
        } catch {
            throw OfflineStoreError(.io, "Opening \(path) failed: \(error)", engine: .file)
        }
    }

    /// Opens the folder: finishes a batch a crash interrupted and removes the temporary files it
    /// left, holding the folder's lock so that no other process is writing meanwhile.
    private init(path: String, sync: Bool) throws(OfflineStoreError) {
        self.path = path
        commits = GroupCommit(queue: queue, maxSizePerCommit: Self.maxWritesPerGroup) { items in
            items.first?.handle.applyGroup(items.map(\.batch)) ?? []
        }
        try POSIXFile.checkReadableFolder(path)  // a folder that cannot even be read falls back to memory
        let tree = try FileTree(root: path)
        self.tree = tree
        tree.restrictMode()
        var lock: FolderLock?
        var failure: OfflineStoreError?
        let cleanClose = CleanCloseMark(root: path)
        self.cleanClose = cleanClose
        do throws(OfflineStoreError) {
            let opened = try FolderLock(root: path)
            lock = opened
            try opened.withExclusiveLock { () throws(OfflineStoreError) in
                // A full disk may keep an interrupted batch from finishing now: the next write finishes it.
                try? tree.recoverJournal(sync: sync)
                // Temporary files are left only by an end that was not clean: after a clean close
                // the open lists nothing (a folder of 10,000 files takes milliseconds to list).
                if cleanClose?.claimOpen() != true { try? tree.removeTemporaryFiles() }
                try tree.probeWritable()
            }
        } catch  where error.code != .full {
            failure = error
        } catch {
            // A full disk: the store opens as usual, and writes say the disk is full until space is freed.
        }
        self.lock = lock
        reserve = DiskReserve(path: path + "/.reserve", sizeBytes: 64 * 1_024)
        readOnlyReason = failure.map { failure in
            OfflineStoreError(
                failure.code,
                "The folder \(path) can be read but not written (\(failure.message)) The store reads its entries but "
                    + "refuses writes: make the folder writable by this process (check its mode, owner and mount), "
                    + "then open the store again.",
                engine: .file, nativeCode: failure.nativeCode)
        }
    }

    deinit {
        if let lock, let cleanClose {
            let tree = tree
            try? lock.withExclusiveLock { () throws(OfflineStoreError) in
                cleanClose.releaseOpen { try? tree.removeTemporaryFiles() }
            }
        }
        Self.openFolders.didClose(path)
    }

    /// Applies `batch` all or nothing; runs inside a barrier of ``queue``, holding the folder's lock.
    ///
    /// A batch another process (or an earlier failure) left in the journal is finished first, so
    /// that it can never be applied over a newer write.
    func apply(_ batch: [StoreWrite], sync: Bool) throws(OfflineStoreError) {
        guard readOnlyReason == nil, let lock else { throw readOnlyReason ?? POSIXFile.error("Locking", path) }
        sortedKeys.withLock { $0 = nil }
        try readers.withExclusiveLock { () throws(OfflineStoreError) in
            try applyLocked(batch, lock: lock, sync: sync)
        }
    }

    private func applyLocked(_ batch: [StoreWrite], lock: FolderLock, sync: Bool) throws(OfflineStoreError) {
        try lock.withExclusiveLock { () throws(OfflineStoreError) in
            defer { lock.countWrite() }
            try finishEarlierBatch(sync: sync)
            if batch.count == 1, let write = batch.first {
                try tree.apply(write, sync: sync)
                return
            }
            try applyThroughJournal(batch, sync: sync)
        }
    }

    /// Finishes a batch an earlier writer left in the journal; call holding the folder's lock.
    func finishEarlierBatch(sync: Bool) throws(OfflineStoreError) {
        do throws(OfflineStoreError) {
            try tree.recoverJournal(sync: sync)
        } catch {
            var failure = error
            failure.key = nil
            failure.message = "Finishing an earlier batch from the folder's journal failed: " + failure.message
            throw failure
        }
    }

    /// A batch of several writes, through the journal; a batch of deletes on a full disk uses the
    /// reserve. Call holding the folder's lock.
    func applyThroughJournal(_ batch: [StoreWrite], sync: Bool) throws(OfflineStoreError) {
        do throws(OfflineStoreError) {
            try tree.applyBatch(batch, sync: sync)
        } catch {
            guard error.code == .full, DiskReserve.isOnlyDeletes(batch), reserve.release() else { throw error }
            try tree.applyBatch(batch, sync: sync)
        }
    }

    /// Reads one key so that a batch of any process is seen whole: a `get` that found the journal
    /// of a batch (written before its first rename, removed after its last) waits here, under the
    /// folder's shared lock, until that batch has ended, or finishes it when its writer died. Runs
    /// on ``queue``.
    ///
    /// Why a lone key needs this: a batch renames its files one at a time, so a reader that got
    /// the batch's new value of one key could otherwise get the old value of another next.
    func readingOneKey<Value>(
        _ read: (FileTree) throws(OfflineStoreError) -> Value?
    ) throws(OfflineStoreError) -> Value? {
        try readingSeveralKeys { () throws(OfflineStoreError) in try read(tree) }
    }

    /// Runs `body` (a read of several keys: a listing, a page of entries) so that no batch of any
    /// process is half applied in what it sees: holding the folder's lock shared, which every
    /// write takes exclusively. A journal found there was left by a writer that stopped before
    /// finishing its batch (a live one holds the lock): it is finished first, under the exclusive
    /// lock, unless the folder is read-only, where the read sees the folder as it is.
    ///
    /// Reads of one key take this only when they find a journal (``readingOneKey(_:)``): each file
    /// is replaced whole, by a rename.
    func readingSeveralKeys<Result>(_ body: () throws(OfflineStoreError) -> Result) throws(OfflineStoreError) -> Result
    {
        guard let lock else { return try body() }
        while true {
            let result = try lock.withSharedLock { () throws(OfflineStoreError) -> Result? in
                guard !tree.hasJournal || readOnlyReason != nil else { return nil }
                return try body()
            }
            if let result { return result }
            try lock.withExclusiveLock { () throws(OfflineStoreError) in
                defer { lock.countWrite() }
                sortedKeys.withLock { $0 = nil }
                try tree.recoverJournal(sync: true)
            }
        }
    }

    /// Every key in byte order when the cached list is still current, without listing the folder:
    /// cheap enough for the caller's thread.
    func cachedKeysInOrder() -> [StoreKey.Bytes]? {
        let writeCount = lock?.writeCount ?? 0
        guard let cached = sortedKeys.withLock({ $0 }), cached.writeCount == writeCount else { return nil }
        return cached.keys
    }

    /// Every key in byte order, from the cached list or a new listing; runs on ``queue``.
    func keysInOrder() throws(OfflineStoreError) -> [StoreKey.Bytes] {
        let writeCount = lock?.writeCount ?? 0
        if let cached = sortedKeys.withLock({ $0 }), cached.writeCount == writeCount { return cached.keys }
        let listed = try tree.sortedKeys()
        sortedKeys.withLock { $0 = (writeCount, listed) }
        return listed
    }
}
