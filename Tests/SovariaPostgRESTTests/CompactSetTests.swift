import SovariaTestKit
import Testing

@testable import SovariaPostgREST

/// The set `TableReach` indexes rows with: the same elements as a `Set` given the same inserts
/// and removes, each once, whether the one held inline is removed or not.
@Suite struct CompactSetTests {
    @Test(arguments: Array(1...10) as [UInt64])
    func holdsWhatASetHoldsAfterTheSameInsertsAndRemoves(seed: UInt64) {
        var random = SplitMix(seed: seed)
        var compact = CompactSet<Int>()
        var model = Set<Int>()
        for _ in 0..<400 {
            let element = Int.random(in: 0..<6, using: &random)
            if Bool.random(using: &random) {
                compact.insert(element)
                model.insert(element)
            } else {
                compact.remove(element)
                model.remove(element)
            }
            var seen: [Int] = []
            compact.forEach { seen.append($0) }
            #expect(seen.count == Set(seen).count, "each element once")
            #expect(Set(seen) == model)
            #expect(compact.count == model.count && compact.isEmpty == model.isEmpty)
        }
    }

    @Test func theElementHeldInlineGivesWayToAnotherWhenRemoved() {
        var set = CompactSet<Int>()
        set.insert(1)
        set.insert(2)
        set.insert(1)
        #expect(set.count == 2)
        set.remove(1)
        var left: [Int] = []
        set.forEach { left.append($0) }
        #expect(left == [2] && !set.isEmpty)
        set.remove(2)
        #expect(set.isEmpty && set.count == 0)
        set.remove(3)
        #expect(set.isEmpty)
    }
}
