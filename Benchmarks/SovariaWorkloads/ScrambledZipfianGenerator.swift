/// Key numbers `0..<itemCount` with a zipfian popularity whose popular items are spread over
/// the key space: YCSB's `ScrambledZipfianGenerator`, the generator behind its
/// `requestdistribution=zipfian`.
///
/// A rank is drawn from a zipfian over YCSB's fixed 10¹⁰ items (ζ is YCSB's precomputed constant
/// for θ = 0.99) and mapped to `fnv64(rank) mod itemCount`. The most popular item is then some
/// key in the middle of the range rather than key 0, so a B-tree's hot pages are not all at one
/// end; each popular rank keeps its frequency (two ranks rarely share an item while
/// `itemCount` is far above the number of popular ranks).
///
/// - Important: A value type, not thread safe; each stream owns its generators.
package struct ScrambledZipfianGenerator: Sendable {
    /// The zipfian's item count (YCSB's `ITEM_COUNT`): large, so the scrambled popularity barely
    /// depends on `itemCount`.
    package static let zipfianItemCount: UInt64 = 10_000_000_000
    /// ζ(10¹⁰ + 1, 0.99), YCSB's `ZETAN` (its zipfian ranges over `0…ITEM_COUNT`, one more item).
    package static let zipfianZetaN = 26.46902820178302

    /// The number of key numbers, `0..<itemCount`.
    package let itemCount: UInt64
    private var zipfian: ZipfianGenerator

    /// A generator over key numbers `0..<itemCount` with YCSB's constant 0.99.
    ///
    /// - Important: `itemCount` must be at least 1.
    package init(itemCount: UInt64) {
        precondition(itemCount >= 1, "A scrambled zipfian generator needs at least one item")
        self.itemCount = itemCount
        zipfian = ZipfianGenerator(
            itemCount: Self.zipfianItemCount + 1, theta: ZipfianGenerator.ycsbConstant, zetaN: Self.zipfianZetaN)
    }

    /// The next key number in `0..<itemCount`.
    @inline(__always)
    package mutating func next(using random: inout WorkloadRandom) -> UInt64 {
        Self.item(forRank: zipfian.next(using: &random), itemCount: itemCount)
    }

    /// The key number rank `rank` of the zipfian lands on: what tests use to find where the
    /// popular ranks went.
    package static func item(forRank rank: UInt64, itemCount: UInt64) -> UInt64 {
        YCSBHash.fnv64(rank) % itemCount
    }

    /// The probability of the zipfian's rank `rank` (before scrambling).
    package static func probability(ofRank rank: UInt64) -> Double {
        ZipfianGenerator(itemCount: 1, theta: ZipfianGenerator.ycsbConstant, zetaN: zipfianZetaN)
            .probability(ofRank: rank)
    }
}
