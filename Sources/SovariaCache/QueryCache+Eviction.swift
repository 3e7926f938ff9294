import Foundation
import Sovaria

extension QueryCache {
    /// The most recent eviction passes (up to 1,000), oldest first.
    public var evictionPasses: [EvictionPass] { passes.withLock { $0 } }

    /// Runs an eviction pass now, and returns when it ends, if the total is over the bound; a
    /// ``put(_:body:serverTime:etag:)`` and a read's fetch start one behind their answer when the
    /// seed's rules say so.
    ///
    /// - Complexity: O((e + p) log n) for e evicted and p protected lists among n: the order
    ///   is a heap walked from the oldest end, and the total is kept, not summed.
    public func evictIfOverBound() async throws {
        guard let bound = size.effectiveBytes, let target = size.evictionTargetBytes,
            try await totalBytes > bound
        else { return }
        try await evictOldest(downToBytes: target, maxLists: .max)
    }

    /// Evicts the lists the server sent longest ago until at most `maxLists` are left, with the
    /// pass's rules (ten per batch; lists live readers show are kept): a bound on the number of
    /// cached results beside the byte bound, as `SovariaOffline.maxCached` sets.
    public func evict(downToLists maxLists: Int) async throws {
        guard try await listCount > max(maxLists, 0) else { return }
        try await evictOldest(downToBytes: .max, maxLists: max(maxLists, 0))
    }

    /// One eviction pass: the oldest unprotected lists go, ten per store batch, until the total
    /// is at most `target` bytes and at most `maxLists` lists are left.
    private func evictOldest(downToBytes target: Int, maxLists: Int) async throws {
        // Lists shown by live readers when the pass starts; a reader that starts later is not
        // protected from this pass.
        let protected = readers.protectedIDs(limit: Self.maxProtectedLists)
        let start = ContinuousClock.now
        var evictedLists = 0
        var evictedBytes = 0
        var skipped: [(id: HexID, entry: CacheIndex.Entry)] = []
        defer { index.withLock { index in for item in skipped { index.restore(item.id, item.entry) } } }
        while true {
            let step = try await gate.withGate {
                try await evictOneBatch(downTo: target, maxLists: maxLists, protected: protected, skipped: &skipped)
            }
            evictedLists += step.lists
            evictedBytes += step.bytes
            if step.lists == 0 { break }
        }
        let pass = EvictionPass(
            evictedLists: evictedLists, evictedBytes: evictedBytes, duration: ContinuousClock.now - start,
            totalBytesAfter: index.withLock { $0.totalBytes })
        passes.withLock { passes in
            passes.append(pass)
            if passes.count > 1_000 { passes.removeFirst(passes.count - 1_000) }
        }
        if evictedLists > 0 { configuration.onEviction?(pass) }
    }

    /// The size check a put or a read's fetch calls for: the comparison now, and a pass, when
    /// the total is over the bound, in a task of its own so the put returns (and the readers
    /// sharing the fetch are answered) first. One such pass runs at a time (``RunAgainLatch``): it
    /// evicts until the total reaches the target, puts made meanwhile included, and a check asked
    /// for while it runs runs again right after it. A pass that fails keeps what it could not
    /// delete; the next check tries again.
    func checkSizeBehindAnswer() {
        guard let bound = size.effectiveBytes, index.withLock({ $0.totalBytes }) > bound else { return }
        guard passBehind.start() else { return }
        runInBackground {
            repeat { try? await self.evictIfOverBound() } while self.passBehind.finishShouldRunAgain()
        }
    }

    /// Deletes up to ten of the oldest unprotected lists, fewer when the total reaches `target`
    /// bytes and `maxLists` lists sooner; returns what it deleted (nothing when done).
    private func evictOneBatch(
        downTo target: Int, maxLists: Int, protected: Set<HexID>,
        skipped: inout [(id: HexID, entry: CacheIndex.Entry)]
    ) async throws -> (lists: Int, bytes: Int) {
        var victims: [(id: HexID, entry: CacheIndex.Entry)] = []
        index.withLock { index in
            var projected = index.totalBytes
            while victims.count < Self.evictionBatchLists,
                projected > target || index.entries.count - victims.count > maxLists,
                let oldest = index.popOldest()
            {
                if protected.contains(oldest.id) {
                    skipped.append(oldest)
                } else {
                    victims.append(oldest)
                    projected -= oldest.entry.sizeBytes
                }
            }
        }
        guard !victims.isEmpty else { return (0, 0) }
        let writes = victims.map { StoreWrite.delete(key: CacheKeys.listKey($0.id, $0.entry)) }
        do {
            try await store.write(writes)
        } catch {
            index.withLock { index in for victim in victims { index.restore(victim.id, victim.entry) } }
            throw error
        }
        var bytes = 0
        index.withLock { index in
            for victim in victims {
                bytes += index.remove(victim.id)?.sizeBytes ?? 0
                memory.removeValue(forKey: victim.id)
            }
        }
        return (victims.count, bytes)
    }
}
