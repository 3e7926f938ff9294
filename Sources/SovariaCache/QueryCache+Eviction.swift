import Foundation
import Sovaria
import Synchronization

extension QueryCache {
    /// The most recent eviction passes (up to 1,000), oldest first.
    public var evictionPasses: [EvictionPass] { passes.withLock { $0 } }

    /// Runs an eviction pass now, and returns when it ends, if the total is over the bound; a
    /// ``put(_:body:serverTime:etag:)`` and a read's fetch start one behind their answer when the
    /// eviction rules say so.
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
    ///
    /// While it runs, every put carries one of its batches (see ``carryEviction(sparing:adding:)``), and
    /// the pass writes a batch of its own only when no put carried one in the last
    /// millisecond (`carriedPassLookInterval`): a put made during a burst never waits for the
    /// pass's commits. A pass that starts while another is carried runs every batch itself.
    private func evictOldest(downToBytes target: Int, maxLists: Int) async throws {
        // Lists shown by live readers when the pass starts; a reader that starts later is not
        // protected from this pass.
        let pass = EvictionProgress(
            target: target, maxLists: maxLists, protected: readers.protectedIDs(limit: Self.maxProtectedLists))
        let start = ContinuousClock.now
        let carried = carriedPass.withLock { running in
            guard running == nil else { return false }
            running = pass
            return true
        }
        enum Look { case putsCarryIt, wroteABatch, ended }
        while true {
            // Ended inside the gate: no put carries a batch of a pass that has ended.
            let look: Look = try await gate.withGate { _ in
                do {
                    if carried, pass.state.withLock({ $0.takeCarriedBatches() }) > 0 { return .putsCarryIt }
                    guard try await evictOneBatch(pass) > 0 else {
                        end(pass, carried: carried)
                        return .ended
                    }
                    return .wroteABatch
                } catch {
                    end(pass, carried: carried)
                    throw error
                }
            }
            switch look {
            case .ended: return finish(pass, startedAt: start)
            case .wroteABatch: continue
            case .putsCarryIt:
                // Looks again once puts have had time to go on: a batch of the pass's own would
                // make the next put wait for its commit.
                try? await Task.sleep(for: Self.carriedPassLookInterval)
            }
        }
    }

    /// Records a pass that ended, and tells ``Configuration/onEviction``.
    private func finish(_ pass: EvictionProgress, startedAt start: ContinuousClock.Instant) {
        let state = pass.state.withLock { $0 }
        let record = EvictionPass(
            evictedLists: state.evictedLists, evictedBytes: state.evictedBytes, duration: ContinuousClock.now - start,
            totalBytesAfter: index.withLock { $0.totalBytes }, ownBatches: state.ownBatches,
            batchesCarriedByPuts: state.carriedBatchesInAll)
        passes.withLock { passes in
            passes.append(record)
            if passes.count > 1_000 { passes.removeFirst(passes.count - 1_000) }
        }
        if state.evictedLists > 0 { configuration.onEviction?(record) }
    }

    /// Stops puts from carrying `pass` and puts back the protected lists it skipped. Run inside
    /// the gate.
    private func end(_ pass: EvictionProgress, carried: Bool) {
        if carried { carriedPass.withLock { $0 = nil } }
        let skipped = pass.state.withLock { $0.skipped }
        index.withLock { index in for item in skipped { index.restore(item.id, item.entry) } }
    }

    /// The size check a put or a read's fetch calls for: the comparison now, and a pass, when
    /// the total is over the bound, in a task of its own so the put returns (and the readers
    /// sharing the fetch are answered) first. One such pass runs at a time (``RunAgainLatch``): it
    /// evicts until the total first reaches the target (puts made meanwhile count, and carry its
    /// batches), and a check asked for while it runs runs again right after it. A pass that fails keeps what it could not
    /// delete; the next check tries again.
    func checkSizeBehindAnswer() {
        guard let bound = size.effectiveBytes, index.withLock({ $0.totalBytes }) > bound else { return }
        guard passBehind.start() else { return }
        runInBackground {
            repeat { try? await self.evictIfOverBound() } while self.passBehind.finishShouldRunAgain()
        }
    }

    /// Deletes up to ten of the oldest unprotected lists, fewer when the pass's total and list
    /// count are reached sooner; returns how many it deleted (none when the pass is done). Run
    /// inside the gate.
    private func evictOneBatch(_ pass: EvictionProgress) async throws -> Int {
        let victims = chooseVictims(pass, sparing: nil, adding: (bytes: 0, lists: 0))
        guard !victims.isEmpty else { return 0 }
        do {
            try await store.write(victims.map { StoreWrite.delete(key: CacheKeys.listKey($0.id, $0.entry)) })
        } catch {
            index.withLock { index in for victim in victims { index.restore(victim.id, victim.entry) } }
            throw error
        }
        removeEvicted(victims, of: pass, carried: false)
        return victims.count
    }

    /// The batch of the pass puts carry that a put about to store `id`'s list deletes in its own
    /// store write: up to ten of the oldest unprotected lists, none of them `id`'s, chosen with
    /// the put's own change to the total (`adding`) counted. Run inside the gate; give the answer
    /// to ``finishCarrying(_:stored:)`` once the write ends.
    func carryEviction(sparing id: HexID, adding change: (bytes: Int, lists: Int)) -> CarriedEviction? {
        guard let pass = carriedPass.withLock({ $0 }) else { return nil }
        let victims = chooseVictims(pass, sparing: id, adding: change)
        guard !victims.isEmpty else { return nil }
        return CarriedEviction(
            pass: pass, victims: victims,
            writes: victims.map { StoreWrite.delete(key: CacheKeys.listKey($0.id, $0.entry)) })
    }

    /// Records a carried batch as evicted when the put's write stored it, or puts its lists back
    /// in the order when it did not. Run inside the gate.
    func finishCarrying(_ carried: CarriedEviction, stored: Bool) {
        if stored {
            removeEvicted(carried.victims, of: carried.pass, carried: true)
        } else {
            index.withLock { index in for victim in carried.victims { index.restore(victim.id, victim.entry) } }
            carried.pass.state.withLock { $0.reachedTarget = false }  // the pass deletes them itself
        }
    }

    /// Takes up to ten of the oldest lists off the order, while the total (with `adding`, a
    /// carrying put's own change, and less what is taken) is over the pass's target or more
    /// lists than its limit are left. Lists live readers show
    /// are set aside for the pass's end; `sparing`'s list, which a put replaces, goes back at once.
    ///
    /// Once the total reaches the target the pass is done, and takes nothing more: the lists
    /// put afterwards fill the cache up to the bound again before the next pass.
    private func chooseVictims(
        _ pass: EvictionProgress, sparing: HexID?, adding change: (bytes: Int, lists: Int)
    ) -> [(id: HexID, entry: CacheIndex.Entry)] {
        var victims: [(id: HexID, entry: CacheIndex.Entry)] = []
        guard !pass.state.withLock({ $0.reachedTarget }) else { return victims }
        index.withLock { index in
            var spared: [(id: HexID, entry: CacheIndex.Entry)] = []
            var projected = index.totalBytes + change.bytes
            while victims.count < Self.evictionBatchLists,
                projected > pass.target || index.entries.count + change.lists - victims.count > pass.maxLists,
                let oldest = index.popOldest()
            {
                if oldest.id == sparing {
                    spared.append(oldest)
                } else if pass.protected.contains(oldest.id) {
                    pass.state.withLock { $0.skipped.append(oldest) }
                } else {
                    victims.append(oldest)
                    projected -= oldest.entry.sizeBytes
                }
            }
            for item in spared { index.restore(item.id, item.entry) }
        }
        if victims.count < Self.evictionBatchLists { pass.state.withLock { $0.reachedTarget = true } }
        return victims
    }

    /// Takes the deleted lists out of the index and the memory layer, and counts them in the pass.
    private func removeEvicted(
        _ victims: [(id: HexID, entry: CacheIndex.Entry)], of pass: EvictionProgress, carried: Bool
    ) {
        var bytes = 0
        index.withLock { index in
            for victim in victims {
                bytes += index.remove(victim.id)?.sizeBytes ?? 0
                memory.removeValue(forKey: victim.id)
            }
        }
        pass.state.withLock { state in
            state.evictedLists += victims.count
            state.evictedBytes += bytes
            if carried {
                state.carriedBatches += 1
                state.carriedBatchesInAll += 1
            } else {
                state.ownBatches += 1
            }
        }
    }
}

/// An eviction pass's rules and what it has done so far, shared with the puts that carry its
/// batches; changed only inside the cache's gate.
final class EvictionProgress: Sendable {
    struct State {
        /// Protected lists taken off the order, put back when the pass ends.
        var skipped: [(id: HexID, entry: CacheIndex.Entry)] = []
        var evictedLists = 0
        var evictedBytes = 0
        /// Batches puts carried since the pass last looked.
        var carriedBatches = 0
        var carriedBatchesInAll = 0
        var ownBatches = 0
        /// Whether the total reached the target (or no list was left): the pass takes no more.
        var reachedTarget = false

        /// The batches carried since the last look, and a new count from zero.
        mutating func takeCarriedBatches() -> Int {
            defer { carriedBatches = 0 }
            return carriedBatches
        }
    }

    let target: Int
    let maxLists: Int
    let protected: Set<HexID>
    let state = Mutex(State())

    init(target: Int, maxLists: Int, protected: Set<HexID>) {
        self.target = target
        self.maxLists = maxLists
        self.protected = protected
    }
}

/// One batch of a pass that a put deletes in its own store write.
struct CarriedEviction {
    let pass: EvictionProgress
    let victims: [(id: HexID, entry: CacheIndex.Entry)]
    /// The deletes the put appends to its write.
    let writes: [StoreWrite]
}
