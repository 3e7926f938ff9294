#if canImport(Glibc)
    import Glibc
#elseif canImport(Musl)
    import Musl
#elseif canImport(Darwin)
    import Darwin
#endif

/// Ranks `0..<itemCount` drawn from a zipfian distribution, rank 0 the most popular: YCSB's
/// `ZipfianGenerator`, which is the algorithm of Gray et al., "Quickly Generating Billion-Record
/// Synthetic Databases" (SIGMOD 1994).
///
/// The probability of rank `i` is `1 / ((i + 1)^θ · ζ(n, θ))` with `ζ(n, θ) = Σ_{k=1…n} 1/k^θ`.
/// ζ is summed once, at creation (O(n)); a draw is O(1). When the item count grows (inserts),
/// ζ is extended by the new terms only, as YCSB does, so a stream with inserts stays O(1) per
/// draw.
///
/// - Important: A value type, not thread safe; each stream owns its generators.
package struct ZipfianGenerator: Sendable {
    /// YCSB's zipfian constant (`ZipfianGenerator.ZIPFIAN_CONSTANT`).
    package static let ycsbConstant = 0.99

    /// The skew θ.
    package let theta: Double
    /// The number of ranks ζ was summed for.
    package private(set) var itemCount: UInt64
    /// ζ(itemCount, θ).
    package private(set) var zetaN: Double

    private let alpha: Double
    private let zeta2Theta: Double
    private let halfPowTheta: Double
    private var eta: Double

    /// A generator over `itemCount` ranks with skew `theta` (YCSB's 0.99 by default); sums ζ.
    ///
    /// - Important: `itemCount` must be at least 1 and `theta` in `(0, 1)`.
    package init(itemCount: UInt64, theta: Double = ZipfianGenerator.ycsbConstant) {
        self.init(itemCount: itemCount, theta: theta, zetaN: Self.zeta(itemCount, theta: theta))
    }

    /// A generator over `itemCount` ranks whose ζ(itemCount, θ) the caller already knows (YCSB's
    /// scrambled zipfian uses a constant for 10¹⁰ items: summing it would take minutes).
    package init(itemCount: UInt64, theta: Double, zetaN: Double) {
        precondition(itemCount >= 1, "A zipfian generator needs at least one item")
        precondition(theta > 0 && theta < 1, "The zipfian constant must be in (0, 1), got \(theta)")
        self.theta = theta
        self.itemCount = itemCount
        self.zetaN = zetaN
        alpha = 1 / (1 - theta)
        zeta2Theta = Self.zeta(2, theta: theta)
        halfPowTheta = pow(0.5, theta)
        eta = 0
        eta = Self.eta(itemCount: itemCount, theta: theta, zeta2Theta: zeta2Theta, zetaN: zetaN)
    }

    /// The next rank in `0..<itemCount`.
    @inline(__always)
    package mutating func next(using random: inout WorkloadRandom) -> UInt64 {
        let u = random.nextUnitDouble()
        let uz = u * zetaN
        if uz < 1 { return 0 }
        if uz < 1 + halfPowTheta { return 1 }
        let rank = UInt64(Double(itemCount) * pow(eta * u - eta + 1, alpha))
        // `eta·u − eta + 1 < 1`, so the rank is below itemCount; the clamp guards rounding.
        return min(rank, itemCount - 1)
    }

    /// The next rank in `0..<itemCount`, first resizing to `itemCount` ranks (YCSB's
    /// `nextLong(itemcount)`): growth adds the new ζ terms only; a shrink sums ζ again.
    @inline(__always)
    package mutating func next(itemCount newCount: UInt64, using random: inout WorkloadRandom) -> UInt64 {
        if newCount != itemCount { resize(to: newCount) }
        return next(using: &random)
    }

    /// Sets the number of ranks to `newCount`, extending ζ term by term when it grows.
    package mutating func resize(to newCount: UInt64) {
        precondition(newCount >= 1, "A zipfian generator needs at least one item")
        if newCount > itemCount {
            zetaN = Self.zeta(from: itemCount, to: newCount, theta: theta, initial: zetaN)
        } else if newCount < itemCount {
            zetaN = Self.zeta(newCount, theta: theta)
        }
        itemCount = newCount
        // YCSB recomputes η here with the item count it was created with (its `items` field is
        // never updated), which is Gray's formula only for that count; η uses the current count
        // so the distribution stays Gray's zipfian after growth.
        eta = Self.eta(itemCount: newCount, theta: theta, zeta2Theta: zeta2Theta, zetaN: zetaN)
    }

    /// The probability of `rank` under the current item count: the closed form tests compare to.
    package func probability(ofRank rank: UInt64) -> Double {
        1 / (pow(Double(rank + 1), theta) * zetaN)
    }

    /// The share of draws below rank `count` that this algorithm gives: exactly the zipfian's
    /// for one or two ranks, and Gray's continuous approximation beyond (rank 2 is drawn about
    /// 18% more often than the exact zipfian's, the top 1% of 10,000 ranks about 1 point more):
    /// YCSB's figures come from the same approximation.
    package func approximateShare(ofTopRanks count: UInt64) -> Double {
        if count == 0 { return 0 }
        if count >= itemCount { return 1 }
        if count == 1 { return 1 / zetaN }
        let firstTwo = (1 + halfPowTheta) / zetaN
        return max(firstTwo, 1 - (1 - pow(Double(count) / Double(itemCount), 1 - theta)) / eta)
    }

    /// ζ(n, θ) = Σ_{k=1…n} 1/k^θ.
    package static func zeta(_ n: UInt64, theta: Double) -> Double {
        zeta(from: 0, to: n, theta: theta, initial: 0)
    }

    /// ζ(`to`, θ) from ζ(`from`, θ) = `initial`: adds the terms `from + 1 … to`.
    package static func zeta(from: UInt64, to: UInt64, theta: Double, initial: Double) -> Double {
        var sum = initial
        var k = from
        while k < to {
            k += 1
            sum += 1 / pow(Double(k), theta)
        }
        return sum
    }

    private static func eta(itemCount: UInt64, theta: Double, zeta2Theta: Double, zetaN: Double) -> Double {
        (1 - pow(2 / Double(itemCount), 1 - theta)) / (1 - zeta2Theta / zetaN)
    }
}
