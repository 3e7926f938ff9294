import Sovaria
import SovariaCache
import Synchronization

/// The accounts a controller acts for on each store of this process: one controller per account
/// and store, so two never flush one queue or move one checkpoint.
///
/// A ``Hold`` is released by ``SovariaOffline/close()``, ``SovariaOffline/signOut(keepingUnsyncedWrites:)``
/// or when it is freed (a controller dropped without closing, an open that failed halfway).
final class OpenAccounts: Sendable {
    static let shared = OpenAccounts()

    fileprivate struct Key: Hashable {
        let store: ObjectIdentifier
        let account: AccountID
    }

    /// One controller's claim on an account of a store. It keeps the store alive, so no other
    /// store can take its identity while the claim stands.
    final class Hold: Sendable {
        fileprivate let key: Key
        private let store: any OfflineStore
        private let owner: OpenAccounts

        fileprivate init(key: Key, store: any OfflineStore, owner: OpenAccounts) {
            self.key = key
            self.store = store
            self.owner = owner
        }

        deinit { owner.release(key, by: ObjectIdentifier(self)) }
    }

    /// Each held account: the identity of the hold that has it, and its controller's cache once
    /// the open has made it (the device's cache budget evicts another open account's answers
    /// through it, so its index and memory stay true).
    private let held = Mutex<[Key: (holder: ObjectIdentifier, cache: QueryCache?)]>([:])
    /// Moved by every claim and every release, on any store: what was counted of accounts that
    /// were closed may be out of date once it moves.
    private let moves = Atomic<Int>(0)

    /// How many claims and releases there have been in this process.
    var generation: Int { moves.load(ordering: .acquiring) }

    /// Claims `account` of `store`.
    ///
    /// - Throws: ``SovariaOfflineError`` with ``SovariaOfflineError/Code/accountInUse`` when
    ///   another open controller acts for it.
    func hold(_ account: AccountID, of store: any OfflineStore) throws -> Hold {
        let key = Key(store: ObjectIdentifier(store), account: account)
        let hold = Hold(key: key, store: store, owner: self)
        let taken = held.withLock { held in
            guard held[key] == nil else { return true }
            held[key] = (ObjectIdentifier(hold), nil)
            moves.add(1, ordering: .releasing)
            return false
        }
        guard !taken else {
            throw SovariaOfflineError(
                .accountInUse,
                "A controller for account \(account) is open on this store: close it (or sign out) before opening "
                    + "another; two would send one queue twice.")
        }
        return hold
    }

    /// Records the cache of the controller that has `hold`.
    func attach(_ cache: QueryCache, to hold: Hold) {
        held.withLock { held in
            if held[hold.key]?.holder == ObjectIdentifier(hold) { held[hold.key]?.cache = cache }
        }
    }

    /// The cache of the open controller acting for `account` on `store`, if one is open.
    func cache(of account: AccountID, on store: any OfflineStore) -> QueryCache? {
        held.withLock { $0[Key(store: ObjectIdentifier(store), account: account)]?.cache }
    }

    /// The caches of the controllers open on `store`.
    func caches(on store: any OfflineStore) -> [QueryCache] {
        held.withLock { held in held.compactMap { $0.key.store == ObjectIdentifier(store) ? $0.value.cache : nil } }
    }

    /// Whether more than one controller is open on `store`.
    func isShared(_ store: any OfflineStore) -> Bool {
        held.withLock { held in held.keys.count { $0.store == ObjectIdentifier(store) } > 1 }
    }

    /// Ends `hold`'s claim (nothing when it was ended already).
    func release(_ hold: Hold?) {
        guard let hold else { return }
        release(hold.key, by: ObjectIdentifier(hold))
    }

    private func release(_ key: Key, by holder: ObjectIdentifier) {
        held.withLock { held in
            guard held[key]?.holder == holder else { return }
            held[key] = nil
            moves.add(1, ordering: .releasing)
        }
    }
}
