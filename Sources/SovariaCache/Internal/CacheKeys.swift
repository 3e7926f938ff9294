import Sovaria
import SovariaPlumbing

/// The query cache's layout in the store: one key per cached response,
///
///     sov:cache:l2:<id>:<server time, ms, 16 digits>:<body bytes, 10 digits>  →  the entry
///
/// whose value is a ``CacheRecord`` (header, the query's full identity, the body). Everything
/// eviction needs is in the key: listing the keys (``OfflineStore/keys(_:)``, never a value)
/// rebuilds the order and the running total, and a put of a new response is one `set`. The id comes
/// first so that one list is found without the index, by listing the keys under
/// ``responsePrefix(of:)``: a cache answers reads while its index still loads behind the open.
///
/// `<id>` is 32 hex digits of a 128-bit hash of the identity's UTF-8 bytes, so an identity of
/// any length maps to a short legal key and equal-looking identities (precomposed and
/// decomposed "é") stay apart. The entry keeps the full identity, checked on every read, so a
/// hash collision is a miss, never another query's data.
enum CacheKeys {
    /// Every key of the query cache starts with this.
    static let areaPrefix = "sov:cache:"
    static let responsePrefix = "sov:cache:l2:"

    static func id(of query: String) -> HexID {
        var first: UInt64 = 0xcbf2_9ce4_8422_2325
        var second: UInt64 = 0x6c62_272e_07bb_0142
        for byte in query.utf8 {
            first = (first ^ UInt64(byte)) &* 0x100_0000_01b3
            second = (second &+ UInt64(byte)) &* 0x9E37_79B9_7F4A_7C15
            second ^= second >> 29
        }
        let length = UInt64(query.utf8.count)
        return HexID(high: mix(first ^ length), low: mix(second &+ length))
    }

    static func responseKey(_ id: HexID, _ entry: CacheIndex.Entry) -> String {
        let (time, size) = keyFields(entry)
        guard time < 10_000_000_000_000_000, size < 10_000_000_000 else {
            // Wider than the layout (not met: times are clamped, values are at most 64 MiB).
            return responsePrefix(of: id) + padded(time, 16) + ":" + padded(size, 10)
        }
        // One buffer, written once: a page of the change feed makes a key for each answer it
        // rewrites, and joining the parts made five strings a key.
        let prefix = responsePrefix.utf8
        return String(unsafeUninitializedCapacity: prefix.count + 32 + 1 + 16 + 1 + 10) { text in
            var at = text.initialize(fromContentsOf: prefix)
            id.writeHex(into: text, at: at)
            at += 32
            /// `:` and `value` in `width` digits, zeros first.
            func writeColonAndDigits(_ value: Int64, width: Int) {
                text[at] = UInt8(ascii: ":")
                var rest = value
                for position in stride(from: at + width, to: at, by: -1) {
                    text[position] = UInt8(ascii: "0") + UInt8(rest % 10)
                    rest /= 10
                }
                at += width + 1
            }
            writeColonAndDigits(time, width: 16)
            writeColonAndDigits(size, width: 10)
            return at
        }
    }

    /// Whether `a` and `b` give one response key (``responseKey(_:_:)``), without writing either:
    /// the key names the server time and the size, each clamped at zero.
    static func sameResponseKey(_ a: CacheIndex.Entry, _ b: CacheIndex.Entry) -> Bool {
        keyFields(a) == keyFields(b)
    }

    /// What a response key writes of `entry`: its server time and size, each clamped at zero.
    private static func keyFields(_ entry: CacheIndex.Entry) -> (time: Int64, size: Int64) {
        (max(0, entry.serverTimeMillis), Int64(max(0, entry.sizeBytes)))
    }

    /// The prefix of `id`'s response key: the keys under it are that response's (one, or two a crash
    /// left, the later of which is current).
    static func responsePrefix(of id: HexID) -> String {
        responsePrefix + id.hex + ":"
    }

    /// The id, server time and size in a response key, or `nil` for a key of another shape.
    ///
    /// A response key has a fixed layout (prefix, 32 lowercase hex digits, `:`, 16 digits, `:`, 10
    /// digits), read here straight from its UTF-8 bytes: loading an index parses every key.
    static func parseResponseKey(_ key: String) -> (id: HexID, serverTimeMillis: Int64, sizeBytes: Int)? {
        key.withUTF8Bytes { parseResponseKey(UnsafeRawBufferPointer($0)) }
    }

    /// ``parseResponseKey(_:)`` of a key's UTF-8 bytes, as a borrowed key scan hands them.
    static func parseResponseKey(
        _ key: UnsafeRawBufferPointer
    ) -> (id: HexID, serverTimeMillis: Int64, sizeBytes: Int)? {
        let bytes = key.assumingMemoryBound(to: UInt8.self)
        let idStart = responsePrefix.utf8.count
        let timeStart = idStart + 33
        let sizeStart = timeStart + 17
        // The separators: after the id and after the time.
        guard bytes.count == idStart + 60, bytes[timeStart - 1] == colon, bytes[sizeStart - 1] == colon,
            bytes.starts(with: responsePrefix.utf8)
        else { return nil }
        // Digits only: a key that would parse but not rebuild to itself could never be evicted.
        guard let millis = digits(bytes[timeStart..<(timeStart + 16)]),
            let size = digits(bytes[sizeStart..<(sizeStart + 10)]),
            let id = HexID(hex: UnsafeBufferPointer(rebasing: bytes[idStart..<(idStart + 32)]))
        else { return nil }
        return (id, millis, Int(size))
    }

    private static let colon = UInt8(ascii: ":")

    /// The number written in `bytes`, or `nil` if one is not a decimal digit (at most 16 digits:
    /// no overflow).
    private static func digits(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> Int64? {
        var value: Int64 = 0
        for byte in bytes {
            let digit = byte &- UInt8(ascii: "0")
            guard digit < 10 else { return nil }
            value = value * 10 + Int64(digit)
        }
        return value
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
}
