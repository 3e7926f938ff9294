/// The order records are inserted in, which decides their key names (YCSB's `insertorder`).
package enum InsertOrder: String, Sendable, CaseIterable {
    /// Key number `n` is named by `fnv64(n)`: consecutive inserts land all over the key space
    /// (YCSB's default).
    case hashed
    /// Key number `n` is named by `n`: inserts append at the end of the key order (with enough
    /// ``WorkloadKeys/zeroPadding``).
    case ordered
}

/// How a workload names its keys: YCSB's `buildKeyName`, `prefix` + zero padding + a decimal
/// number (the key number itself, or its FNV-64 hash for hashed inserts).
///
/// Every key is ASCII and ends in a decimal digit, which is what ``scanAfter(keyNumber:)``
/// relies on.
package struct WorkloadKeys: Sendable, Equatable {
    /// The text every key starts with. Default: `"user"`, as YCSB.
    package var prefix: String
    /// Whether key numbers are hashed before they are written out. Default: `.hashed`.
    package var insertOrder: InsertOrder
    /// The least number of digits after the prefix, zeros in front (YCSB's `zeropadding`).
    /// Default: 1 (no padding), as YCSB.
    package var zeroPadding: Int

    /// The longest decimal number a key holds: 2⁶⁴ − 1 has 20 digits.
    package static let maxDigits = 20

    /// Keys named as YCSB names them by default.
    package init(prefix: String = "user", insertOrder: InsertOrder = .hashed, zeroPadding: Int = 1) {
        self.prefix = prefix
        self.insertOrder = insertOrder
        self.zeroPadding = zeroPadding
    }

    /// The longest key these settings make, in UTF-8 bytes.
    package var maxKeyUTF8Count: Int { prefix.utf8.count + max(zeroPadding, Self.maxDigits) }

    /// The key of key number `keyNumber`.
    package func key(keyNumber: UInt64) -> String {
        let number = insertOrder == .hashed ? YCSBHash.fnv64(keyNumber) : keyNumber
        let digits = String(number)
        let fill = zeroPadding - digits.utf8.count
        if fill <= 0 { return prefix + digits }
        return prefix + String(repeating: "0", count: fill) + digits
    }

    /// The `after` of a scan that starts at key number `keyNumber`'s key, itself included.
    ///
    /// `entries(prefix:after:limit:)` starts after an exclusive bound, while YCSB's scan starts
    /// at its start key. The key with its last digit lowered by one and `"~"` appended sorts
    /// below the start key and above every workload key below it: workload keys differ from the
    /// start key at a digit or end sooner, and `"~"` (0x7E) sorts above every digit. So the scan
    /// returns the start key (when it exists) and the `limit - 1` keys after it, as YCSB's does.
    package func scanAfter(keyNumber: UInt64) -> String {
        var bytes = Array(key(keyNumber: keyNumber).utf8)
        // The last byte is a digit ("0" lowers to "/", still below every digit).
        bytes[bytes.count - 1] -= 1
        bytes.append(UInt8(ascii: "~"))
        return String(decoding: bytes, as: UTF8.self)
    }
}
