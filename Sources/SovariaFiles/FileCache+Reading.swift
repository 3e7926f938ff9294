import Foundation
import Sovaria
import SovariaPlumbing

extension FileCache {
    /// The file cached under `key`, as a lease that keeps it from eviction until it ends, or
    /// `nil` (a miss).
    ///
    /// Opening is a use: it moves the file to the most recently used end of the order at once,
    /// and records the use in the metadata store before returning when the recorded one is a
    /// second old or more (at most one store write per file per second, however often the file
    /// is read). The lease's end is a use too, recorded by a write the end starts.
    ///
    /// A file deleted behind the cache (the system purged its Caches folder) is a miss, and its
    /// entry goes: from the index, from the total, and its metadata key from the store.
    ///
    /// - Important: Costs a dictionary lookup and one open of the file (on the cache's blocking
    ///   queue); no store read. A use that cannot be recorded (the store failed) does not fail
    ///   the open: it stays pending.
    /// - Throws: an `OfflineStoreError` (`.permissionDenied`, `.io` …) when the file is there but
    ///   cannot be opened; the entry stays.
    public func open(_ key: String) async throws -> FileLease? {
        guard let found = claim(key) else {
            state.withLock { $0.counters.misses += 1 }
            return nil
        }
        let lease = try await openClaimed(found)
        state.withLock { lease == nil ? $0.counters.misses += 1 : ($0.counters.hits += 1) }
        return lease
    }

    /// What ``claim(_:)`` found: the file's entry, leased and marked used, and whether the use is
    /// due to be recorded.
    struct ClaimedFile {
        let id: FileID
        let key: String
        let entry: FileIndex.Entry
        let record: Bool
    }

    /// The first half of an open, in memory only: if `key` has a file, leases it and marks it used.
    /// ``openClaimed(_:)`` must follow (it ends the lease when the file is gone).
    func claim(_ key: String) -> ClaimedFile? {
        let id = FileKeys.id(of: key)
        let now = self.now
        return state.withLock { state -> ClaimedFile? in
            guard let entry = state.index.entries[id] else { return nil }
            state.index.addLease(id)
            state.index.update(id) { $0.lastUseMillis = max($0.lastUseMillis, now) }
            return ClaimedFile(
                id: id, key: key, entry: entry, record: now - entry.storedUseMillis >= Self.useRecordIntervalMillis)
        }
    }

    /// The second half of an open: the claimed file opened as a lease, or `nil` when there is no
    /// file: removed since the claim, or deleted behind the cache, whose entry (bytes, key) is
    /// then dropped (``dropMissingFile(_:)``). Counts nothing in ``statistics``.
    func openClaimed(_ found: ClaimedFile) async throws -> FileLease? {
        let (id, key) = (found.id, found.key)
        let path = folder.filePath(id)
        let opened: (handle: FileHandle, sizeBytes: Int)?
        do {
            // The size of what was opened: a download of the same key may have replaced the file
            // since the lookup.
            opened = try await work.runConcurrently { [folder] in
                try folder.openFile(id, key: key).map { opened in
                    (FileHandle(fileDescriptor: opened.descriptor, closeOnDealloc: true), opened.sizeBytes)
                }
            }
        } catch {
            state.withLock { $0.index.releaseLease(id) }
            throw error
        }
        guard let opened else {
            state.withLock { $0.index.releaseLease(id) }
            try await dropMissingFile(found)
            return nil
        }
        let lease = FileLease(
            key: key, url: URL(fileURLWithPath: path), sizeBytes: opened.sizeBytes, fileHandle: opened.handle
        ) { [self] in endLease(id, key: key) }
        if found.record {
            // A read does not fail because its use could not be recorded (a full or broken
            // store): the use stays pending, and the next record or recordPendingUses() retries.
            do {
                try await recordUse(id, key: key)
            } catch {
                state.withLock { $0.pendingUses[id] = key }
            }
        }
        return lease
    }

    /// The claimed file is not in `files/`. If the entry is still the one claimed (no download
    /// replaced it, no removal took it since) and its file is still missing, the entry goes from
    /// the index, its bytes from the total, and its key from the store: the key is a miss from
    /// now on, and a read-through downloads it. A removal, an eviction or a download since the
    /// claim already changed the entry: nothing to do.
    ///
    /// A key the store fails to delete stays behind, naming no file: the next open drops it, and
    /// until then it changes nothing (a new download's key has a newer use, which open keeps).
    ///
    /// - Throws: `CancellationError` when the task is cancelled while it waits for the gate.
    private func dropMissingFile(_ found: ClaimedFile) async throws {
        let id = found.id
        try await gate.withGate { gated in
            guard let entry = state.withLock({ $0.index.entries[id] }), entry.generation == found.entry.generation
            else { return }
            let path = folder.filePath(id)
            guard (try? await work.runConcurrently({ CacheFolder.status(path) == nil })) ?? false else { return }
            state.withLock { state in
                _ = state.index.remove(id)
                state.pendingUses[id] = nil
            }
            try? await metadata.writeLearningOutcome([.delete(key: entry.metadataKey(id))])
        }
    }

    /// Writes every use not recorded yet (leases that ended) to the metadata store now. Lease
    /// ends start this by themselves; call it before a planned shutdown so that no recency is
    /// lost.
    public func recordPendingUses() async throws {
        while case let batch = takePendingUses(onlyDue: false), !batch.isEmpty {
            for (id, key) in batch { try await recordUse(id, key: key) }
        }
    }

    /// Takes the pending uses off the list: all of them, or the ones a second or more newer than
    /// their record (`onlyDue`), leaving the others pending.
    /// `endRecording`: when nothing is due, the background writer stops (in the same critical
    /// section, so a lease ending meanwhile starts a new one).
    private func takePendingUses(onlyDue: Bool, endRecording: Bool = false) -> [(id: FileID, key: String)] {
        state.withLock { state in
            let index = state.index
            let taken = state.pendingUses.filter { id, _ in
                !onlyDue
                    || index.entries[id].map { $0.lastUseMillis - $0.storedUseMillis >= Self.useRecordIntervalMillis }
                        ?? true
            }
            for id in taken.keys { state.pendingUses[id] = nil }
            if endRecording, taken.isEmpty { state.recordingUses = false }
            return taken.map { (id: $0.key, key: $0.value) }
        }
    }

    /// A lease ended: the end is the file's last use, in memory now. In the store it is written
    /// by a write in the background (one at a time, taking every use pending) when it is a second
    /// or more newer than the recorded use; a newer end within that second waits for the next
    /// use, the next write, or ``recordPendingUses()`` (the rule: at most one write per file per
    /// second, so a crash loses at most that second).
    func endLease(_ id: FileID, key: String) {
        let now = self.now
        let start = state.withLock { state -> Bool in
            state.index.releaseLease(id)
            state.index.update(id) { $0.lastUseMillis = max($0.lastUseMillis, now) }
            state.pendingUses[id] = key
            guard let entry = state.index.entries[id],
                entry.lastUseMillis - entry.storedUseMillis >= Self.useRecordIntervalMillis, !state.recordingUses
            else { return false }
            state.recordingUses = true
            return true
        }
        guard start else { return }
        runInBackground {
            while case let batch = self.takePendingUses(onlyDue: true, endRecording: true), !batch.isEmpty {
                for (id, key) in batch { try? await self.recordUse(id, key: key) }
            }
        }
    }

    /// Moves the file's metadata key to its latest use, if that is newer than the recorded
    /// one: one batch, the new key first (a store without atomic batches may keep both after a
    /// crash; open keeps the newer).
    func recordUse(_ id: FileID, key: String) async throws {
        try await gate.withGate { gated in try await recordUse(gated, id, key: key) }
    }

    private func recordUse(_ gated: borrowing GateToken<FileCache>, _ id: FileID, key: String) async throws {
        guard let entry = state.withLock({ $0.index.entries[id] }), entry.lastUseMillis > entry.storedUseMillis
        else { return }
        try await metadata.writeLearningOutcome([
            .set(
                key: FileKeys.metadataKey(id: id, sizeBytes: entry.sizeBytes, lastUseMillis: entry.lastUseMillis),
                value: FileKeys.value(key: key)),
            .delete(
                key: FileKeys.metadataKey(id: id, sizeBytes: entry.sizeBytes, lastUseMillis: entry.storedUseMillis)),
        ])
        state.withLock { state in
            state.index.update(id) { current in
                if current.generation == entry.generation { current.storedUseMillis = entry.lastUseMillis }
            }
        }
    }
}
