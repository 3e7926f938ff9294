/// The random source of the workload generators: xoshiro256** seeded through SplitMix64, so one
/// seed gives one stream of numbers on every machine and in every run.
///
/// Our own code rather than `SystemRandomNumberGenerator` (not seedable) or a package: the
/// operation stream must be the same wherever it is generated, and the C replayer reads it from a
/// trace file, so nothing about it may depend on a library's version.
///
/// - Important: A value type: copying it copies the stream position, so two copies give the same
///   numbers. Not thread safe; each stream owns one.
package struct WorkloadRandom: RandomNumberGenerator, Sendable {
    private var s0: UInt64
    private var s1: UInt64
    private var s2: UInt64
    private var s3: UInt64

    /// A generator whose numbers are fixed by `seed`.
    package init(seed: UInt64) {
        // SplitMix64 spreads any seed (0 included) over the four words, as xoshiro's authors
        // recommend: xoshiro's state must not be all zeros.
        var splitMix = seed
        func nextSplitMix() -> UInt64 {
            splitMix &+= 0x9E37_79B9_7F4A_7C15
            var z = splitMix
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
        s0 = nextSplitMix()
        s1 = nextSplitMix()
        s2 = nextSplitMix()
        s3 = nextSplitMix()
    }

    /// The next 64 random bits.
    @inline(__always)
    package mutating func next() -> UInt64 {
        let result = rotateLeft(s1 &* 5, 7) &* 9
        let t = s1 << 17
        s2 ^= s0
        s3 ^= s1
        s1 ^= s2
        s0 ^= s3
        s2 ^= t
        s3 = rotateLeft(s3, 45)
        return result
    }

    /// A double in `[0, 1)` with 53 random bits (YCSB's `nextDouble`).
    @inline(__always)
    package mutating func nextUnitDouble() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// A number in `0..<bound`, without modulo bias (Lemire's multiply-and-reject).
    ///
    /// - Important: `bound` must be positive.
    @inline(__always)
    package mutating func next(below bound: UInt64) -> UInt64 {
        precondition(bound > 0, "WorkloadRandom.next(below:) needs a positive bound")
        var product = next().multipliedFullWidth(by: bound)
        if product.low < bound {
            // Only the low part can show the bias; the threshold is computed on this rare path.
            let threshold = (0 &- bound) % bound
            while product.low < threshold {
                product = next().multipliedFullWidth(by: bound)
            }
        }
        return product.high
    }

    @inline(__always)
    private func rotateLeft(_ value: UInt64, _ count: UInt64) -> UInt64 {
        (value << count) | (value >> (64 - count))
    }
}
