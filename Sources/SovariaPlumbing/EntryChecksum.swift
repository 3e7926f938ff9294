/// A 64-bit checksum of an entry, bound to its key: XXH64 (Yann Collet's xxHash, 64-bit) of the
/// value, seeded with XXH64 of the key. A value copied under another key, or changed in any byte,
/// fails the check (a random change passes with probability 2⁻⁶⁴).
///
/// Used where an engine keeps no checksum of its own: the file store's entry files and
/// ``ChecksummedOfflineStore``. XXH64 reads 32 bytes a round, so a check on every read is cheap
/// next to the read itself.
package enum EntryChecksum {
    /// The checksum of `value` stored under `key`.
    package static func of(key: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> UInt64 {
        xxh64(value, seed: xxh64(key, seed: 0))
    }

    /// The checksum of `value` stored under `key`, from their UTF-8 bytes.
    package static func of(key: String, value: String) -> UInt64 {
        key.withUTF8Bytes { key in
            value.withUTF8Bytes { value in of(key: UnsafeRawBufferPointer(key), value: UnsafeRawBufferPointer(value)) }
        }
    }

    // MARK: - XXH64

    private static let prime1: UInt64 = 0x9E37_79B1_85EB_CA87
    private static let prime2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    private static let prime3: UInt64 = 0x1656_67B1_9E37_79F9
    private static let prime4: UInt64 = 0x85EB_CA77_C2B2_AE63
    private static let prime5: UInt64 = 0x27D4_EB2F_1656_67C5

    /// XXH64 of `bytes` with `seed`, as the reference implementation computes it.
    package static func xxh64(_ bytes: UnsafeRawBufferPointer, seed: UInt64) -> UInt64 {
        let count = bytes.count
        var offset = 0
        var hash: UInt64
        if count >= 32 {
            var lane1 = seed &+ prime1 &+ prime2
            var lane2 = seed &+ prime2
            var lane3 = seed
            var lane4 = seed &- prime1
            while offset + 32 <= count {
                lane1 = round(lane1, word(bytes, offset))
                lane2 = round(lane2, word(bytes, offset + 8))
                lane3 = round(lane3, word(bytes, offset + 16))
                lane4 = round(lane4, word(bytes, offset + 24))
                offset += 32
            }
            hash = rotate(lane1, 1) &+ rotate(lane2, 7) &+ rotate(lane3, 12) &+ rotate(lane4, 18)
            hash = merge(hash, lane1)
            hash = merge(hash, lane2)
            hash = merge(hash, lane3)
            hash = merge(hash, lane4)
        } else {
            hash = seed &+ prime5
        }
        hash &+= UInt64(count)
        while offset + 8 <= count {
            hash ^= round(0, word(bytes, offset))
            hash = rotate(hash, 27) &* prime1 &+ prime4
            offset += 8
        }
        if offset + 4 <= count {
            hash ^= UInt64(UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt32.self))) &* prime1
            hash = rotate(hash, 23) &* prime2 &+ prime3
            offset += 4
        }
        while offset < count {
            hash ^= UInt64(bytes[offset]) &* prime5
            hash = rotate(hash, 11) &* prime1
            offset += 1
        }
        hash ^= hash >> 33
        hash &*= prime2
        hash ^= hash >> 29
        hash &*= prime3
        hash ^= hash >> 32
        return hash
    }

    @inline(__always)
    private static func word(_ bytes: UnsafeRawBufferPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always)
    private static func rotate(_ value: UInt64, _ bits: UInt64) -> UInt64 {
        (value << bits) | (value >> (64 - bits))
    }

    @inline(__always)
    private static func round(_ accumulator: UInt64, _ input: UInt64) -> UInt64 {
        rotate(accumulator &+ input &* prime2, 31) &* prime1
    }

    @inline(__always)
    private static func merge(_ hash: UInt64, _ lane: UInt64) -> UInt64 {
        (hash ^ round(0, lane)) &* prime1 &+ prime4
    }
}
