import CSodium
import Foundation
import Sovaria
import SovariaPlumbing

/// Encrypts every value before it reaches another store, so the files on disk hold no readable
/// value; keys stay in plain text.
///
/// Each value is sealed with XChaCha20-Poly1305 (IETF AEAD, libsodium) under a fresh random
/// 24-byte nonce, with the form's version and the key name bound as associated data. Over an
/// inner store that takes bytes (`StoreCapabilities.byteValues`: every engine in Sovaria), the
/// inner store keeps the bytes `0x02 ‖ nonce ‖ ciphertext ‖ 16-byte tag`: a value of n bytes
/// takes n + 41. Over a store that keeps text only, it keeps the string `"v1:"` followed by the
/// unpadded URL-safe base64 of `nonce ‖ ciphertext ‖ tag`, `3 + ceil(4 × (n + 40) / 3)` bytes
/// (about 1.33 × n + 57). Both forms are read over any inner store, and either carries any
/// value, bytes that are not UTF-8 included.
///
/// A value that does not open — a wrong key, a value copied under another key, one changed
/// character, a value cut short, a value written without encryption — throws
/// `OfflineStoreError` with code `OfflineStoreError.Code.decryptionFailed` naming its key,
/// never garbage; every other key is still served.
///
/// - Important: **Key names are not encrypted.** Someone with a copy of the files learns every
///   key name, the exact byte length of every value, how many values there are, and when and
///   how often each is written (and, for passphrase keys, the Argon2id salt and limits). They
///   learn nothing of the values, and cannot change a value or move it under another key
///   without the read failing. They can delete keys, or put an older value back under its own
///   key (a rollback), unnoticed. Keep secrets out of key names.
/// - Important: Keys, their order, prefix scans, limits, atomic batches, durability and
///   persistence are the inner store's: keys pass through unchanged. Encryption runs on the
///   caller's executor (its cost per engine: `docs/bench/bench.md`); only the inner store's work moves off it.
///   Safe from any number of tasks.
/// - Important: ``metadataKey`` is reserved: the wrapper never lists it, and using it throws
///   `OfflineStoreError.Code.invalidKey`.
///
/// Rotate the key by copying to a store with the new key, then deleting the old one:
///
/// ```swift
/// let key = try EncryptionKey.random()
/// let store = EncryptedOfflineStore(wrapping: FileOfflineStore(), key: key)
/// try await store.set("sov:cache:feed", json)
///
/// let rotated = EncryptedOfflineStore(wrapping: FileOfflineStore(directory: newFolder), key: newKey)
/// try await OfflineMigration.migrate(from: store, to: rotated)
/// ```
public final class EncryptedOfflineStore: OfflineStore {
    /// Where a passphrase-keyed store keeps its Argon2id salt, limits and check value, in the
    /// inner store. Hidden from ``keys(_:)`` and ``entries(_:after:limit:)``, and refused by every
    /// other method.
    public static let metadataKey = "sov:meta:encryption"

    /// The store that keeps the encrypted values.
    public let wrapped: any OfflineStore
    private let key: EncryptionKey

    /// Encrypts the values of `store` with `key`.
    ///
    /// Values already in `store` stay as they are; reading one that was not written through a
    /// wrapper with `key` throws `OfflineStoreError.Code.decryptionFailed`.
    public init(wrapping store: any OfflineStore, key: EncryptionKey) {
        wrapped = store
        self.key = key
    }

    /// Encrypts the values of `store` with a key derived from `passphrase`; see
    /// ``EncryptionKey/derive(passphrase:store:limits:)``, which this calls.
    ///
    /// - Throws: `OfflineStoreError.Code.decryptionFailed` when the passphrase is not the one
    ///   the store was created with.
    ///
    /// ```swift
    /// let store = try await EncryptedOfflineStore(wrapping: FileOfflineStore(), passphrase: passphrase)
    /// ```
    public convenience init(
        wrapping store: any OfflineStore,
        passphrase: String,
        limits: EncryptionKey.DerivationLimits = .interactive
    ) async throws {
        let key = try await EncryptionKey.derive(passphrase: passphrase, store: store, limits: limits)
        self.init(wrapping: store, key: key)
    }

    /// The inner store's capabilities, and `StoreCapabilities.byteValues`: either stored form
    /// carries any bytes.
    public var capabilities: StoreCapabilities { wrapped.capabilities.union(.byteValues) }

    /// Whether values are sealed in the byte form: the inner store takes bytes.
    private var sealsBytes: Bool { wrapped.capabilities.contains(.byteValues) }

    /// The value stored under `key`, decrypted, or `nil`.
    ///
    /// - Throws: `OfflineStoreError.Code.decryptionFailed` naming `key` when its value does not
    ///   open with this store's key; `OfflineStoreError.Code.notUTF8` when it is bytes that are
    ///   not UTF-8 (read those with ``data(_:)``).
    public func get(_ key: String) async throws -> String? {
        try Self.validate(key)
        return try await wrapped.withValue(key) { stored in
            try SealedValue.openString(stored, name: key, with: self.key)
        }
    }

    /// The bytes stored under `key`, decrypted, or `nil`.
    ///
    /// - Throws: `OfflineStoreError.Code.decryptionFailed` as ``get(_:)`` does.
    public func data(_ key: String) async throws -> Data? {
        try Self.validate(key)
        return try await wrapped.withValue(key) { stored in try SealedValue.openData(stored, name: key, with: self.key)
        }
    }

    /// Encrypts `value` under a new nonce and stores it under `key`.
    public func set(_ key: String, _ value: String) async throws {
        try Self.validate(key)
        try await wrapped.write([SealedValue.seal(.set(key: key, value: value), asBytes: sealsBytes, with: self.key)])
    }

    /// Encrypts the bytes `data` under a new nonce and stores them under `key`.
    public func set(_ key: String, data: Data) async throws {
        try Self.validate(key)
        try await wrapped.write([SealedValue.seal(.setData(key: key, data: data), asBytes: sealsBytes, with: self.key)])
    }

    /// Removes `key`.
    public func delete(_ key: String) async throws {
        try Self.validate(key)
        try await wrapped.delete(key)
    }

    /// Encrypts the values of `batch` and hands it to the inner store as one batch.
    public func write(_ batch: [StoreWrite]) async throws {
        for write in batch { try Self.validate(write.key) }
        let asBytes = sealsBytes
        try await wrapped.write(batch.map { SealedValue.seal($0, asBytes: asBytes, with: key) })
    }

    /// The inner store's keys that start with `prefix`, in byte order, without ``metadataKey``.
    public func keys(_ prefix: String) async throws -> [String] {
        var keys = try await wrapped.keys(prefix)
        if StoreKey.hasBytePrefix(Self.metadataKey, prefix) { keys.removeAll(where: Self.isMetadataKey) }
        return keys
    }

    /// A page of the inner store's entries, decrypted, without ``metadataKey``.
    ///
    /// - Throws: `OfflineStoreError.Code.decryptionFailed` naming the first key in the page
    ///   whose value does not open.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try await page(prefix, after: after, limit: limit) { (stored, name) throws(OfflineStoreError) in
            StoreEntry(key: name, value: try SealedValue.openString(stored, name: name, with: key))
        }
    }

    /// A page of the inner store's entries, decrypted into bytes, without ``metadataKey``.
    ///
    /// - Throws: as ``entries(_:after:limit:)``.
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        try await page(prefix, after: after, limit: limit) { (stored, name) throws(OfflineStoreError) in
            StoreDataEntry(key: name, data: try SealedValue.openData(stored, name: name, with: key))
        }
    }

    private func page<Entry>(
        _ prefix: String, after: String?, limit: Int,
        _ open: (UnsafeRawBufferPointer, String) throws(OfflineStoreError) -> Entry
    ) async throws -> [Entry] {
        guard limit > 0 else { return [] }
        var page: [Entry] = []
        var after = after
        while true {
            let wanted = limit - page.count
            let stored = try await wrapped.dataEntries(prefix, after: after, limit: wanted)
            for entry in stored where !Self.isMetadataKey(entry.key) {
                page.append(
                    try entry.data.withBytes { (bytes) throws(OfflineStoreError) in try open(bytes, entry.key) })
            }
            // Only a skipped metadata entry leaves a full inner page short: read one more.
            guard stored.count == wanted, page.count < limit, let last = stored.last else { return page }
            after = last.key
        }
    }

    /// Hands `body` each entry of the inner store's borrowed scan decrypted into one scratch
    /// buffer, reused from entry to entry and zeroed after each, without ``metadataKey``.
    ///
    /// - Throws: `OfflineStoreError.Code.decryptionFailed` naming the first key whose value does
    ///   not open; the entries before it were handed to `body`.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        guard limit > 0 else { return .empty }
        var scratch: [UInt8] = []
        defer { scratch.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, $0.count) } }
        var pages = MetadataSkippingPages(limit: limit, after: after)
        while pages.finished == nil {
            let inner = try await wrapped.withEntries(prefix, after: pages.after, limit: pages.remaining) {
                key, stored in
                guard pages.hands(key) else { return true }
                let count = try SealedValue.open(
                    stored, name: String(decoding: key, as: UTF8.self), with: self.key, into: &scratch)
                defer { scratch.withUnsafeMutableBytes { sodium_memzero($0.baseAddress, count) } }
                return try scratch.withUnsafeBytes { try body(key, UnsafeRawBufferPointer(rebasing: $0.prefix(count))) }
            }
            pages.innerPageEnded(inner)
        }
        return pages.finished ?? .empty
    }

    /// The inner store's borrowed keys, without ``metadataKey``.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        guard limit > 0 else { return .empty }
        var pages = MetadataSkippingPages(limit: limit, after: after)
        while pages.finished == nil {
            let inner = try await wrapped.withKeys(prefix, after: pages.after, limit: pages.remaining) { key in
                guard pages.hands(key) else { return true }
                return try body(key)
            }
            pages.innerPageEnded(inner)
        }
        return pages.finished ?? .empty
    }

    /// The pages of the inner store's borrowed scan that make one page of this store's: the
    /// metadata entry is never handed over, and a full inner page it left short of `limit` is
    /// followed by another.
    private struct MetadataSkippingPages {
        let limit: Int
        /// Where the next inner page starts.
        private(set) var after: String?
        /// The page, once the inner pages have made it.
        private(set) var finished: StoreScanPage?
        private var handed = 0
        private var lastKey: [UInt8] = []

        init(limit: Int, after: String?) {
            self.limit = limit
            self.after = after
        }

        /// How many entries the next inner page may hold.
        var remaining: Int { limit - handed }

        /// Whether `key` goes to the body (it is not the metadata key); counts it if so.
        mutating func hands(_ key: UnsafeRawBufferPointer) -> Bool {
            guard !key.elementsEqual(EncryptedOfflineStore.metadataKey.utf8) else { return false }
            handed += 1
            lastKey.removeAll(keepingCapacity: true)
            lastKey.append(contentsOf: key)
            return true
        }

        /// Ends the page, or sets where the next inner page starts when a skipped metadata entry
        /// left a full inner page short.
        mutating func innerPageEnded(_ inner: StoreScanPage) {
            if inner.mayHaveMore, handed < limit, let last = inner.lastKey {
                after = last
                return
            }
            finished = StoreScanPage(
                count: handed, lastKey: handed == 0 ? nil : String(decoding: lastKey, as: UTF8.self),
                mayHaveMore: inner.mayHaveMore && handed == limit)
        }
    }

    /// Compacts the inner store.
    public func compact() async throws {
        try await wrapped.compact()
    }

    private static func isMetadataKey(_ key: String) -> Bool {
        key.utf8.elementsEqual(metadataKey.utf8)
    }

    /// Checks `key` like every store does, and refuses ``metadataKey``.
    private static func validate(_ key: String) throws(OfflineStoreError) {
        try StoreKey.validate(key)
        guard !isMetadataKey(key) else {
            throw OfflineStoreError(
                .invalidKey,
                "\(metadataKey) is reserved by EncryptedOfflineStore for its passphrase settings: use another key.",
                engine: .sodium,
                key: key
            )
        }
    }
}
