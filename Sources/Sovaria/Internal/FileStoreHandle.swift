import Synchronization

/// What every ``FileOfflineStore`` on one folder shares in a process: the tree, the queue that
/// orders its writes, a batch left to finish, and the sorted key list.
///
/// Sharing them is what keeps two stores on one folder from deleting each other's temporary
/// files or journal, and what makes their batches atomic to each other's readers.
final class FileStoreHandle: Sendable {
    let path: String
    let tree: FileTree
    let queue = BlockingWorkQueue(label: "sovaria.file-store")
    /// Set when a journaled batch could not be finished; the next write finishes it first.
    private let unfinishedBatch = Atomic<Bool>(false)
    /// Every key in byte order, built by the first listing and dropped by any write: paging
    /// (`entries`, `migrate`) lists the folder once, not once a page.
    private let sortedKeys = Mutex<[StoreKey.Bytes]?>(nil)

    static let openFolders = OpenOncePerPath<FileStoreHandle>()

    /// The handle of the folder at `path` (created 0700 if missing), shared in this process.
    static func shared(path: String, sync: Bool) throws(OfflineStoreError) -> FileStoreHandle {
        if try POSIXFile.makeDirectories(path, mode: 0o700), sync {
            try POSIXFile.syncDirectory(POSIXFile.parentPath(of: path))
        }
        let canonical = OpenOncePerPath<FileStoreHandle>.canonicalPath(path)
        do {
            return try openFolders.handle(for: canonical) {
                FileStoreHandle(path: canonical, tree: try FileTree(root: canonical, sync: sync))
            }
        } catch let error as OfflineStoreError {
            throw error
        } catch {
            throw OfflineStoreError(.io, "Opening \(path) failed: \(error)", engine: POSIXFile.engine)
        }
    }

    private init(path: String, tree: FileTree) {
        self.path = path
        self.tree = tree
    }

    deinit { Self.openFolders.didClose(path) }

    /// Applies `batch` all or nothing; runs inside a barrier of ``queue``.
    ///
    /// A batch of several writes is journaled first. If applying it fails halfway (a full
    /// disk), it is finished at once from the journal if that works, else by the next write or
    /// the next open; the error says so.
    func apply(_ batch: [StoreWrite], sync: Bool) throws(OfflineStoreError) {
        sortedKeys.withLock { $0 = nil }
        if unfinishedBatch.load(ordering: .acquiring) {
            try tree.recoverJournal(sync: sync)
            unfinishedBatch.store(false, ordering: .releasing)
        }
        if batch.count == 1, let write = batch.first {
            try tree.apply(write, sync: sync, syncFolder: true)
            return
        }
        try tree.writeJournal(batch, sync: sync)
        do {
            try tree.applyJournaled(batch, sync: sync)
        } catch {
            do {
                try tree.recoverJournal(sync: sync)
            } catch {
                unfinishedBatch.store(true, ordering: .releasing)
                var failure = error
                failure.message +=
                    " The batch is kept in the folder's journal and is finished by the next write"
                    + " or the next open; until then a reader may see part of it."
                throw failure
            }
        }
    }

    /// Every key in byte order, from the cached list or a new listing; runs on ``queue``.
    func keysInOrder() throws(OfflineStoreError) -> [StoreKey.Bytes] {
        if let cached = sortedKeys.withLock({ $0 }) { return cached }
        let listed = try tree.sortedKeys()
        sortedKeys.withLock { $0 = listed }
        return listed
    }
}
