import Foundation
import Sovaria
import SovariaQueue

extension SovariaOffline {
    // MARK: - Accounts

    /// Signs this account out of the device: forgets its cached answers, tables, feed
    /// checkpoints and what memory holds of them at once, and closes the controller. With
    /// `keepingUnsyncedWrites: true` its queue and rejected list stay in the store for its next
    /// sign-in, which flushes them as usual (with that account's token); with `false` they go too.
    ///
    /// ```swift
    /// try await offline.signOut(keepingUnsyncedWrites: true)   // an edit made offline is not lost
    /// configuration.account = try AccountID(nextUser.id)
    /// offline = try await SovariaOffline(store: store, transport: transport, configuration: configuration)
    /// ```
    ///
    /// A running flush ends first; no write is sent or queued meanwhile. The space is given back
    /// (`compact()`). What is forgotten is deleted from the store; on SQLite its pages are freed
    /// and the file shrinks at the compaction; the file store deletes its files.
    ///
    /// - Important: Kept writes are in the store as they were queued, readable by whoever holds
    ///   the store file unless the store is encrypted (<doc:AccountsAndSignOut>).
    public func signOut(keepingUnsyncedWrites: Bool) async throws {
        try checkOpen()
        await stopSyncing()
        defer { finishStreams() }
        try await writeGate.withGate { gated in
            try await forgetLocalData(keepingQueue: keepingUnsyncedWrites, gated)
        }
    }

    /// Where an account opened with ``Configuration/wrapAccountStore`` keeps a value sealed under
    /// its key, so every later open checks the key before it reads or writes anything.
    static let accountKeyCheck = "sov:meta:account-key-check"

    /// Checks that `opened` (the account's view, wrapped or not) is opened as the account's data
    /// was written: with the same key, or without one when none was ever given. The first
    /// keyed open leaves the sealed check value.
    ///
    /// - Throws: `OfflineStoreError` with code `decryptionFailed` for another key, and for no key
    ///   when the account's data is sealed; nothing is written then.
    static func checkAccountKey(
        of account: AccountID, view: any OfflineStore, opened: any OfflineStore, wrapped: Bool
    ) async throws {
        let sealed = "sovaria account key check"
        guard wrapped else {
            if try await view.data(accountKeyCheck) != nil {
                throw OfflineStoreError(
                    .decryptionFailed,
                    "Account \(account)'s data on this store is sealed under its own key: give the key in "
                        + "Configuration.wrapAccountStore.", key: accountKeyCheck)
            }
            return
        }
        // A wrong key throws decryptionFailed here, before anything is read or written.
        guard let found = try await opened.get(accountKeyCheck) else {
            try await opened.set(accountKeyCheck, sealed)
            return
        }
        guard found == sealed else {
            throw OfflineStoreError(
                .decryptionFailed,
                "Account \(account)'s key check does not match: give the key its data was sealed under.",
                key: accountKeyCheck)
        }
    }

    /// The writes waiting on `device` that are not `account`'s: every other account's queue, and
    /// the implicit account's (the store's own keys) when `account` is one.
    static func pendingWritesOfOtherAccounts(
        on device: any OfflineStore, except account: AccountID?
    ) async throws -> Int {
        var count = account == nil ? 0 : try await WriteQueue.pendingCount(in: device)
        for other in try await AccountScopedStore.accounts(in: device) where other != account {
            count += try await WriteQueue.pendingCount(in: AccountScopedStore(wrapping: device, account: other))
        }
        return count
    }
}
