/// The keys and values every subject of a run works on, made once from a fixed seed so every
/// engine and its raw baseline do exactly the same work.
final class Workload: @unchecked Sendable {  // immutable after init
    let count: Int
    let keys: [String]
    let keyBytes: [[UInt8]]
    let missKeys: [String]
    let missKeyBytes: [[UInt8]]
    /// Prefixes that each match 100 keys (fewer at the end).
    let prefixes: [String]
    let prefixBytes: [[UInt8]]
    /// Two values of the same size with different bytes: a write always changes the stored
    /// bytes (SQLite skips a row rewritten with identical bytes, which would flatter it).
    let values: [String]
    let valueBytes: [[UInt8]]
    /// A fixed random order of `0..<count`.
    let shuffled: [Int]
    let batchSize = 1_000
    static let keyPrefix = "sov:bench:"

    init(count: Int, valueBytes byteCount: Int, seed: UInt64 = 0x5EED) {
        self.count = count
        keys = (0..<count).map { Self.keyPrefix + Self.padded($0, 8) }
        keyBytes = keys.map { Array($0.utf8) }
        missKeys = (0..<count).map { Self.keyPrefix + Self.padded($0, 8) + "~" }
        missKeyBytes = missKeys.map { Array($0.utf8) }
        prefixes = (0..<max(1, (count + 99) / 100)).map { Self.keyPrefix + Self.padded($0, 6) }
        prefixBytes = prefixes.map { Array($0.utf8) }
        var generator = SplitMix64(seed: seed)
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
        valueBytes = (0..<2).map { _ in
            (0..<byteCount).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] }
        }
        values = valueBytes.map { String(decoding: $0, as: UTF8.self) }
        var order = Array(0..<count)
        order.shuffle(using: &generator)
        shuffled = order
    }

    /// FNV-1a (64-bit) of both values, then of ``shuffled`` as little-endian `UInt64`s: the C
    /// baseline prints the same number for the workload it rebuilt, so the bench can check that
    /// both ran on the same bytes in the same order.
    var fingerprint: String {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        func mix(_ byte: UInt8) {
            hash ^= UInt64(byte)
            hash &*= 0x100_0000_01B3
        }
        for value in valueBytes { value.forEach(mix) }
        for index in shuffled { withUnsafeBytes(of: UInt64(index).littleEndian) { $0.forEach(mix) } }
        let digits = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - digits.count) + digits
    }

    /// The batches `0..<count` is written in.
    var batches: [Range<Int>] {
        stride(from: 0, to: count, by: batchSize).map { $0..<min(count, $0 + batchSize) }
    }

    static func padded(_ value: Int, _ width: Int) -> String {
        let digits = String(value)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}

/// A small, fast, seedable random generator (Vigna's SplitMix64).
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var mixed = state
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31)
    }
}
