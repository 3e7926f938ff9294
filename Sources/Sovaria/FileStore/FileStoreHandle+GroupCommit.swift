import Dispatch
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension FileStoreHandle {
    /// One caller's synced batch in a group commit (it carries its handle: the committer is made
    /// before the handle is whole).
    struct GroupItem: Sendable {
        let handle: FileStoreHandle
        let batch: [StoreWrite]
    }

    /// The most writes one group takes (a bigger batch still commits, alone): each single set of
    /// a long key holds its folder's descriptor open until the group ends.
    static let maxWritesPerGroup = 64

    /// Applies synced batches that arrived together, in arrival order, each with its own outcome;
    /// runs inside a barrier of ``queue``, holding the folder's lock once for the group.
    ///
    /// A synced set alone is a temporary file written and fsynced, renamed into place, and its
    /// folder fsynced: two syncs, each waiting for the disk. In a group, every single set's
    /// temporary file is written and fsynced side by side (`concurrentPerform`: the file system
    /// joins syncs that wait at once), then the sets are renamed and the deletes made in order,
    /// a batch of several writes goes through the journal at its turn (syncing as it always
    /// does), and every folder that changed is synced once, at the end. A caller returns only
    /// after that last sync; a failed folder sync fails every batch that changed the folder.
    func applyGroup(_ batches: [[StoreWrite]]) -> [Result<Void, any Error>] {
        guard batches.count > 1 else { return batches.map { batch in Result { try apply(batch, sync: true) } } }
        do throws(OfflineStoreError) {
            guard readOnlyReason == nil, let lock else { throw readOnlyReason ?? POSIXFile.error("Locking", path) }
            sortedKeys.withLock { $0 = nil }
            let results = try readers.withExclusiveLock { () throws(OfflineStoreError) in
                try lock.withExclusiveLock { () throws(OfflineStoreError) in
                    defer { lock.countWrite() }
                    try finishEarlierBatch(sync: true)
                    return applyInOrder(batches)
                }
            }
            return results.map { $0.mapError { $0 as any Error } }
        } catch {
            return batches.map { _ in .failure(error) }
        }
    }

    /// The group's writes (see ``applyGroup(_:)``); call holding the folder's lock.
    private func applyInOrder(_ batches: [[StoreWrite]]) -> [Result<Void, OfflineStoreError>] {
        var results = [Result<Void, OfflineStoreError>](repeating: .success(()), count: batches.count)
        // 1. The single sets: their folders made, then every value written and synced at once.
        var staged: [Int: FileTree.StagedSet] = [:]
        for (index, batch) in batches.enumerated() {
            guard batch.count == 1, batch[0].isSet else { continue }
            do throws(OfflineStoreError) {
                staged[index] = try tree.stage(batch[0], sync: true)
            } catch {
                results[index] = .failure(error)
            }
        }
        let toWrite = staged.sorted { $0.key < $1.key }
        let failures = Mutex<[Int: OfflineStoreError]>([:])
        let tree = tree
        DispatchQueue.concurrentPerform(iterations: toWrite.count) { slot in
            let (index, item) = toWrite[slot]
            do throws(OfflineStoreError) {
                try tree.writeTemporary(item, sync: true)
            } catch {
                failures.withLock { $0[index] = error }
            }
        }
        for (index, error) in failures.withLock({ $0 }) {
            results[index] = .failure(error)
            staged[index] = nil
        }

        // 2. In arrival order: renames, deletes, and batches through the journal.
        var touched: [String: (folder: DirectoryDescriptor, batches: [Int])] = [:]
        for (index, batch) in batches.enumerated() {
            guard case .success = results[index] else { continue }
            do throws(OfflineStoreError) {
                if let item = staged[index] {
                    try tree.place(item)
                    touched[item.folder.path, default: (item.folder, [])].batches.append(index)
                } else if batch.count == 1, case .delete(let key) = batch[0] {
                    if let folder = try tree.remove(key) {
                        touched[folder.path, default: (folder, [])].batches.append(index)
                    }
                } else {
                    try applyThroughJournal(batch, sync: true)
                }
            } catch {
                results[index] = .failure(error)
                // A batch whose journal was written is committed, and must end before any later
                // write lands, or finishing it later would undo that write. If it cannot be
                // finished now, no later batch of the group is applied.
                guard tree.hasJournal else { continue }
                do throws(OfflineStoreError) {
                    try finishEarlierBatch(sync: true)
                } catch {
                    for later in (index + 1)..<batches.count {
                        guard case .success = results[later] else { continue }
                        if let item = staged[later] { tree.discard(item) }
                        results[later] = .failure(error)
                    }
                    break
                }
            }
        }

        // 3. One sync per folder that changed; a failed one fails the batches that changed it.
        for entry in touched.values {
            do throws(OfflineStoreError) {
                try entry.folder.sync()
            } catch {
                for index in entry.batches { results[index] = .failure(error) }
            }
        }
        return results
    }
}
