/// The query cache's layout in the store, under `sov:cache:`:
///
/// - `sov:cache:e:<id>` → the entry: a header, the query's full identity, the body
///   (see ``CacheRecord``).
/// - `sov:cache:t:<server time, ms, 16 digits>:<id>` → the body's UTF-8 length: the eviction
///   order (oldest first in byte order) and the running total, read at open without one body.
///
/// `<id>` is 32 hex digits of a 128-bit hash of the identity's UTF-8 bytes, so an identity of
/// any length maps to a short legal key and equal-looking identities (precomposed and
/// decomposed "é") stay apart. The entry keeps the full identity, checked on every read, so a
/// hash collision is a miss, never another query's data.
enum CacheKeys {
    static let entryPrefix = "sov:cache:e:"
    static let orderPrefix = "sov:cache:t:"

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

    static func entryKey(_ id: String) -> String { entryPrefix + id }

    static func orderKey(_ id: String, serverTimeMillis: Int64) -> String {
        let digits = String(max(0, serverTimeMillis))
        return orderPrefix + String(repeating: "0", count: max(0, 16 - digits.count)) + digits + ":" + id
    }

    /// The server time and id of an order key, or `nil` for a key of another shape.
    static func parseOrderKey(_ key: String) -> (serverTimeMillis: Int64, id: String)? {
        let rest = key.utf8.dropFirst(orderPrefix.utf8.count)
        guard rest.count == 16 + 1 + 32, rest[rest.index(rest.startIndex, offsetBy: 16)] == UInt8(ascii: ":"),
            let millis = Int64(String(decoding: rest.prefix(16), as: UTF8.self))
        else { return nil }
        return (millis, String(decoding: rest.suffix(32), as: UTF8.self))
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
