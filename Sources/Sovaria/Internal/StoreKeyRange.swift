/// The keys a prefix scan reads, as one index range `lowerBound <= key < upperBound` on a key
/// column an engine compares with memcmp, shorter first on a tie (SQLite BLOBs, PostgreSQL
/// `bytea`): the byte order of ``StoreKey``. The index is walked from the first key in range,
/// never filtered with `LIKE` and never sorted in Swift.
package struct StoreKeyRange: Sendable {
    /// The smallest key in range.
    package let lowerBound: [UInt8]
    /// The first key past the range.
    package let upperBound: [UInt8]

    /// Greater than every key a store holds, which has at most ``StoreKey/maxUTF8Count`` bytes:
    /// the upper bound of the empty prefix.
    package static let aboveEveryKey = [UInt8](repeating: 0xFF, count: StoreKey.maxUTF8Count + 1)

    /// The keys that start with `prefix` and sort after `after`; `nil` when there can be none.
    package init?(prefix: String, after: String? = nil) {
        var lower = Array(prefix.utf8)
        let upper = StoreKey.successor(ofPrefix: lower) ?? Self.aboveEveryKey
        if let after {
            // The smallest byte string above `after` is `after` + 0x00, so `key > after` is
            // `key >= after + [0]`: one inclusive lower bound, one index seek.
            let justAfter = Array(after.utf8) + [0]
            if lower.lexicographicallyPrecedes(justAfter) { lower = justAfter }
        }
        guard lower.lexicographicallyPrecedes(upper) else { return nil }
        lowerBound = lower
        upperBound = upper
    }
}
