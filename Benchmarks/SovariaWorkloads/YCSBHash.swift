/// YCSB's `Utils.fnvhash64`: FNV-1a over the 8 little-endian bytes of a number. It names hashed
/// keys (`"user" + fnvhash64(keynum)`) and scrambles the zipfian, so the same numbers give the
/// same keys as YCSB.
package enum YCSBHash {
    private static let offsetBasis: UInt64 = 0xCBF2_9CE4_8422_2325
    private static let prime: UInt64 = 1_099_511_628_211

    /// FNV-1a of `value`'s 8 bytes, least significant first, made non-negative as a Java `long`
    /// (`Math.abs`): the result is below 2⁶³.
    ///
    /// Java's `Math.abs(Long.MIN_VALUE)` stays negative, which YCSB then prints with a minus sign;
    /// that one hash in 2⁶⁴ gives 2⁶³ − 1 here instead, so every key stays digits only.
    @inline(__always)
    package static func fnv64(_ value: UInt64) -> UInt64 {
        var hash = offsetBasis
        var rest = value
        for _ in 0..<8 {
            hash ^= rest & 0xFF
            hash &*= prime
            rest >>= 8
        }
        let signed = Int64(bitPattern: hash)
        if signed == .min { return UInt64(Int64.max) }
        return UInt64(signed.magnitude)
    }
}
