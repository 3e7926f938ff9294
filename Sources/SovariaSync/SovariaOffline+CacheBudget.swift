import Foundation
import Sovaria
import SovariaCache

extension SovariaOffline {
    // MARK: - One cache budget per device

    /// The other accounts' cached answers on the device, as the last look at the store counted
    /// them: what this controller's answers share the budget with.
    struct OtherAccountsCache {
        /// ``OpenAccounts/generation`` when they were counted: once an account opens or closes
        /// anywhere, they are counted again.
        var generation: Int
        /// Each other account's answers (`nil`: the implicit account's).
        var byOwner: [AccountID?: (count: Int, bytes: Int)]
    }

    /// One cached answer of some account, as its store key names it.
    private struct DeviceResponse {
        /// Its account; `nil` for the implicit one (the store's own keys).
        let owner: AccountID?
        /// The key in the store the controller was opened on.
        let deviceKey: String
        let serverTimeMillis: Int64
        let sizeBytes: Int
    }

    /// Keeps every account's cached answers on the device within one budget,
    /// ``Configuration/cacheSize`` and ``Configuration/maxCached``, evicted in seed 000's order
    /// across accounts: the answer the server sent longest ago goes first, whoever owns it.
    /// Queues and rejected lists are never evicted.
    ///
    /// This account's answers, and those of another account with a controller open on the same
    /// store object, are evicted through that controller's cache (a live reader's answers stay);
    /// a closed account's are deleted from the store by key. Cheap when within the budget: the
    /// closed accounts' answers are counted from the store's keys once, and again only after an
    /// account opens or closes; open caches keep their totals in memory.
    func keepDeviceCacheBudget() async throws {
        let generation = OpenAccounts.shared.generation
        var counted = state.withLock { $0.otherAccountsCache }
        if counted?.generation != generation {
            var byOwner: [AccountID?: (count: Int, bytes: Int)] = [:]
            for response in try await deviceResponses(includingOwn: false) {
                byOwner[response.owner, default: (0, 0)].count += 1
                byOwner[response.owner, default: (0, 0)].bytes += response.sizeBytes
            }
            counted = OtherAccountsCache(generation: generation, byOwner: byOwner)
            state.withLock { $0.otherAccountsCache = counted }
        }
        // Alone on the device, this account's cache keeps the bound by itself.
        guard let counted, !counted.byOwner.isEmpty || OpenAccounts.shared.isShared(deviceStore) else { return }
        // An account open on this store counts as its cache says now; a closed one as counted.
        var others = (count: 0, bytes: 0)
        for (owner, total) in counted.byOwner where owner.flatMap(openCache(of:)) == nil {
            others.count += total.count
            others.bytes += total.bytes
        }
        for other in OpenAccounts.shared.caches(on: deviceStore) where other !== cache {
            others.count += try await other.responseCount
            others.bytes += try await other.totalBytes
        }
        let byteBound = configuration.cacheSize.effectiveBytes ?? .max
        let (count, bytes) = (try await cache.responseCount, try await cache.totalBytes)
        guard count + others.count > configuration.maxCached || bytes > byteBound - others.bytes else { return }
        try await evictAcrossAccounts(byteBound: byteBound)
    }

    /// Walks every account's cached answers oldest first, evicting until the device is within
    /// both bounds: down to `maxCached`, and to the size's eviction target when over its bound.
    private func evictAcrossAccounts(byteBound: Int) async throws {
        let responses = try await deviceResponses(includingOwn: true).sorted {
            ($0.serverTimeMillis, $0.deviceKey) < ($1.serverTimeMillis, $1.deviceKey)
        }
        var count = responses.count
        var bytes = responses.reduce(0) { $0 + $1.sizeBytes }
        let byteTarget = bytes > byteBound ? configuration.cacheSize.evictionTargetBytes ?? .max : .max
        let maxCount = max(configuration.maxCached, 0)
        // Evicted through a cache: this account's, and those of accounts open on this store.
        var throughCaches: [AccountID?: Int] = [:]
        var deletes: [String] = []
        var evictedOthers: [AccountID?: (count: Int, bytes: Int)] = [:]
        for response in responses {
            guard count > maxCount || bytes > byteTarget else { break }
            count -= 1
            bytes -= response.sizeBytes
            if response.owner == configuration.account || response.owner.map({ openCache(of: $0) != nil }) ?? false {
                throughCaches[response.owner, default: 0] += 1
            } else {
                deletes.append(response.deviceKey)
            }
            if response.owner != configuration.account {
                evictedOthers[response.owner, default: (0, 0)].count += 1
                evictedOthers[response.owner, default: (0, 0)].bytes += response.sizeBytes
            }
        }
        for start in stride(from: 0, to: deletes.count, by: 100) {
            try await deviceStore.write(deletes[start..<min(deletes.count, start + 100)].map { .delete(key: $0) })
        }
        for (owner, evicted) in throughCaches {
            let holder = owner == configuration.account ? cache : owner.flatMap(openCache(of:))
            try await holder?.evictOldest(evicted)
        }
        state.withLock { state in
            for (owner, evicted) in evictedOthers {
                state.otherAccountsCache?.byOwner[owner]?.count -= evicted.count
                state.otherAccountsCache?.byOwner[owner]?.bytes -= evicted.bytes
            }
        }
        if !deletes.isEmpty || !throughCaches.isEmpty { signals.changed(table: nil) }
    }

    /// The cache of another controller open on the same store for `account`.
    private func openCache(of account: AccountID) -> QueryCache? {
        OpenAccounts.shared.cache(of: account, on: deviceStore)
    }

    /// Every account's cached answers on the device, from key names alone (so an account sealed
    /// under its own key is counted without it); this controller's own with `includingOwn`.
    private func deviceResponses(includingOwn: Bool) async throws -> [DeviceResponse] {
        var owners: [AccountID?] = try await AccountScopedStore.accounts(in: deviceStore)
        owners.append(nil)
        var responses: [DeviceResponse] = []
        for owner in owners where includingOwn || owner != configuration.account {
            let prefix = owner.map(AccountScopedStore.accountPrefix(of:)) ?? ""
            for key in try await deviceStore.keys(prefix + StoredResponse.keyPrefix) {
                // The prefix is ASCII: as many characters as bytes.
                guard let stored = StoredResponse(key: String(key.dropFirst(prefix.count))) else { continue }
                responses.append(
                    DeviceResponse(
                        owner: owner, deviceKey: key,
                        serverTimeMillis: Int64((stored.serverTime.timeIntervalSince1970 * 1_000).rounded()),
                        sizeBytes: stored.sizeBytes))
            }
        }
        return responses
    }
}
