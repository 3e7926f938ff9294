/// Latencies in nanoseconds, counted in log-linear buckets (HDR histogram style): O(1) to
/// record, mergeable, a fixed few tens of kilobytes whatever the number of samples, and every
/// percentile within 0.4% of the exact one (never a sorted array of every sample).
///
/// Values below 256 ns have a bucket each. Above, each power of two `[2ᵉ, 2ᵉ⁺¹)` is cut into
/// 128 equal buckets, so a bucket is at most 1/128 of its values wide; a percentile is its
/// bucket's midpoint (clamped to the exact minimum and maximum), off by at most half a bucket,
/// 1/256 < 0.4%. Values of 2⁴⁴ ns (about 4.9 hours) and more share the top bucket; ``max`` is
/// still exact.
///
/// - Important: A value type, not thread safe: each task records into its own and the results
///   are merged (``merge(_:)``).
package struct LatencyHistogram: Sendable, Equatable {
    private static let subBucketBits = 7
    private static let subBucketCount = 1 << subBucketBits
    /// Values `< 2^maxExponent` get a bucket of their own precision.
    private static let maxExponent = 44
    private static let bucketCount = (maxExponent - 6) * subBucketCount

    /// Samples per bucket; empty until the first sample (an unused operation kind costs nothing).
    private var counts: [UInt64] = []
    /// The number of samples.
    package private(set) var count: UInt64 = 0
    /// The smallest sample, or 0 when there is none.
    package private(set) var min: UInt64 = 0
    /// The largest sample, or 0 when there is none.
    package private(set) var max: UInt64 = 0
    /// The sum of the samples (wraps past 2⁶⁴ ns, about 584 years).
    package private(set) var sum: UInt64 = 0

    /// An empty histogram.
    package init() {}

    /// Counts one latency of `nanoseconds`.
    @inline(__always)
    package mutating func record(_ nanoseconds: UInt64) {
        if counts.isEmpty {
            counts = Array(repeating: 0, count: Self.bucketCount)
            min = nanoseconds
            max = nanoseconds
        } else {
            if nanoseconds < min { min = nanoseconds }
            if nanoseconds > max { max = nanoseconds }
        }
        counts[Self.bucketIndex(nanoseconds)] &+= 1
        count &+= 1
        sum &+= nanoseconds
    }

    /// Adds `other`'s samples: the result equals one histogram that recorded both.
    package mutating func merge(_ other: LatencyHistogram) {
        guard other.count > 0 else { return }
        if count == 0 {
            self = other
            return
        }
        for index in counts.indices { counts[index] &+= other.counts[index] }
        count &+= other.count
        sum &+= other.sum
        min = Swift.min(min, other.min)
        max = Swift.max(max, other.max)
    }

    /// The arithmetic mean, or 0 when there are no samples.
    package var mean: Double { count == 0 ? 0 : Double(sum) / Double(count) }

    /// The latency at or below which `fraction` of the samples lie (`0.99` for p99): the sample
    /// of rank ⌈fraction × count⌉, to the histogram's precision. 0 when there are no samples.
    package func percentile(_ fraction: Double) -> UInt64 {
        guard count > 0 else { return 0 }
        let clamped = Swift.min(Swift.max(fraction, 0), 1)
        let rank = Swift.max(1, UInt64((clamped * Double(count)).rounded(.up)))
        var seen: UInt64 = 0
        for (index, bucketCount) in counts.enumerated() where bucketCount > 0 {
            seen += bucketCount
            guard seen >= rank else { continue }
            // The top bucket holds everything past 2⁴⁴ ns: its best estimate is the exact maximum.
            if index == Self.bucketCount - 1 { return max }
            return Swift.min(Swift.max(Self.representative(ofBucket: index), min), max)
        }
        return max
    }

    /// The median.
    package var p50: UInt64 { percentile(0.50) }
    /// The 95th percentile.
    package var p95: UInt64 { percentile(0.95) }
    /// The 99th percentile.
    package var p99: UInt64 { percentile(0.99) }
    /// The 99.9th percentile.
    package var p999: UInt64 { percentile(0.999) }

    @inline(__always)
    private static func bucketIndex(_ value: UInt64) -> Int {
        if value < UInt64(2 * subBucketCount) { return Int(value) }
        let exponent = 63 - value.leadingZeroBitCount
        if exponent >= maxExponent { return bucketCount - 1 }
        let shift = exponent - subBucketBits
        // `value >> shift` is in [128, 256): the bucket within the power of two, after the
        // `shift` powers before it.
        return shift * subBucketCount + Int(value >> UInt64(shift))
    }

    /// The middle of bucket `index`'s values.
    private static func representative(ofBucket index: Int) -> UInt64 {
        if index < 2 * subBucketCount { return UInt64(index) }
        let shift = index / subBucketCount - 1
        let low = UInt64(subBucketCount + index % subBucketCount) << UInt64(shift)
        return low + ((1 << UInt64(shift)) - 1) / 2
    }
}
