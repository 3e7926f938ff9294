import Sovaria

/// The value strings a replay writes: ``TraceValue/bytes(count:index:)`` as ASCII text, made
/// without building a byte array per write.
///
/// A value depends on its length and on its index modulo 26 only, so the 26 strings of a length
/// are made once and shared (copying a `String` only retains it): a workload with a fixed value
/// size writes with no allocation at all. Lengths past the cache's budget are made from one
/// repeating pattern. A store that keeps values in memory then holds 26 shared strings, not one
/// per key: the memory store's footprint in a replay is smaller than an app's would be, its
/// speed is not affected.
struct ValueStrings {
    /// The bytes the cache may hold; past it, strings are made on each write.
    private static let cacheBudgetBytes = 8 << 20

    private var cache: [Int: [String]] = [:]
    private var cachedBytes = 0
    /// "abc…zabc…", long enough for any start letter and the longest length made so far.
    private var pattern: [UInt8] = []

    /// `TraceValue.bytes(count: count, index: index)` as a string.
    @inline(__always)
    mutating func value(count: Int, index: UInt64) -> String {
        let start = Int(index % 26)
        if let strings = cache[count] { return strings[start] }
        if cachedBytes + 26 * count <= Self.cacheBudgetBytes {
            let strings = (0..<26).map { make(count: count, start: $0) }
            cache[count] = strings
            cachedBytes += 26 * count
            return strings[start]
        }
        return make(count: count, start: start)
    }

    private mutating func make(count: Int, start: Int) -> String {
        if pattern.count < count + 26 {
            pattern = (0..<(count + 26)).map { UInt8(ascii: "a") + UInt8($0 % 26) }
        }
        return String(decoding: pattern[start..<(start + count)], as: UTF8.self)
    }
}
