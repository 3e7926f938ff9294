import Testing

@testable import SovariaWorkloads

@Suite struct ZipfianGeneratorTests {
    /// Draws `samples` ranks and counts each.
    private func histogram(_ generator: inout ZipfianGenerator, samples: Int, seed: UInt64) -> [Int] {
        var random = WorkloadRandom(seed: seed)
        var counts = [Int](repeating: 0, count: Int(generator.itemCount))
        for _ in 0..<samples { counts[Int(generator.next(using: &random))] += 1 }
        return counts
    }

    @Test func topRankFrequencyMatchesClosedForm() {
        var generator = ZipfianGenerator(itemCount: 10_000)
        let samples = 400_000
        let counts = histogram(&generator, samples: samples, seed: 1)
        // P(rank 0) = 1/ζ(n, θ), P(rank 1) = 1/(2^θ ζ(n, θ)): the two exact cases of Gray's draw.
        for rank in 0..<2 {
            let expected = generator.probability(ofRank: UInt64(rank))
            let observed = Double(counts[rank]) / Double(samples)
            #expect(abs(observed - expected) / expected < 0.03, "rank \(rank): \(observed) vs \(expected)")
        }
        #expect(abs(generator.zetaN - ZipfianGenerator.zeta(10_000, theta: 0.99)) < 1e-9)
    }

    @Test func topOnePercentShareMatchesClosedForm() {
        var generator = ZipfianGenerator(itemCount: 10_000)
        let samples = 400_000
        let counts = histogram(&generator, samples: samples, seed: 2)
        // Share of the 100 most popular ranks: ζ(100, θ) / ζ(10 000, θ).
        // Gray's draw approximates ranks past 1 (as YCSB's does): within 2 points of the exact
        // zipfian, and within sampling noise of the approximation's own closed form.
        let expected = ZipfianGenerator.zeta(100, theta: 0.99) / generator.zetaN
        let observed = Double(counts[0..<100].reduce(0, +)) / Double(samples)
        #expect(abs(observed - expected) < 0.02, "top 1%: \(observed) vs \(expected)")
        #expect(abs(observed - generator.approximateShare(ofTopRanks: 100)) < 0.004)
        // And the shape of the tail: ranks 100..<1000 hold about ζ(1000) − ζ(100) of the mass.
        let tailExpected =
            (ZipfianGenerator.zeta(1_000, theta: 0.99) - ZipfianGenerator.zeta(100, theta: 0.99)) / generator.zetaN
        let tailObserved = Double(counts[100..<1_000].reduce(0, +)) / Double(samples)
        #expect(abs(tailObserved - tailExpected) < 0.01)
        let tailApproximation =
            generator.approximateShare(ofTopRanks: 1_000) - generator.approximateShare(ofTopRanks: 100)
        #expect(abs(tailObserved - tailApproximation) < 0.004)
    }

    @Test func growingItemCountExtendsZetaAndKeepsTheDistribution() {
        var generator = ZipfianGenerator(itemCount: 1_000)
        var random = WorkloadRandom(seed: 3)
        // Grow one item at a time, as inserts do.
        for count in 1_001...5_000 { _ = generator.next(itemCount: UInt64(count), using: &random) }
        #expect(generator.itemCount == 5_000)
        #expect(abs(generator.zetaN - ZipfianGenerator.zeta(5_000, theta: 0.99)) < 1e-9)
        let counts = histogram(&generator, samples: 300_000, seed: 4)
        let expectedTop = generator.probability(ofRank: 0)
        #expect(abs(Double(counts[0]) / 300_000 - expectedTop) / expectedTop < 0.03)
        let topPercent = Double(counts[0..<50].reduce(0, +)) / 300_000
        #expect(abs(topPercent - ZipfianGenerator.zeta(50, theta: 0.99) / generator.zetaN) < 0.02)
        #expect(abs(topPercent - generator.approximateShare(ofTopRanks: 50)) < 0.004)
    }

    @Test func shrinkingItemCountSumsZetaAgain() {
        var generator = ZipfianGenerator(itemCount: 2_000)
        generator.resize(to: 500)
        #expect(abs(generator.zetaN - ZipfianGenerator.zeta(500, theta: 0.99)) < 1e-12)
        var random = WorkloadRandom(seed: 5)
        for _ in 0..<10_000 { #expect(generator.next(using: &random) < 500) }
    }

    @Test func singleItemAlwaysGivesRankZero() {
        var generator = ZipfianGenerator(itemCount: 1)
        var random = WorkloadRandom(seed: 6)
        for _ in 0..<1_000 { #expect(generator.next(using: &random) == 0) }
    }
}
