import SovariaPlumbing

#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

extension StoreKey {
    /// The slice of `ordered` whose keys start with `prefix` and sort after `after`.
    ///
    /// Binary searches by memcmp over the UTF-8 bytes (two, three with `after`), nothing allocated: the file and
    /// memory stores answer every `keys(prefix)` from here, and the C program they are measured
    /// against does exactly this much.
    static func range(of prefix: String, after: String?, in ordered: [Bytes]) -> ArraySlice<Bytes> {
        var prefix = prefix
        return prefix.withUTF8 { prefixBytes in
            var lower = ordered.partitioningIndex { compare($0, prefixBytes) >= 0 }
            if var after {
                lower = after.withUTF8 { afterBytes in
                    ordered[lower...].partitioningIndex { compare($0, afterBytes) > 0 }
                }
            }
            // From `lower` on every key sorts at or after the prefix, so the ones that start
            // with it come first.
            let upper = ordered[lower...].partitioningIndex { !startsWith($0, prefixBytes) }
            return ordered[lower..<upper]
        }
    }

    /// memcmp of `key`'s UTF-8 form against `bytes`, then the lengths: negative, zero or positive.
    private static func compare(_ key: Bytes, _ bytes: UnsafeBufferPointer<UInt8>) -> Int {
        key.withUTF8 { Bytes.compareBytes($0, bytes) }
    }

    /// Whether `key`'s UTF-8 form starts with `bytes`.
    private static func startsWith(_ key: Bytes, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        key.withUTF8 { keyBytes in
            guard keyBytes.count >= bytes.count else { return false }
            guard let keyStart = keyBytes.baseAddress, let start = bytes.baseAddress else { return true }
            return memcmp(keyStart, start, bytes.count) == 0
        }
    }
}
