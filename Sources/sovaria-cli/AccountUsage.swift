import Sovaria
import SovariaSodium

/// What the accounts of a store hold, for `sovaria inspect`: entries and bytes of each kind per
/// account, from key names and stored sizes alone, never a key's or a value's content.
///
/// An account's keys are `sov:account:<id>/` + the key a single-user store would have
/// (``AccountScopedStore``); the keys under `sov:` outside that are the implicit account's (a
/// controller without an account), but for the device's own records (``isDeviceKey(_:)``). Keys
/// outside `sov:` (an app's own) and keys under `sov:account:` that are no account's belong to none.
struct AccountUsage {
    /// What a key of an account is, by the key its account's view hands out.
    enum Kind: Int, CaseIterable {
        /// A cached answer of the query cache: `sov:cache:l2:`.
        case cached
        /// A queued write: `sov:queue:`.
        case queued
        /// A rejected write: `sov:rejected:`.
        case rejected
        /// Anything else the account keeps: the cache's and queue's own records, feed checkpoints.
        case other

        /// The name in `inspect`'s output.
        var name: String {
            switch self {
            case .cached: "cached"
            case .queued: "queued"
            case .rejected: "rejected"
            case .other: "other"
            }
        }

        /// The kind of `key`, a key as the account's view hands it out.
        init(key: String) {
            if StoreKey.hasBytePrefix(key, "sov:cache:l2:") {
                self = .cached
            } else if StoreKey.hasBytePrefix(key, "sov:queue:") {
                self = .queued
            } else if StoreKey.hasBytePrefix(key, "sov:rejected:") {
                self = .rejected
            } else {
                self = .other
            }
        }
    }

    /// Whether `key` is one of the device's own records, not the implicit account's: the encryption
    /// layer's salt and limits, a migrate's checkpoint.
    static func isDeviceKey(_ key: String) -> Bool {
        key.utf8.elementsEqual(EncryptedOfflineStore.metadataKey.utf8)
            || StoreKey.hasBytePrefix(key, "sov:meta:migrate:")
    }

    /// The account, `nil` for the implicit one.
    let account: AccountID?
    /// Entries per ``Kind``, by its raw value.
    private(set) var entries = [Int](repeating: 0, count: Kind.allCases.count)
    /// Bytes per ``Kind`` (each entry's stored key and stored value, as `inspect`'s areas count).
    private(set) var bytes = [Int](repeating: 0, count: Kind.allCases.count)

    var isEmpty: Bool { entries.allSatisfy { $0 == 0 } }

    func entries(_ kind: Kind) -> Int { entries[kind.rawValue] }
    func bytes(_ kind: Kind) -> Int { bytes[kind.rawValue] }

    /// Counts one entry of `kind` that takes `storedBytes`.
    mutating func add(_ kind: Kind, storedBytes: Int) {
        entries[kind.rawValue] += 1
        bytes[kind.rawValue] += storedBytes
    }
}

/// Every account's ``AccountUsage``, counted one entry at a time as a scan goes by.
struct AccountTally {
    private(set) var implicit = AccountUsage(account: nil)
    private var named: [AccountID: AccountUsage] = [:]

    /// Counts the entry stored under `key`, which takes `storedBytes` (key and value as stored).
    mutating func add(key: String, storedBytes: Int) {
        if let owner = AccountScopedStore.owner(ofStoreKey: key) {
            named[owner.account, default: AccountUsage(account: owner.account)]
                .add(AccountUsage.Kind(key: owner.key), storedBytes: storedBytes)
        } else if StoreKey.hasBytePrefix(key, "sov:"), !StoreKey.hasBytePrefix(key, AccountScopedStore.keyPrefix),
            !AccountUsage.isDeviceKey(key)
        {
            implicit.add(AccountUsage.Kind(key: key), storedBytes: storedBytes)
        }
    }

    /// The implicit account when it holds anything, then every named account ascending by its id's
    /// bytes (the order of ``AccountScopedStore/accounts(in:)``).
    var accounts: [AccountUsage] {
        let sorted = named.values.sorted {
            ($0.account?.rawValue ?? "").utf8.lexicographicallyPrecedes(($1.account?.rawValue ?? "").utf8)
        }
        return (implicit.isEmpty ? [] : [implicit]) + sorted
    }

    /// Queued writes on the device, every account's.
    var queuedWrites: Int { implicit.entries(.queued) + named.values.reduce(0) { $0 + $1.entries(.queued) } }
}
