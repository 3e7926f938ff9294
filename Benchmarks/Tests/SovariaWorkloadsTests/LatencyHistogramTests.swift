import Testing

@testable import SovariaWorkloads

@Suite struct LatencyHistogramTests {
    /// Latencies from 50 ns to about 10 s, log-uniform, as a replay's spread.
    private func samples(count: Int, seed: UInt64) -> [UInt64] {
        var random = WorkloadRandom(seed: seed)
        return (0..<count).map { _ in UInt64(50 * pow2(random.nextUnitDouble() * 27.5)) }
    }

    private func pow2(_ exponent: Double) -> Double {
        var result = 1.0
        var rest = exponent
        while rest >= 1 {
            result *= 2
            rest -= 1
        }
        // 2^rest for rest in [0, 1) by its series; precise enough for test data.
        return result * (1 + rest * 0.693147 + rest * rest * 0.240227 + rest * rest * rest * 0.0555041)
    }

    /// The exact percentile: the sample of rank ⌈fraction × count⌉ in sorted order.
    private func exact(_ sorted: [UInt64], _ fraction: Double) -> UInt64 {
        sorted[max(1, Int((fraction * Double(sorted.count)).rounded(.up))) - 1]
    }

    @Test func percentilesAreWithinOnePercentOfTheExactOnes() {
        for seed: UInt64 in [1, 2, 3] {
            let values = samples(count: 100_000, seed: seed)
            var histogram = LatencyHistogram()
            for value in values { histogram.record(value) }
            let sorted = values.sorted()
            for fraction in [0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 0.9999, 1] {
                let exactValue = Double(exact(sorted, fraction))
                let estimate = Double(histogram.percentile(fraction))
                #expect(abs(estimate - exactValue) <= exactValue * 0.01, "p\(fraction): \(estimate) vs \(exactValue)")
            }
            #expect(histogram.min == sorted.first)
            #expect(histogram.max == sorted.last)
            #expect(histogram.count == 100_000)
            #expect(histogram.sum == values.reduce(0, +))
            #expect(abs(histogram.mean - Double(values.reduce(0, +)) / 100_000) < 1e-6 * histogram.mean)
        }
    }

    @Test func smallValuesAreExact() {
        var histogram = LatencyHistogram()
        for value: UInt64 in [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5] { histogram.record(value) }
        #expect(histogram.p50 == 4)
        #expect(histogram.percentile(1) == 9)
        #expect(histogram.percentile(0) == 1)
    }

    @Test func namedPercentilesMatchTheirFractions() {
        var histogram = LatencyHistogram()
        for value in samples(count: 10_000, seed: 9) { histogram.record(value) }
        #expect(histogram.p50 == histogram.percentile(0.5))
        #expect(histogram.p95 == histogram.percentile(0.95))
        #expect(histogram.p99 == histogram.percentile(0.99))
        #expect(histogram.p999 == histogram.percentile(0.999))
        #expect(histogram.p50 <= histogram.p95 && histogram.p95 <= histogram.p99 && histogram.p99 <= histogram.p999)
    }

    @Test func mergeEqualsRecordingEverythingInOne() {
        let values = samples(count: 30_000, seed: 4)
        var whole = LatencyHistogram()
        var parts = [LatencyHistogram](repeating: LatencyHistogram(), count: 3)
        for (index, value) in values.enumerated() {
            whole.record(value)
            parts[index % 3].record(value)
        }
        var merged = LatencyHistogram()
        for part in parts { merged.merge(part) }
        merged.merge(LatencyHistogram())
        #expect(merged == whole)
        #expect(merged.p99 == whole.p99)
    }

    @Test func emptyHistogramReportsZeros() {
        let histogram = LatencyHistogram()
        #expect(histogram.count == 0)
        #expect(histogram.p99 == 0)
        #expect(histogram.mean == 0)
    }

    @Test func hugeValuesKeepAnExactMaximum() {
        var histogram = LatencyHistogram()
        histogram.record(.max)
        histogram.record(1 << 50)
        #expect(histogram.max == .max)
        #expect(histogram.percentile(1) == .max)
        #expect(histogram.min == 1 << 50)
    }
}
