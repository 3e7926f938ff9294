import Foundation
import SovariaPlumbing

/// Stores a checksum with every value and checks it on every read, so a damaged value throws
/// instead of being returned as good.
///
/// The inner store keeps `"c1:"`, then the 16 lowercase hexadecimal digits of the value's 64-bit
/// checksum, then `":"`, then the value's bytes unchanged — the value `"value"` under the key
/// `"sov:key"` is stored as `"c1:8181fb7fddf1216a:value"`. The checksum is XXH64 of the value's
/// bytes (a string's UTF-8 bytes) seeded with XXH64 of the key's UTF-8 bytes, so it is bound to
/// the key. `c1` is the form's version. A string is stored as a string and bytes as bytes
/// (``set(_:data:)``), so the inner store's ``capabilities`` decide whether values that are not
/// UTF-8 are taken.
///
/// What a read detects — ``get(_:)``, ``data(_:)`` and the pages of entries throw
/// ``OfflineStoreError`` with code ``OfflineStoreError/Code/corrupt``, engine `"checksum"`
/// and the key, and never return a wrong value:
/// - any changed, added or removed byte in a stored value (a random change passes with
///   probability 2⁻⁶⁴), a value cut short, a changed checksum;
/// - a value moved or copied under another key;
/// - a value written to the inner store without this wrapper (it lacks the form).
///
/// What it does not detect, since each entry is checked on its own:
/// - a key that vanished with its value (a lost file, a rolled-back page): it reads as `nil`;
/// - an older value put back under its own key (a rollback): it was valid once and still is;
/// - deliberate tampering: anyone can compute the checksum of a new value. Use
///   `EncryptedOfflineStore` (SovariaSodium), whose authenticated encryption refuses values
///   not written with its secret key; it detects everything this store does.
///
/// - Important: Cost: 20 bytes more per stored value. Each write hashes the key and the value
///   (XXH64) and copies the value once into the stored form; each read hashes them again and
///   copies the value once out of it. `sovaria-bench` measures it over each engine as `checksummed(sqlite)`,
///   `checksummed(lmdb)`, …. It runs on the caller's executor; ``keys(_:)`` and
///   ``delete(_:)`` cost nothing more.
/// - Important: Keys, their order, prefix scans, limits, atomic batches, durability and
///   persistence are the inner store's: keys pass through unchanged. ``keys(_:)`` reads no
///   value and so checks none. Safe from any number of tasks.
///
/// Wrap a store when it is opened, and read through the wrapper; move existing data into it
/// with ``OfflineMigration/migrate(from:to:prefix:batchSize:)``:
///
/// ```swift
/// let store = ChecksummedOfflineStore(wrapping: FileOfflineStore())
/// try await store.set("sov:cache:feed", json)
/// do {
///     let feed = try await store.get("sov:cache:feed")
/// } catch let error as OfflineStoreError where error.code == .corrupt {
///     try await store.delete("sov:cache:feed")  // or fetch it again, or restore a backup
/// }
/// ```
public final class ChecksummedOfflineStore: OfflineStore {
    /// The store that keeps the values with their checksums.
    public let wrapped: any OfflineStore

    /// Checks the values of `store`.
    ///
    /// Values already in `store` stay as they are; reading one that was not written through a
    /// ``ChecksummedOfflineStore`` throws ``OfflineStoreError/Code/corrupt``.
    public init(wrapping store: any OfflineStore) {
        wrapped = store
    }

    /// The inner store's capabilities.
    public var capabilities: StoreCapabilities { wrapped.capabilities }

    /// The value stored under `key`, checked, or `nil`.
    ///
    /// - Throws: ``OfflineStoreError/Code/corrupt`` naming `key` when its stored value does not
    ///   match its checksum or is not in this store's form.
    public func get(_ key: String) async throws -> String? {
        // Read as bytes: the checksum comes first, so damage is `.corrupt` even when it left bytes
        // that are not UTF-8 (which a string read of the inner store would call `.notUTF8`).
        try await wrapped.withValue(key) { stored in try StoredForm.openString(stored, key: key) }
    }

    /// The bytes stored under `key`, checked, or `nil`.
    ///
    /// - Throws: ``OfflineStoreError/Code/corrupt`` as ``get(_:)`` does.
    public func data(_ key: String) async throws -> Data? {
        try await wrapped.withValue(key) { stored in try StoredForm.openData(stored, key: key) }
    }

    /// Stores `value` with its checksum under `key`.
    public func set(_ key: String, _ value: String) async throws {
        try await wrapped.set(key, StoredForm.seal(value, key: key))
    }

    /// Stores the bytes `data` with their checksum under `key`.
    public func set(_ key: String, data: Data) async throws {
        try await wrapped.set(key, data: StoredForm.seal(data, key: key))
    }

    /// Removes `key`.
    public func delete(_ key: String) async throws {
        try await wrapped.delete(key)
    }

    /// Adds a checksum to every value of `batch` and hands it to the inner store as one batch.
    public func write(_ batch: [StoreWrite]) async throws {
        let sealed = batch.map { write in
            switch write {
            case .set(let key, let value): StoreWrite.set(key: key, value: StoredForm.seal(value, key: key))
            case .setData(let key, let data): StoreWrite.setData(key: key, data: StoredForm.seal(data, key: key))
            case .delete: write
            }
        }
        try await wrapped.write(sealed)
    }

    /// The inner store's keys that start with `prefix`, in byte order.
    public func keys(_ prefix: String) async throws -> [String] {
        try await wrapped.keys(prefix)
    }

    /// A page of the inner store's entries, each checked.
    ///
    /// - Throws: ``OfflineStoreError/Code/corrupt`` naming the first key in the page whose
    ///   stored value does not match its checksum; no part of the page is returned.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try await wrapped.dataEntries(prefix, after: after, limit: limit).map { entry in
            StoreEntry(
                key: entry.key,
                value: try entry.data.withBytes { (stored) throws(OfflineStoreError) in
                    try StoredForm.openString(stored, key: entry.key)
                })
        }
    }

    /// A page of the inner store's entries as bytes, each checked.
    ///
    /// - Throws: as ``entries(_:after:limit:)``.
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        var page = try await wrapped.dataEntries(prefix, after: after, limit: limit)
        for index in page.indices {
            let entry = page[index]
            page[index] = StoreDataEntry(
                key: entry.key,
                data: try entry.data.withBytes { (stored) throws(OfflineStoreError) in
                    try StoredForm.openData(stored, key: entry.key)
                })
        }
        return page
    }

    /// Hands `body` each entry of the inner store's borrowed scan with its value checked and its
    /// checksum header cut off: no copy.
    ///
    /// - Throws: ``OfflineStoreError/Code/corrupt`` naming the first key whose stored value does
    ///   not match its checksum; the entries before it were handed to `body`.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        try await wrapped.withEntries(prefix, after: after, limit: limit) { key, stored in
            try body(key, try StoredForm.open(stored, key: key))
        }
    }

    /// The inner store's borrowed keys, as they are.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        try await wrapped.withKeys(prefix, after: after, limit: limit, body)
    }

    /// Compacts the inner store.
    public func compact() async throws {
        try await wrapped.compact()
    }
}

extension ChecksummedOfflineStore {
    /// `"c1:" + 16 lowercase hex digits + ":" + value`, written and read over UTF-8 bytes.
    private enum StoredForm {
        /// `c1:` + 16 digits + `:`.
        static let headerCount = 20

        private static let colon = UInt8(ascii: ":")
        private static let versionTag = (UInt8(ascii: "c"), UInt8(ascii: "1"))

        /// The stored form of the bytes `data` under `key`.
        static func seal(_ data: Data, key: String) -> Data {
            let checksum = data.withUnsafeBytes { value in
                key.withUTF8Bytes { EntryChecksum.of(key: UnsafeRawBufferPointer($0), value: value) }
            }
            var stored = Data(capacity: headerCount + data.count)
            stored.append(contentsOf: [versionTag.0, versionTag.1, colon])
            for digit in 0..<16 {
                let nibble = UInt8(truncatingIfNeeded: checksum >> UInt64(60 - 4 * digit)) & 0xF
                stored.append(nibble < 10 ? 0x30 + nibble : 0x57 + nibble)  // "0"…"9", "a"…"f"
            }
            stored.append(colon)
            stored.append(data)
            return stored
        }

        /// The value `stored` holds as a string, after checking its form and its checksum against
        /// `key`; ``OfflineStoreError/Code/notUTF8`` when it is intact bytes that are not UTF-8.
        static func openString(_ stored: UnsafeRawBufferPointer, key: String) throws(OfflineStoreError) -> String {
            try check(stored.assumingMemoryBound(to: UInt8.self), key: key)
            return try StoreValue.string(
                UnsafeRawBufferPointer(rebasing: stored[headerCount...]), key: key, engine: .checksum)
        }

        /// The bytes `stored` holds, after checking its form and its checksum against `key`.
        static func openData(_ stored: UnsafeRawBufferPointer, key: String) throws(OfflineStoreError) -> Data {
            try check(stored.assumingMemoryBound(to: UInt8.self), key: key)
            return Data(UnsafeRawBufferPointer(rebasing: stored[headerCount...]))
        }

        /// The stored form of `value` under `key`: one allocation, the value copied once.
        static func seal(_ value: String, key: String) -> String {
            var key = key
            var value = value
            let checksum = key.withUTF8 { key in
                value.withUTF8 { value in
                    EntryChecksum.of(key: UnsafeRawBufferPointer(key), value: UnsafeRawBufferPointer(value))
                }
            }
            // More than 15 bytes of capacity, so the string is allocated once with room for the value.
            var stored = String(unsafeUninitializedCapacity: headerCount + value.utf8.count) { header in
                header[0] = versionTag.0
                header[1] = versionTag.1
                header[2] = colon
                for digit in 0..<16 {
                    let nibble = UInt8(truncatingIfNeeded: checksum >> UInt64(60 - 4 * digit)) & 0xF
                    header[3 + digit] = nibble < 10 ? 0x30 + nibble : 0x57 + nibble  // "0"…"9", "a"…"f"
                }
                header[19] = colon
                return headerCount
            }
            stored.append(value)
            return stored
        }

        /// Checks the form of `bytes` and its checksum against `key`.
        private static func check(_ bytes: UnsafeBufferPointer<UInt8>, key: String) throws(OfflineStoreError) {
            try key.withUTF8Bytes { (keyBytes) throws(OfflineStoreError) in
                try check(bytes, keyBytes: UnsafeRawBufferPointer(keyBytes))
            }
        }

        /// The value `stored` holds, borrowed from it, after checking its form and its checksum
        /// against the key whose UTF-8 bytes are `key`.
        static func open(
            _ stored: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer
        ) throws(OfflineStoreError) -> UnsafeRawBufferPointer {
            try check(stored.assumingMemoryBound(to: UInt8.self), keyBytes: key)
            return UnsafeRawBufferPointer(rebasing: stored[headerCount...])
        }

        /// Checks the form of `bytes` and its checksum against the key whose UTF-8 bytes are `keyBytes`.
        private static func check(
            _ bytes: UnsafeBufferPointer<UInt8>, keyBytes: UnsafeRawBufferPointer
        ) throws(OfflineStoreError) {
            let problem: String? = {
                guard bytes.count >= headerCount, bytes[0] == versionTag.0, bytes[1] == versionTag.1,
                    bytes[2] == colon, bytes[19] == colon, let expected = parseChecksum(bytes)
                else { return "it does not start with \"c1:\", 16 hex digits and \":\"" }
                let actual = EntryChecksum.of(
                    key: keyBytes, value: UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[headerCount...])))
                return actual == expected ? nil : "its checksum does not match"
            }()
            if let problem {
                throw OfflineStoreError(
                    .corrupt,
                    "The stored value of this key is damaged, or was not written through ChecksummedOfflineStore "
                        + "(\(problem)): delete the key or write it again, or restore the store from a backup.",
                    engine: .checksum,
                    key: String(decoding: keyBytes, as: UTF8.self)
                )
            }
        }

        /// The 16 lowercase hex digits at offsets 3..<19, or `nil` when one is not such a digit.
        private static func parseChecksum(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt64? {
            var checksum: UInt64 = 0
            for offset in 3..<19 {
                let byte = bytes[offset]
                let nibble: UInt8
                switch byte {
                case 0x30...0x39: nibble = byte &- 0x30
                case 0x61...0x66: nibble = byte &- 0x57
                default: return nil
                }
                checksum = checksum << 4 | UInt64(nibble)
            }
            return checksum
        }
    }
}
