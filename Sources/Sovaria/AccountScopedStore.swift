import Foundation

/// One account's part of a store: a view that keeps every key `k` under
/// `sov:account:<id>/` + `k` in the store it wraps, and hands it back as `k`.
///
/// Code written once against ``OfflineStore`` (the query cache, the write queue, the change feed)
/// runs unchanged over a view and sees only its account's entries, so two accounts share one store
/// and see nothing of each other. ``accounts(in:)`` lists the accounts a store holds.
///
/// ```swift
/// let device = try SQLiteOfflineStore(fileURL: url)
/// let ada = AccountScopedStore(wrapping: device, account: try AccountID("ada@example.com"))
/// try await ada.set("sov:queue:0001", json)    // stored as "sov:account:ada@example.com/sov:queue:0001"
/// try await ada.keys("sov:queue:")             // ["sov:queue:0001"]
/// ```
///
/// - Important: Every call passes through to the wrapped store with the prefix added to its keys
///   and removed from the keys it returns: byte order, prefix scans, atomic batches, durability,
///   persistence, the borrowed (zero-copy) scans and the wrapped store's errors are the wrapped
///   store's, an error's ``OfflineStoreError/key`` the view's key. ``compact()`` compacts the
///   whole wrapped store. Safe from any number of tasks.
/// - Important: The prefix takes part of the 511 bytes a key may have: a view takes keys of 1 to
///   ``maxKeyUTF8Count`` bytes (511 less its prefix), and ``maxKeyUTF8CountForAnyAccount`` (434)
///   for every account. A longer key throws ``OfflineStoreError/Code/invalidKey`` and changes
///   nothing.
/// - Important: A view separates accounts, it does not hide them from each other: the wrapped
///   store holds every account's keys and values as they are. Wrap the view in an
///   `EncryptedOfflineStore` (SovariaSodium) with a key per account to make them unreadable
///   without it.
public final class AccountScopedStore: OfflineStore {
    /// The part of the key space every account's keys live under: `"sov:account:"`.
    public static let keyPrefix = "sov:account:"

    /// The longest key, in UTF-8 bytes, a view of any account takes: 511 less the longest prefix
    /// (`sov:account:` + a 64-byte id + `/`). Keys that fit stay valid whoever signs in.
    public static let maxKeyUTF8CountForAnyAccount =
        StoreKey.maxUTF8Count - keyPrefix.utf8.count - AccountID.maxUTF8Count - 1

    /// The store that holds every account's entries.
    public let wrapped: any OfflineStore

    /// The account this view reads and writes.
    public let account: AccountID

    /// The prefix this view adds to every key: `sov:account:<id>/`.
    public let accountPrefix: String

    /// The longest key, in UTF-8 bytes, this view takes: 511 less its ``accountPrefix``.
    public let maxKeyUTF8Count: Int

    /// The prefix's UTF-8 byte count.
    private let prefixCount: Int

    /// The entries of `account` in `store`.
    public init(wrapping store: any OfflineStore, account: AccountID) {
        wrapped = store
        self.account = account
        accountPrefix = Self.accountPrefix(of: account)
        prefixCount = accountPrefix.utf8.count
        maxKeyUTF8Count = StoreKey.maxUTF8Count - prefixCount
    }

    /// The prefix the keys of `account` have in the wrapped store: `sov:account:<id>/`.
    public static func accountPrefix(of account: AccountID) -> String {
        keyPrefix + account.rawValue + "/"
    }

    /// The wrapped store's capabilities.
    public var capabilities: StoreCapabilities { wrapped.capabilities }

    /// The value stored under `key` in this account, or `nil`.
    public func get(_ key: String) async throws -> String? {
        let scoped = try scope(key)
        do { return try await wrapped.get(scoped) } catch { throw unscope(error) }
    }

    /// The bytes stored under `key` in this account, or `nil`.
    public func data(_ key: String) async throws -> Data? {
        let scoped = try scope(key)
        do { return try await wrapped.data(scoped) } catch { throw unscope(error) }
    }

    /// The wrapped store's borrowed read of `key` in this account: no copy.
    public func withValue<Result>(
        _ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) async throws -> Result? {
        let scoped = try scope(key)
        var bodyError: (any Error)?
        do {
            return try await wrapped.withValue(scoped) { value in
                do { return try body(value) } catch {
                    bodyError = error
                    throw error
                }
            }
        } catch {
            throw bodyError ?? unscope(error)
        }
    }

    /// Stores `value` under `key` in this account.
    public func set(_ key: String, _ value: String) async throws {
        let scoped = try scope(key)
        do { try await wrapped.set(scoped, value) } catch { throw unscope(error) }
    }

    /// Stores the bytes `data` under `key` in this account.
    public func set(_ key: String, data: Data) async throws {
        let scoped = try scope(key)
        do { try await wrapped.set(scoped, data: data) } catch { throw unscope(error) }
    }

    /// Removes `key` from this account.
    public func delete(_ key: String) async throws {
        let scoped = try scope(key)
        do { try await wrapped.delete(scoped) } catch { throw unscope(error) }
    }

    /// Checks every key, then hands the batch to the wrapped store as one batch, so it is as
    /// atomic there as any other.
    public func write(_ batch: [StoreWrite]) async throws {
        var scoped: [StoreWrite] = []
        scoped.reserveCapacity(batch.count)
        for write in batch {
            switch write {
            case .set(let key, let value): scoped.append(.set(key: try scope(key), value: value))
            case .setData(let key, let data): scoped.append(.setData(key: try scope(key), data: data))
            case .delete(let key): scoped.append(.delete(key: try scope(key)))
            }
        }
        do { try await wrapped.write(scoped) } catch { throw unscope(error) }
    }

    /// This account's keys that start with `prefix`, in byte order.
    public func keys(_ prefix: String) async throws -> [String] {
        do {
            return try await wrapped.keys(accountPrefix + prefix).map(unscope)
        } catch { throw unscope(error) }
    }

    /// A page of this account's entries, from the wrapped store's page.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        do {
            return try await wrapped.entries(
                accountPrefix + prefix, after: after.map { accountPrefix + $0 }, limit: limit
            )
            .map { StoreEntry(key: unscope($0.key), value: $0.value) }
        } catch { throw unscope(error) }
    }

    /// A page of this account's entries as bytes, from the wrapped store's page.
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        do {
            return try await wrapped.dataEntries(
                accountPrefix + prefix, after: after.map { accountPrefix + $0 }, limit: limit
            ).map { StoreDataEntry(key: unscope($0.key), data: $0.data) }
        } catch { throw unscope(error) }
    }

    /// Hands `body` the wrapped store's borrowed entries with the prefix cut off their keys: no copy.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        let prefixCount = prefixCount
        var bodyError: (any Error)?
        do {
            let page = try await wrapped.withEntries(
                accountPrefix + prefix, after: after.map { accountPrefix + $0 }, limit: limit
            ) { key, value in
                do { return try body(UnsafeRawBufferPointer(rebasing: key[prefixCount...]), value) } catch {
                    bodyError = error
                    throw error
                }
            }
            return unscope(page)
        } catch {
            throw bodyError ?? unscope(error)
        }
    }

    /// Hands `body` the wrapped store's borrowed keys with the prefix cut off: no copy.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        let prefixCount = prefixCount
        var bodyError: (any Error)?
        do {
            let page = try await wrapped.withKeys(
                accountPrefix + prefix, after: after.map { accountPrefix + $0 }, limit: limit
            ) { key in
                do { return try body(UnsafeRawBufferPointer(rebasing: key[prefixCount...])) } catch {
                    bodyError = error
                    throw error
                }
            }
            return unscope(page)
        } catch {
            throw bodyError ?? unscope(error)
        }
    }

    /// Compacts the wrapped store, every account's entries included.
    public func compact() async throws {
        try await wrapped.compact()
    }
}

extension AccountScopedStore {
    /// The accounts that hold at least one key in `store`, ascending by their ids' bytes.
    ///
    /// Reads key names only, never a value. On a store with ``StoreCapabilities/orderedScan`` it
    /// reads one key per account (it seeks past each account's keys); on others it walks the keys
    /// under ``keyPrefix`` once. Keys under ``keyPrefix`` that are not an account's (no `/`, an id
    /// that is not valid) are left out.
    public static func accounts(in store: any OfflineStore) async throws -> [AccountID] {
        let prefixCount = keyPrefix.utf8.count
        let seeks = store.capabilities.contains(.orderedScan)
        var accounts: [AccountID] = []
        var after: String?
        while true {
            var seekPast: String?
            let page = try await store.withKeys(keyPrefix, after: after, limit: seeks ? 1 : .max) { key in
                let rest = UnsafeRawBufferPointer(rebasing: key[prefixCount...])
                guard let slash = rest.firstIndex(of: UInt8(ascii: "/")) else {
                    seekPast = nil
                    return true
                }
                let id = UnsafeRawBufferPointer(rebasing: rest[..<slash])
                // Every key of one account sorts before "sov:account:<id>0" ("0" follows "/").
                seekPast = keyPrefix + String(decoding: id, as: UTF8.self) + "0"
                if AccountID.isValid(id), accounts.last.map({ !$0.rawValue.utf8.elementsEqual(id) }) ?? true {
                    accounts.append(AccountID(validated: String(decoding: id, as: UTF8.self)))
                }
                return true
            }
            guard page.mayHaveMore, let lastKey = page.lastKey else { break }
            after = seekPast ?? lastKey
        }
        return accounts.sorted { $0.rawValue.utf8.lexicographicallyPrecedes($1.rawValue.utf8) }
    }

    /// `prefix + key`, after checking that `key` has 1 to ``maxKeyUTF8Count`` bytes.
    private func scope(_ key: String) throws(OfflineStoreError) -> String {
        let count = key.utf8.count
        guard count >= 1, count <= maxKeyUTF8Count else {
            throw OfflineStoreError(
                .invalidKey,
                "A key of an account's store must have 1 to \(maxKeyUTF8Count) UTF-8 bytes (the account prefix "
                    + "takes \(prefixCount) of the \(StoreKey.maxUTF8Count) a store key may have), this one has "
                    + "\(count): shorten it, or hash it and keep the full identity in the value.",
                key: key
            )
        }
        return accountPrefix + key
    }

    /// `key` without the account prefix the wrapped store returned it with.
    private func unscope(_ key: String) -> String {
        String(decoding: key.utf8.dropFirst(prefixCount), as: UTF8.self)
    }

    /// `page` with its last key unscoped.
    private func unscope(_ page: StoreScanPage) -> StoreScanPage {
        StoreScanPage(count: page.count, lastKey: page.lastKey.map(unscope), mayHaveMore: page.mayHaveMore)
    }

    /// The wrapped store's `error`, naming the view's key where it named a scoped one.
    private func unscope(_ error: any Error) -> any Error {
        guard var storeError = error as? OfflineStoreError, let key = storeError.key,
            StoreKey.hasBytePrefix(key, accountPrefix)
        else { return error }
        storeError.key = unscope(key)
        return storeError
    }
}
