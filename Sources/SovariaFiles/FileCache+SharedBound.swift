import Foundation
import Sovaria
import SovariaPlumbing

extension FileCache {
    /// The bytes the cache's bound applies to: ``totalBytes`` for a cache opened without an
    /// account; for an account's cache, every account's files under the same directory and
    /// metadata store (the accounts with a cache open now as their caches count them, the others
    /// as the last pass counted them from their records).
    ///
    /// - Important: Memory only. The accounts with no cache open are counted by the first pass
    ///   after an account's cache opens or closes; until then an account that just closed counts
    ///   nothing, one that just opened counts as its cache says.
    public var boundTotalBytes: Int {
        sharedBound?.group.lastCountedTotalBytes ?? totalBytes
    }

    /// One file a pass across accounts may delete, and whose it is.
    private struct Candidate {
        enum Owner {
            /// A file of an open cache (held for the round only).
            case open(FileCache, FileID, FileIndex.Entry)
            /// A file of an account with no cache open.
            case closed(AccountID, AccountCacheGroup.ClosedFile)
        }

        let owner: Owner
        let lastUseMillis: Int64
        let sizeBytes: Int
        /// Breaks ties in last use, so that the order is the same on every run.
        let tieBreak: String
    }

    /// What a pass keeps of one open cache: the files it took off the order and must give back,
    /// and whether it met a file used in the last 30 seconds (every file after it is newer).
    private struct Protection {
        var setAside: [(id: FileID, entry: FileIndex.Entry)] = []
        var reachedRecent = false
    }

    /// A ``Protection`` and the cache it is of, held weakly between rounds.
    private struct HeldProtection {
        weak var cache: FileCache?
        var protection = Protection()
    }

    /// The pass of an account's cache: the files of every account of the device, least recently
    /// used first whoever owns them, until the total is at most 90% of this cache's bound.
    ///
    /// An open cache's files go through it, in its gate, so its leases and its 30-second
    /// protection hold; a closed account's go by ``AccountCacheGroup/deleteClosedFiles(_:of:on:)``.
    /// Each round takes the up to 16 oldest candidates of each owner and deletes the oldest 16 of
    /// them all: the 16 oldest of the device are among them. Each round asks the group for its
    /// open caches again and holds them for that round only: a cache the app lets go during a
    /// long pass is released (and its folder lock with it), not kept until the pass ends.
    func evictAcrossAccounts(_ group: AccountCacheGroup) async throws {
        try await group.passes.withGate { pass in
            for member in group.openCaches() { try await member.cache.removeExpiredLeftovers(pass) }
            var closed = try await group.closedAccounts(on: work)
            guard let bound = size.effectiveBytes, let target = size.evictionTargetBytes else { return }
            func total(_ members: [(account: AccountID, cache: FileCache)]) -> Int {
                members.reduce(closed.totalBytes) { $0 + $1.cache.totalBytes }
            }
            guard total(group.openCaches()) > bound else { return }
            let recentSince = now - Self.recentUseProtectionMillis
            var protections: [ObjectIdentifier: HeldProtection] = [:]
            // Closed accounts whose folder is locked: their caches are open elsewhere.
            var locked: Set<AccountID> = []
            defer { for held in protections.values { held.cache?.giveBack(held.protection.setAside) } }
            var failure: (any Error)?
            do {
                while case let members = group.openCaches(), case let current = total(members), current > target {
                    var candidates: [Candidate] = []
                    for member in members {
                        let key = ObjectIdentifier(member.cache)
                        var held =
                            protections[key].flatMap { $0.cache === member.cache ? $0 : nil }
                            ?? HeldProtection(cache: member.cache)
                        guard !held.protection.reachedRecent else { continue }
                        let taken = member.cache.takeOldest(
                            Self.evictionBatchFiles, usedBefore: recentSince, protection: &held.protection)
                        protections[key] = held
                        candidates += taken.map {
                            Candidate(
                                owner: .open(member.cache, $0.id, $0.entry), lastUseMillis: $0.entry.lastUseMillis,
                                sizeBytes: $0.entry.sizeBytes, tieBreak: member.account.rawValue + "/" + $0.id.hex)
                        }
                    }
                    for (account, files) in closed.files where !locked.contains(account) {
                        candidates += files.suffix(Self.evictionBatchFiles).map {
                            Candidate(
                                owner: .closed(account, $0), lastUseMillis: $0.lastUseMillis, sizeBytes: $0.sizeBytes,
                                tieBreak: account.rawValue + "/" + $0.id.hex)
                        }
                    }
                    guard !candidates.isEmpty else { break }
                    candidates.sort { ($0.lastUseMillis, $0.tieBreak) < ($1.lastUseMillis, $1.tieBreak) }
                    var chosen = 0
                    var freed = 0
                    while chosen < candidates.count, chosen < Self.evictionBatchFiles, current - freed > target {
                        freed += candidates[chosen].sizeBytes
                        chosen += 1
                    }
                    // Each open cache's share, in the order the members came.
                    var fromOpen: [(cache: FileCache, items: [(id: FileID, entry: FileIndex.Entry)])] = []
                    var giveBack: [(cache: FileCache, items: [(id: FileID, entry: FileIndex.Entry)])] = []
                    func add(
                        _ item: (id: FileID, entry: FileIndex.Entry), of cache: FileCache,
                        to shares: inout [(cache: FileCache, items: [(id: FileID, entry: FileIndex.Entry)])]
                    ) {
                        if let index = shares.firstIndex(where: { $0.cache === cache }) {
                            shares[index].items.append(item)
                        } else {
                            shares.append((cache, [item]))
                        }
                    }
                    var fromClosed: [AccountID: [AccountCacheGroup.ClosedFile]] = [:]
                    for (rank, candidate) in candidates.enumerated() {
                        switch candidate.owner {
                        case .open(let cache, let id, let entry):
                            if rank < chosen {
                                add((id, entry), of: cache, to: &fromOpen)
                            } else {
                                add((id, entry), of: cache, to: &giveBack)
                            }
                        case .closed(let account, let file):
                            if rank < chosen { fromClosed[account, default: []].append(file) }
                        }
                    }
                    for share in giveBack { share.cache.giveBack(share.items) }
                    // Each open cache's share in its own gate; one that fails gives back what it
                    // did not delete, the others' shares go back too (the pass then ends).
                    var openFailure: (any Error)?
                    for share in fromOpen {
                        if openFailure != nil {
                            share.cache.giveBack(share.items)
                            continue
                        }
                        do { try await share.cache.evictTaken(share.items) } catch { openFailure = error }
                    }
                    if let openFailure { throw openFailure }
                    for (account, files) in fromClosed {
                        do {
                            switch try await group.deleteClosedFiles(files, of: account, on: work) {
                            case .deleted:
                                closed.remove(files, of: account)
                                group.forget(files, of: account, countedAt: closed.generation)
                            case .locked:
                                locked.insert(account)
                            }
                        } catch {
                            // Some files may be gone with their records still there: count again.
                            group.recountClosedAccounts()
                            throw error
                        }
                    }
                }
            } catch {
                failure = error
            }
            state.withLock { $0.counters.passes += 1 }
            let members = group.openCaches()
            let overTarget = total(members) > target
            for member in members {
                let held = protections[ObjectIdentifier(member.cache)].flatMap { $0.cache === member.cache ? $0 : nil }
                member.cache.recordProtected(held?.protection ?? Protection(), overTarget: overTarget)
            }
            if let failure { throw failure }
        }
    }

    /// Takes up to `limit` of the least recently used files off the order for a pass across
    /// accounts; leased files, and the first file used at `recentSince` or later (every file
    /// after it is newer), go to `protection`. The caller gives back what it does not evict
    /// (``giveBack(_:)``) or evicts it (``evictTaken(_:)``).
    private func takeOldest(
        _ limit: Int, usedBefore recentSince: Int64, protection: inout Protection
    ) -> [(id: FileID, entry: FileIndex.Entry)] {
        state.withLock { state in
            var taken: [(id: FileID, entry: FileIndex.Entry)] = []
            while taken.count < limit, let oldest = state.index.popLeastRecentlyUsed() {
                if oldest.entry.lastUseMillis > recentSince {
                    protection.setAside.append(oldest)
                    protection.reachedRecent = true
                    break
                }
                if state.index.isLeased(oldest.id) {
                    protection.setAside.append(oldest)
                    continue
                }
                taken.append(oldest)
            }
            return taken
        }
    }

    /// Puts files taken off the order, and not evicted, back in it.
    private func giveBack(_ taken: [(id: FileID, entry: FileIndex.Entry)]) {
        guard !taken.isEmpty else { return }
        state.withLock { state in for item in taken { state.index.restore(item.id, item.entry) } }
    }

    /// Evicts files taken off the order by ``takeOldest(_:usedBefore:protection:)``, in the gate:
    /// each one still as it was taken (not used, leased, replaced or removed since) leaves the
    /// index and goes as in a pass of the cache's own; the others go back in the order.
    private func evictTaken(_ taken: [(id: FileID, entry: FileIndex.Entry)]) async throws {
        var entered = false
        do {
            try await gate.withGate { gated in
                entered = true
                let victims = state.withLock { state in
                    var victims: [(id: FileID, entry: FileIndex.Entry)] = []
                    for item in taken {
                        guard let current = state.index.entries[item.id], current.generation == item.entry.generation,
                            current.lastUseMillis == item.entry.lastUseMillis, !state.index.isLeased(item.id)
                        else {
                            state.index.restore(item.id, item.entry)
                            continue
                        }
                        // The current entry: its recorded use may have been written since.
                        state.index.remove(item.id)
                        victims.append((item.id, current))
                    }
                    return victims
                }
                try await deleteEvicted(gated, victims)
            }
        } catch {
            if !entered { giveBack(taken) }
            throw error
        }
    }

    /// A pass across accounts ended: what it kept of this cache because it was protected, as
    /// ``FileCacheStatistics/protectedBytes`` counts it in a pass of the cache's own.
    private func recordProtected(_ protection: Protection, overTarget: Bool) {
        state.withLock { state in
            let index = state.index
            state.counters.protectedBytes =
                protection.reachedRecent && overTarget
                ? index.totalBytes - index.leftoverBytes
                : protection.setAside.reduce(0) { $0 + (index.entries[$1.id]?.sizeBytes ?? 0) }
        }
    }
}
