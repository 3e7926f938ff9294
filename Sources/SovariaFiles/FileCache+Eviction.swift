import Foundation
import Sovaria
import SovariaPlumbing

extension FileCache {
    /// Runs an eviction pass now, if the total is over the bound: the least recently used files
    /// go until the total is at most 90% of the bound, except files with an open lease or used
    /// in the last 30 seconds. Temporary files a crash left are deleted first once they are more
    /// than a day old. Downloads call for a pass by themselves; this is for an app that lowers
    /// its needs (or a test that wants the pass at a known moment).
    ///
    /// An account's cache (``init(directory:metadata:account:configuration:)``) runs the pass of
    /// every account of the device, with its own bound: the files of all of them, least recently
    /// used first, one such pass at a time. Each open cache keeps its leases and recent files.
    ///
    /// - Complexity: O((e + l) × log n) for e files evicted and l leased files skipped among n:
    ///   the order is a heap walked from the least recently used end, the total is kept, not
    ///   summed, and the pass stops at the first file used in the last 30 seconds (every file
    ///   after it in the order is newer). Files go 16 per store batch, each batch one hold of
    ///   the gate, so a download waits for at most one batch. Across accounts, each round takes
    ///   up to 16 files off each open cache's heap and each closed account's list (kept sorted in
    ///   memory), and the first pass after an account opens or closes also lists the closed
    ///   accounts' record keys and `files/` folders.
    public func evictIfOverBound() async throws {
        if let sharedBound {
            try await evictAcrossAccounts(sharedBound.group)
            return
        }
        try await passGate.withGate { pass in
            try await removeExpiredLeftovers(pass)
            guard let bound = size.effectiveBytes, let target = size.evictionTargetBytes, totalBytes > bound else {
                return
            }
            var setAside: [(id: FileID, entry: FileIndex.Entry)] = []
            var reachedRecent = false
            defer { state.withLock { state in for item in setAside { state.index.restore(item.id, item.entry) } } }
            var failure: (any Error)?
            do {
                while try await gate.withGate({ gated in
                    try await evictOneBatch(gated, downTo: target, setAside: &setAside, reachedRecent: &reachedRecent)
                }) {}
            } catch {
                failure = error
            }
            // Every file left is protected when the pass stopped at a recent one; otherwise what
            // it skipped (leased files) is what protection cost.
            state.withLock { state in
                let index = state.index
                state.counters.passes += 1
                state.counters.protectedBytes =
                    reachedRecent && index.totalBytes > target
                    ? index.totalBytes - index.leftoverBytes
                    : setAside.reduce(0) { $0 + (index.entries[$1.id]?.sizeBytes ?? 0) }
            }
            if let failure { throw failure }
        }
    }

    /// The size check after a download: over the bound, a pass in a task of its own, so the
    /// download returns first. One such pass runs at a time; a check asked for while it runs
    /// runs again right after it. A pass that fails keeps what it could not delete; the next
    /// download tries again.
    func checkSizeBehindDownload() {
        guard let bound = size.effectiveBytes else { return }
        if let group = sharedBound?.group {
            // In memory, unless an account opened or closed since the others were counted: then
            // the pass counts them.
            if let total = group.currentTotalBytes, total <= bound { return }
        } else {
            guard totalBytes > bound else { return }
        }
        guard passBehind.start() else { return }
        runInBackground {
            repeat { try? await self.evictIfOverBound() } while self.passBehind.finishShouldRunAgain()
        }
    }

    /// Deletes up to ``evictionBatchFiles`` of the least recently used unprotected files, fewer
    /// when the total reaches `target`; returns whether it deleted any (none: the pass is over).
    private func evictOneBatch(
        _ gated: borrowing GateToken<FileCache>, downTo target: Int,
        setAside: inout [(id: FileID, entry: FileIndex.Entry)], reachedRecent: inout Bool
    ) async throws -> Bool {
        let recentSince = now - Self.recentUseProtectionMillis
        var victims: [(id: FileID, entry: FileIndex.Entry)] = []
        state.withLock { state in
            while victims.count < Self.evictionBatchFiles, state.index.totalBytes > target,
                let oldest = state.index.popLeastRecentlyUsed()
            {
                if oldest.entry.lastUseMillis > recentSince {
                    // Every file after this one in the order was used later still: all protected.
                    setAside.append(oldest)
                    reachedRecent = true
                    return
                }
                if state.index.isLeased(oldest.id) {
                    setAside.append(oldest)
                    continue
                }
                // Out of the index at once: an open from now on misses it.
                state.index.remove(oldest.id)
                victims.append(oldest)
            }
        }
        guard !victims.isEmpty else { return false }
        try await deleteEvicted(gated, victims)
        return true
    }

    /// Deletes the files of `victims`, which are out of the index already, and then their
    /// metadata keys; counts them in the statistics. A file that cannot be deleted goes back into
    /// the index, keeps its key, and the call throws `.io` once the others' keys are gone.
    func deleteEvicted(
        _ gated: borrowing GateToken<FileCache>, _ victims: [(id: FileID, entry: FileIndex.Entry)]
    ) async throws {
        guard !victims.isEmpty else { return }
        // Files first, then their metadata: a crash in between leaves metadata without a file,
        // which the next open drops.
        let paths = victims.map { folder.filePath($0.id) }
        let failed: [Int] = try await work.runConcurrently { [folder] in
            var failed: [Int] = []
            for (position, path) in paths.enumerated() where (try? folder.remove(path)) == nil {
                failed.append(position)
            }
            return failed
        }
        let failedSet = Set(failed)
        let deleted = victims.enumerated().filter { !failedSet.contains($0.offset) }.map(\.element)
        state.withLock { state in
            for position in failed {
                let victim = victims[position]
                state.index.insert(
                    victim.id, sizeBytes: victim.entry.sizeBytes, lastUseMillis: victim.entry.lastUseMillis,
                    storedUseMillis: victim.entry.storedUseMillis)
            }
            state.counters.evictions += deleted.count
            state.counters.evictedBytes += deleted.reduce(0) { $0 + $1.entry.sizeBytes }
        }
        if !deleted.isEmpty {
            try await metadata.writeLearningOutcome(
                deleted.map {
                    .delete(
                        key: FileKeys.metadataKey(
                            id: $0.id, sizeBytes: $0.entry.sizeBytes, lastUseMillis: $0.entry.storedUseMillis))
                })
        }
        guard !failed.isEmpty else { return }
        throw OfflineStoreError(
            .io,
            "An eviction pass could not delete \(failed.count) file(s) in \(folder.filesPath); they stay cached. "
                + "Check the folder's permissions and the disk.")
    }

    /// Deletes the temporary files a crash left once they are more than a day old.
    func removeExpiredLeftovers(_ pass: borrowing GateToken<EvictionPasses>) async throws {
        let now = self.now
        let expired = state.withLock { state in
            state.index.leftovers.filter { now - $0.value.modifiedMillis > Self.temporaryFileMaxAgeMillis }.map(\.key)
        }
        guard !expired.isEmpty else { return }
        try await work.runConcurrently { [folder] in
            for name in expired { try folder.remove(folder.temporaryPath + "/" + name) }
        }
        state.withLock { state in for name in expired { state.index.removeLeftover(name) } }
    }
}
