import Sovaria
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

    /// Each held account and the identity of the hold that has it.
    private let held = Mutex<[Key: ObjectIdentifier]>([:])

    /// Claims `account` of `store`.
    ///
    /// - Throws: ``SovariaOfflineError`` with ``SovariaOfflineError/Code/accountInUse`` when
    ///   another open controller acts for it.
    func hold(_ account: AccountID, of store: any OfflineStore) throws -> Hold {
        let key = Key(store: ObjectIdentifier(store), account: account)
        let hold = Hold(key: key, store: store, owner: self)
        let taken = held.withLock { held in
            guard held[key] == nil else { return true }
            held[key] = ObjectIdentifier(hold)
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

    /// Ends `hold`'s claim (nothing when it was ended already).
    func release(_ hold: Hold?) {
        guard let hold else { return }
        release(hold.key, by: ObjectIdentifier(hold))
    }

    private func release(_ key: Key, by holder: ObjectIdentifier) {
        held.withLock { held in
            if held[key] == holder { held[key] = nil }
        }
    }
}
