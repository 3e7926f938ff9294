import SovariaPlumbing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

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

    /// A key hashed, compared and ordered by its UTF-8 bytes (`String` itself merges canonically
    /// equivalent forms and orders by characters): the dictionary key and sort key of stores that
    /// keep keys in memory. Holds the string, so making one copies nothing.
    public struct Bytes: Hashable, Comparable, Sendable {
        /// The key as a string.
        public let string: String

        /// The key `key`.
        public init(_ key: String) { string = key }

        /// The key whose UTF-8 form is `utf8`.
        public init(utf8: [UInt8]) { string = String(decoding: utf8, as: UTF8.self) }

        /// The key's UTF-8 bytes.
        public var utf8: [UInt8] { Array(string.utf8) }

        /// Equal when the UTF-8 bytes are.
        public static func == (lhs: Bytes, rhs: Bytes) -> Bool {
            lhs.string.utf8.count == rhs.string.utf8.count && compareBytes(lhs, rhs) == 0
        }

        /// Hashes the UTF-8 bytes.
        public func hash(into hasher: inout Hasher) {
            withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }

        /// Calls `body` with the key's UTF-8 bytes: in place for a native string (every key a
        /// store made), else from a contiguous copy. Cheaper than `withUTF8` on a `var` copy of
        /// the string, which the compiler does not always elide: sorted key lists compare and
        /// hash keys millions of times.
        func withUTF8<Result>(_ body: (UnsafeBufferPointer<UInt8>) -> Result) -> Result {
            string.withUTF8Bytes(body)
        }

        /// Byte order (memcmp), shorter first on a tie.
        public static func < (lhs: Bytes, rhs: Bytes) -> Bool {
            compareBytes(lhs, rhs) < 0
        }

        /// memcmp of the UTF-8 forms, then their lengths: negative, zero or positive.
        private static func compareBytes(_ lhs: Bytes, _ rhs: Bytes) -> Int {
            lhs.withUTF8 { leftBytes in rhs.withUTF8 { compareBytes(leftBytes, $0) } }
        }

        /// memcmp of `lhs` and `rhs`, then their lengths: negative, zero or positive.
        static func compareBytes(_ lhs: UnsafeBufferPointer<UInt8>, _ rhs: UnsafeBufferPointer<UInt8>) -> Int {
            let common = min(lhs.count, rhs.count)
            if common > 0, let leftStart = lhs.baseAddress, let rightStart = rhs.baseAddress {
                let order = memcmp(leftStart, rightStart, common)
                if order != 0 { return Int(order) }
            }
            return lhs.count - rhs.count
        }
    }
}
