/// The query cache's layout in the store: one key per cached list,
///
///     sov:cache:l:<server time, ms, 16 digits>:<body bytes, 10 digits>:<id>  →  the entry
///
/// whose value is a ``CacheRecord`` (header, the query's full identity, the body). Everything
/// eviction needs is in the key: listing the keys (``OfflineStore/keys(_:)``, never a value)
/// rebuilds the order and the running total at open, and a put of a new list is one `set`.
///
/// `<id>` is 32 hex digits of a 128-bit hash of the identity's UTF-8 bytes, so an identity of
/// any length maps to a short legal key and equal-looking identities (precomposed and
/// decomposed "é") stay apart. The entry keeps the full identity, checked on every read, so a
/// hash collision is a miss, never another query's data.
enum CacheKeys {
    static let listPrefix = "sov:cache:l:"

    static func id(of query: String) -> String {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in query.utf8 {
            first = (first ^ UInt64(byte)) &* 0x100_0000_01b3
            second = (second &+ UInt64(byte)) &* 0x9E37_79B9_7F4A_7C15
            second ^= second >> 29
        }
        let length = UInt64(query.utf8.count)
        return hex(mix(first ^ length)) + hex(mix(second &+ length))
    }

    static func listKey(_ id: String, _ entry: CacheIndex.Entry) -> String {
        listPrefix + padded(entry.serverTimeMillis, 16) + ":" + padded(Int64(entry.sizeBytes), 10) + ":" + id
    }

    /// The id, server time and size in a list key, or `nil` for a key of another shape.
    static func parseListKey(_ key: String) -> (id: String, serverTimeMillis: Int64, sizeBytes: Int)? {
        let fields = key.utf8.dropFirst(listPrefix.utf8.count).split(separator: UInt8(ascii: ":"))
        let isDigit = { (byte: UInt8) in byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
        // Digits only: a key that would parse but not rebuild to itself could never be evicted.
        guard fields.count == 3, fields[0].count == 16, fields[1].count == 10, fields[2].count == 32,
            fields[0].allSatisfy(isDigit), fields[1].allSatisfy(isDigit),
            let millis = Int64(String(decoding: fields[0], as: UTF8.self)),
            let size = Int(String(decoding: fields[1], as: UTF8.self))
        else { return nil }
        return (String(decoding: fields[2], as: UTF8.self), millis, size)
    }

    private static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(max(0, value))
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }

    /// SplitMix64's finalizer: spreads every input bit over the output.
    private static func mix(_ value: UInt64) -> UInt64 {
        var mixed = value
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }

    private static func hex(_ value: UInt64) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }
}
