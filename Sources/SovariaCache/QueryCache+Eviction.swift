import Foundation
import Sovaria
import SovariaPlumbing
import Synchronization

extension QueryCache {
    /// The most recent eviction passes (up to 1,000), oldest first.
    public var evictionPasses: [EvictionPass] { state.withLock { $0.passes } }

    /// Runs an eviction pass now, if the total is over the bound, and returns when it ends; a
    /// ``put(_:body:serverTime:etag:)`` and a read's fetch start one behind their answer when the
    /// eviction rules (<doc:TheQueryCache#Size-and-eviction>) say so.
    ///
    /// - Complexity: O((e + p) log n) for e evicted and p protected responses among n: the order
    ///   is a heap walked from the oldest end, and the total is kept, not summed.
    public func evictIfOverBound() async throws {
        guard let bound = size.effectiveBytes, let target = size.evictionTargetBytes,
            try await totalBytes > bound
        else { return }
        try await evictOldest(downToBytes: target, maxResponses: .max)
    }

    /// Evicts the responses the server sent longest ago until at most `maxResponses` are left,
    /// by the pass's rules: a bound on the number of cached responses beside the byte bound, as
    /// `SovariaOffline`'s `maxCached` sets.
    public func evict(downToResponses maxResponses: Int) async throws {
        guard try await responseCount > max(maxResponses, 0) else { return }
        try await evictOldest(downToBytes: .max, maxResponses: max(maxResponses, 0))
    }

    /// Evicts the `count` responses the server sent longest ago, by the pass's rules (a response a
    /// live reader shows stays): the share of a device-wide budget that falls on this cache.
    package func evictOldest(_ count: Int) async throws {
        guard count > 0 else { return }
        try await evict(downToResponses: max(try await responseCount - count, 0))
    }

    /// One eviction pass: the oldest unprotected responses go, ten per store batch, until the
    /// total is at most `target` bytes and at most `maxResponses` are left.
    ///
    /// While it runs, every put carries one of its batches (see
    /// ``carryEviction(sparing:adding:_:)``), and the pass writes a batch of its own only when
    /// no put carried one in the last `carriedPassLookInterval`. A pass that starts while
    /// another is carried runs every batch itself.
    private func evictOldest(downToBytes target: Int, maxResponses: Int) async throws {
        // Responses shown by live readers when the pass starts; a reader that starts later is not
        // protected from this pass.
        let pass = EvictionProgress(
            target: target, maxResponses: maxResponses,
            protected: readers.protectedIDs(limit: Self.maxProtectedResponses))
        let start = ContinuousClock.now
        let carried = state.withLock { state in
            guard state.carriedPass == nil else { return false }
            state.carriedPass = pass
            return true
        }
        enum Look { case putsCarryIt, wroteABatch, ended }
        while true {
            // Ended inside the gate: no put carries a batch of a pass that has ended.
            let look: Look = try await gate.withGate { gated in
                do {
                    if carried, pass.state.withLock({ $0.takeCarriedBatches() }) > 0 { return .putsCarryIt }
                    guard try await evictOneBatch(pass, gated) > 0 else {
                        end(pass, carried: carried, gated)
                        return .ended
                    }
                    return .wroteABatch
                } catch {
                    end(pass, carried: carried, gated)
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
        let progress = pass.state.withLock { $0 }
        let record = state.withLock { state in
            let record = EvictionPass(
                evictedResponses: progress.evictedResponses, evictedBytes: progress.evictedBytes,
                duration: ContinuousClock.now - start, totalBytesAfter: state.index.totalBytes,
                ownBatches: progress.ownBatches, batchesCarriedByPuts: progress.carriedBatchesInAll)
            state.passes.append(record)
            if state.passes.count > 1_000 { state.passes.removeFirst(state.passes.count - 1_000) }
            return record
        }
        if progress.evictedResponses > 0 { configuration.onEviction?(record) }
    }

    /// Stops puts from carrying `pass` and puts back the protected responses it skipped.
    private func end(_ pass: EvictionProgress, carried: Bool, _ gated: borrowing GateToken<QueryCache>) {
        let skipped = pass.state.withLock { $0.skipped }
        state.withLock { state in
            if carried { state.carriedPass = nil }
            for item in skipped { state.index.restore(item.id, item.entry) }
        }
    }

    /// The size check a put or a read's fetch calls for: the comparison now, and a pass, when
    /// the total is over the bound, in a task of its own so the put returns (and the readers
    /// sharing the fetch are answered) first. One such pass runs at a time: it evicts until the
    /// total first reaches the target, and a check asked for while it runs runs again right after
    /// it. A pass that fails keeps what it could not delete; the next check tries again.
    func checkSizeBehindAnswer() {
        guard let bound = size.effectiveBytes else { return }
        let starts = state.withLock { state in
            guard state.index.totalBytes > bound else { return false }
            guard !state.passBehind.running else {
                state.passBehind.runAgain = true
                return false
            }
            state.passBehind.running = true
            return true
        }
        guard starts else { return }
        runInBackground {
            repeat { try? await self.evictIfOverBound() } while self.passBehindShouldRunAgain()
        }
    }

    /// Called when the pass behind answers ends: `true` when a check was asked for meanwhile
    /// (run again), else the next check may start one.
    private func passBehindShouldRunAgain() -> Bool {
        state.withLock { state in
            let again = state.passBehind.runAgain
            state.passBehind = (running: again, runAgain: false)
            return again
        }
    }

    /// Deletes up to ten of the oldest unprotected responses, fewer when the pass's total and
    /// count are reached sooner; returns how many it deleted (none when the pass is done).
    private func evictOneBatch(_ pass: EvictionProgress, _ gated: borrowing GateToken<QueryCache>) async throws -> Int {
        let victims = chooseVictims(pass, sparing: nil, adding: (bytes: 0, responses: 0), gated)
        guard !victims.isEmpty else { return 0 }
        do {
            try await store.write(victims.map { StoreWrite.delete(key: CacheKeys.responseKey($0.id, $0.entry)) })
        } catch {
            state.withLock { state in for victim in victims { state.index.restore(victim.id, victim.entry) } }
            forgetMemory(of: victims.map(\.id))
            throw error
        }
        removeEvicted(victims, of: pass, carried: false, gated)
        return victims.count
    }

    /// The batch of the pass puts carry that a put about to store `id`'s response deletes in its
    /// own store write: up to ten of the oldest unprotected responses, none of them `id`'s, chosen
    /// with the put's own change to the total (`adding`) counted. Give the answer to
    /// ``finishCarrying(_:stored:_:)`` once the write ends.
    func carryEviction(
        sparing id: HexID, adding change: (bytes: Int, responses: Int), _ gated: borrowing GateToken<QueryCache>
    ) -> CarriedEviction? {
        guard let pass = state.withLock({ $0.carriedPass }) else { return nil }
        let victims = chooseVictims(pass, sparing: id, adding: change, gated)
        guard !victims.isEmpty else { return nil }
        return CarriedEviction(
            pass: pass, victims: victims,
            writes: victims.map { StoreWrite.delete(key: CacheKeys.responseKey($0.id, $0.entry)) })
    }

    /// Records a carried batch as evicted when the put's write stored it, or puts its responses
    /// back in the order when it did not.
    func finishCarrying(_ carried: CarriedEviction, stored: Bool, _ gated: borrowing GateToken<QueryCache>) {
        if stored {
            removeEvicted(carried.victims, of: carried.pass, carried: true, gated)
        } else {
            state.withLock { state in
                for victim in carried.victims { state.index.restore(victim.id, victim.entry) }
            }
            forgetMemory(of: carried.victims.map(\.id))
            carried.pass.state.withLock { $0.reachedTarget = false }  // the pass deletes them itself
        }
    }

    /// Takes up to ten of the oldest responses off the order, while the total (with `adding`, a
    /// carrying put's own change, and less what is taken) is over the pass's target or more
    /// responses than its limit are left. Responses live readers show are set aside for the
    /// pass's end; `sparing`'s, which a put replaces, goes back at once.
    ///
    /// Once the total reaches the target the pass is done, and takes nothing more: the responses
    /// put afterwards fill the cache up to the bound again before the next pass.
    private func chooseVictims(
        _ pass: EvictionProgress, sparing: HexID?, adding change: (bytes: Int, responses: Int),
        _ gated: borrowing GateToken<QueryCache>
    ) -> [(id: HexID, entry: CacheIndex.Entry)] {
        guard !pass.state.withLock({ $0.reachedTarget }) else { return [] }
        let (victims, skipped) = state.withLock { state in
            var victims: [(id: HexID, entry: CacheIndex.Entry)] = []
            var skipped: [(id: HexID, entry: CacheIndex.Entry)] = []
            var spared: [(id: HexID, entry: CacheIndex.Entry)] = []
            var projected = state.index.totalBytes + change.bytes
            while victims.count < Self.evictionBatchResponses,
                projected > pass.target
                    || state.index.entries.count + change.responses - victims.count > pass.maxResponses,
                let oldest = state.index.popOldest()
            {
                if oldest.id == sparing {
                    spared.append(oldest)
                } else if pass.protected.contains(oldest.id) {
                    skipped.append(oldest)
                } else {
                    victims.append(oldest)
                    projected -= oldest.entry.sizeBytes
                }
            }
            for item in spared { state.index.restore(item.id, item.entry) }
            return (victims, skipped)
        }
        pass.state.withLock { progress in
            progress.skipped += skipped
            if victims.count < Self.evictionBatchResponses { progress.reachedTarget = true }
        }
        return victims
    }

    /// Takes the deleted responses out of the index and the memory layer, and counts them in the
    /// pass.
    private func removeEvicted(
        _ victims: [(id: HexID, entry: CacheIndex.Entry)], of pass: EvictionProgress, carried: Bool,
        _ gated: borrowing GateToken<QueryCache>
    ) {
        let bytes = state.withLock { state in
            var bytes = 0
            for victim in victims {
                bytes += state.index.remove(victim.id)?.sizeBytes ?? 0
                memory.removeValue(forKey: victim.id)
            }
            return bytes
        }
        pass.state.withLock { progress in
            progress.evictedResponses += victims.count
            progress.evictedBytes += bytes
            if carried {
                progress.carriedBatches += 1
                progress.carriedBatchesInAll += 1
            } else {
                progress.ownBatches += 1
            }
        }
    }
}

/// An eviction pass's rules and what it has done so far, shared with the puts that carry its
/// batches; changed only inside the cache's gate. Its lock is a leaf: never held while the
/// cache's `state` or memory lock is taken.
final class EvictionProgress: Sendable {
    struct State {
        /// Protected responses taken off the order, put back when the pass ends.
        var skipped: [(id: HexID, entry: CacheIndex.Entry)] = []
        var evictedResponses = 0
        var evictedBytes = 0
        /// Batches puts carried since the pass last looked.
        var carriedBatches = 0
        var carriedBatchesInAll = 0
        var ownBatches = 0
        /// Whether the total reached the target (or no response was left): the pass takes no more.
        var reachedTarget = false

        /// The batches carried since the last look, and a new count from zero.
        mutating func takeCarriedBatches() -> Int {
            defer { carriedBatches = 0 }
            return carriedBatches
        }
    }

    let target: Int
    let maxResponses: Int
    let protected: Set<HexID>
    let state = Mutex(State())

    init(target: Int, maxResponses: Int, protected: Set<HexID>) {
        self.target = target
        self.maxResponses = maxResponses
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
