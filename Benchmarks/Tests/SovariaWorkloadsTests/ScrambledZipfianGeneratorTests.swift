import Testing

@testable import SovariaWorkloads

@Suite struct ScrambledZipfianGeneratorTests {
    private let itemCount: UInt64 = 10_000
    private let samples = 400_000

    private func counts(seed: UInt64) -> [Int] {
        var generator = ScrambledZipfianGenerator(itemCount: itemCount)
        var random = WorkloadRandom(seed: seed)
        var counts = [Int](repeating: 0, count: Int(itemCount))
        for _ in 0..<samples {
            let item = generator.next(using: &random)
            counts[Int(item)] += 1
        }
        return counts
    }

    @Test func spreadsPopularRanksOverTheKeySpace() {
        let counts = counts(seed: 11)
        let top = counts.indices.sorted { counts[$0] > counts[$1] }.prefix(10).sorted()
        // The popular items are where FNV-64 sends the top ranks, not keys 0, 1, 2…
        #expect(top.first != 0 || top.last! > 100)
        for (lower, upper) in zip(top, top.dropFirst()) { #expect(upper - lower > 1, "adjacent hot items \(top)") }
        #expect(top.last! - top.first! > Int(itemCount) / 4, "hot items bunched: \(top)")
        // The most popular item is rank 0's.
        let hottest = counts.indices.max { counts[$0] < counts[$1] }!
        #expect(hottest == Int(ScrambledZipfianGenerator.item(forRank: 0, itemCount: itemCount)))
    }

    @Test func keepsTheZipfianFrequencyProfile() {
        let counts = counts(seed: 12)
        let sorted = counts.sorted(by: >)
        // The top items carry the top ranks' probabilities (over YCSB's 10¹⁰ items, ζ ≈ 26.47;
        // ranks 0 and 1 are the exact ones of Gray's draw).
        for rank in 0..<2 {
            let expected = ScrambledZipfianGenerator.probability(ofRank: UInt64(rank))
            let observed = Double(sorted[rank]) / Double(samples)
            #expect(abs(observed - expected) / expected < 0.05, "rank \(rank): \(observed) vs \(expected)")
        }
        // Same profile as YCSB's: the hottest 1% of items take far more than 1% of the picks.
        let topPercent = Double(sorted.prefix(Int(itemCount) / 100).reduce(0, +)) / Double(samples)
        #expect(topPercent > 0.2)
    }

    @Test func staysInRange() {
        var generator = ScrambledZipfianGenerator(itemCount: 7)
        var random = WorkloadRandom(seed: 13)
        for _ in 0..<10_000 { #expect(generator.next(using: &random) < 7) }
    }

    @Test func hashMatchesYCSB() {
        // YCSB's Utils.fnvhash64(0) and (1): FNV-1a over eight little-endian bytes, Math.abs.
        #expect(YCSBHash.fnv64(0) == fnv1a(bytes: [0, 0, 0, 0, 0, 0, 0, 0]))
        #expect(YCSBHash.fnv64(1) == fnv1a(bytes: [1, 0, 0, 0, 0, 0, 0, 0]))
        #expect(YCSBHash.fnv64(0x0102) == fnv1a(bytes: [2, 1, 0, 0, 0, 0, 0, 0]))
        for value: UInt64 in [0, 1, 42, 1 << 40, .max] { #expect(YCSBHash.fnv64(value) < 1 << 63) }
    }

    /// FNV-1a written out byte by byte, then Java's `Math.abs`.
    private func fnv1a(bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 14_695_981_039_346_656_037
        for byte in bytes {
            hash ^= UInt64(byte)
            hash = hash &* 1_099_511_628_211
        }
        return Int64(bitPattern: hash).magnitude
    }
}
