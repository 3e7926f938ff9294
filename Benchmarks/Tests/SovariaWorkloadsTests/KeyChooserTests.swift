import Testing

@testable import SovariaWorkloads

@Suite struct KeyChooserTests {
    @Test func latestPicksRecentInserts() {
        let inserted: UInt64 = 10_000
        var chooser = KeyChooser(distribution: .latest, recordCount: inserted, expectedInserts: 0)
        var random = WorkloadRandom(seed: 21)
        let samples = 200_000
        var lastThreePercent = 0
        var newest = 0
        for _ in 0..<samples {
            let key = chooser.nextKeyNumber(insertedCount: inserted, using: &random)
            #expect(key < inserted)
            if key >= inserted - 300 { lastThreePercent += 1 }
            if key == inserted - 1 { newest += 1 }
        }
        // The newest 300 keys are the zipfian's top 300 ranks: ζ(300)/ζ(10 000), about two thirds.
        let expected = ZipfianGenerator.zeta(300, theta: 0.99) / ZipfianGenerator.zeta(10_000, theta: 0.99)
        let observed = Double(lastThreePercent) / Double(samples)
        #expect(observed > 0.5)
        #expect(abs(observed - expected) < 0.01, "\(observed) vs \(expected)")
        #expect(Double(newest) / Double(samples) > 0.09)
    }

    @Test func latestFollowsNewInserts() {
        var chooser = KeyChooser(distribution: .latest, recordCount: 1_000, expectedInserts: 0)
        var random = WorkloadRandom(seed: 22)
        var counts: [UInt64: Int] = [:]
        for _ in 0..<20_000 { counts[chooser.nextKeyNumber(insertedCount: 1_500, using: &random), default: 0] += 1 }
        let hottest = counts.max { $0.value < $1.value }!.key
        #expect(hottest == 1_499)
    }

    @Test func uniformIsRoughlyFlat() {
        var chooser = KeyChooser(distribution: .uniform, recordCount: 100, expectedInserts: 0)
        var random = WorkloadRandom(seed: 23)
        var counts = [Int](repeating: 0, count: 100)
        for _ in 0..<200_000 { counts[Int(chooser.nextKeyNumber(insertedCount: 100, using: &random))] += 1 }
        // 2,000 expected per key, standard deviation about 44: 15% is seven of them.
        for count in counts { #expect(abs(count - 2_000) < 300, "\(count)") }
    }

    @Test func uniformPicksOnlyLoadedRecords() {
        var chooser = KeyChooser(distribution: .uniform, recordCount: 10, expectedInserts: 100)
        var random = WorkloadRandom(seed: 24)
        for _ in 0..<1_000 { #expect(chooser.nextKeyNumber(insertedCount: 50, using: &random) < 10) }
    }

    @Test func zipfianNeverPicksKeysNotYetInserted() {
        var chooser = KeyChooser(distribution: .zipfian, recordCount: 100, expectedInserts: 1_000)
        var random = WorkloadRandom(seed: 25)
        var seen = Set<UInt64>()
        for _ in 0..<20_000 {
            let key = chooser.nextKeyNumber(insertedCount: 100, using: &random)
            #expect(key < 100)
            seen.insert(key)
        }
        #expect(seen.count > 50)
    }

    @Test func unscrambledZipfianFavoursKeyZero() {
        var chooser = KeyChooser(distribution: .unscrambledZipfian, recordCount: 1_000, expectedInserts: 0)
        var random = WorkloadRandom(seed: 26)
        var zero = 0
        for _ in 0..<100_000 where chooser.nextKeyNumber(insertedCount: 1_000, using: &random) == 0 { zero += 1 }
        let expected = 1 / ZipfianGenerator.zeta(1_000, theta: 0.99)
        #expect(abs(Double(zero) / 100_000 - expected) / expected < 0.05)
    }

    @Test func hotspotSendsMostPicksToTheHotSet() {
        var chooser = KeyChooser(distribution: .defaultHotspot, recordCount: 1_000, expectedInserts: 0)
        var random = WorkloadRandom(seed: 27)
        var hot = 0
        for _ in 0..<100_000 where chooser.nextKeyNumber(insertedCount: 1_000, using: &random) < 200 { hot += 1 }
        #expect(abs(Double(hot) / 100_000 - 0.8) < 0.01)
    }

    @Test func randomSourceIsDeterministicAndUnbiasedEnough() {
        var first = WorkloadRandom(seed: 99)
        var second = WorkloadRandom(seed: 99)
        var other = WorkloadRandom(seed: 100)
        let a = (0..<100).map { _ in first.next() }
        #expect(a == (0..<100).map { _ in second.next() })
        #expect(a != (0..<100).map { _ in other.next() })
        var random = WorkloadRandom(seed: 0)
        var sum = 0.0
        for _ in 0..<100_000 {
            let value = random.nextUnitDouble()
            #expect(value >= 0 && value < 1)
            sum += value
        }
        #expect(abs(sum / 100_000 - 0.5) < 0.01)
    }
}
