/// The rules every store applies to keys, for engine and wrapper authors.
///
/// Keys are byte strings: equality, order and "starts with" are decided on their UTF-8 bytes,
/// never with `String`'s `==`, `<` or `hasPrefix`, which compare characters.
public enum StoreKey {
    /// The longest key, in UTF-8 bytes, that every engine accepts (LMDB's limit).
    public static let maxUTF8Count = 511

    /// Throws ``OfflineStoreError/Code/invalidKey`` unless `key` has 1 to ``maxUTF8Count``
    /// UTF-8 bytes.
    public static func validate(_ key: String) throws(OfflineStoreError) {
        let count = key.utf8.count
        guard count >= 1, count <= maxUTF8Count else {
            throw OfflineStoreError(
                .invalidKey,
                "A store key must have 1 to \(maxUTF8Count) UTF-8 bytes, this one has \(count): "
                    + "shorten it, or hash it and keep the full identity in the value.",
                key: key
            )
        }
    }

    /// Validates every key of `batch` (see ``validate(_:)``), so a store can refuse a batch
    /// before writing any of it.
    public static func validate(_ batch: [StoreWrite]) throws(OfflineStoreError) {
        for write in batch { try validate(write.key) }
    }

    /// Whether `key`'s UTF-8 bytes start with `prefix`'s UTF-8 bytes.
    public static func hasBytePrefix(_ key: String, _ prefix: String) -> Bool {
        key.utf8.starts(with: prefix.utf8)
    }

    /// The smallest byte string greater than every byte string that starts with `prefix`, or
    /// `nil` when there is none (the prefix is empty or all `0xFF`): the exclusive upper bound
    /// of a prefix range scan.
    public static func successor<Prefix: Collection<UInt8>>(ofPrefix prefix: Prefix) -> [UInt8]? {
        var bytes = Array(prefix)
        while let last = bytes.last {
            if last == 0xFF {
                bytes.removeLast()
            } else {
                bytes[bytes.count - 1] = last + 1
                return bytes
            }
        }
        return nil
    }

    /// A key as its UTF-8 bytes: hashed, compared and ordered by those bytes.
    public struct Bytes: Hashable, Comparable, Sendable {
        /// The key's UTF-8 bytes.
        public let utf8: [UInt8]

        /// The bytes of `key`.
        public init(_ key: String) { utf8 = Array(key.utf8) }

        /// Wraps bytes that are the UTF-8 form of a string.
        public init(utf8: [UInt8]) { self.utf8 = utf8 }

        /// The key as a string.
        public var string: String { String(decoding: utf8, as: UTF8.self) }

        /// Byte order (memcmp), shorter first on a tie.
        public static func < (lhs: Bytes, rhs: Bytes) -> Bool {
            lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
        }
    }
}
