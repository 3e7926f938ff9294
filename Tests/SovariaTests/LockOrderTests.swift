import Foundation
import SovariaPlumbing
import Testing

/// The package's one lock order (SovariaPlumbing/LockOrder.swift) and the thread-wide check that
/// keeps it: across types, a lock of a lower rank taken inside a higher one stops the process.
@Suite struct LockOrderTests {
    @Test func everyRankIsListedOnceInTheOrderAThreadTakesThem() {
        let levels = LockRank.order.map(\.level)
        #expect(levels == levels.sorted() && Set(levels).count == levels.count, "\(levels)")
        #expect(Set(LockRank.order.map(\.name)).count == LockRank.order.count)
    }

    #if DEBUG
        @Test func locksOfTwoTypesTakenInTheOrderDoNotStopTheProcess() {
            let controller = RankedMutex(LockRank.offlineState, 0)
            let queue = RankedMutex(LockRank.writeQueueState, 1)
            let sum = controller.withLock { outer in queue.withLock { inner in outer + inner } }
            #expect(sum == 1)
        }

        @Test func aLowerRankOfAnotherTypeTakenInsideAHigherOneStopsTheProcess() async {
            let result = await #expect(processExitsWith: .failure, observing: [\.standardErrorContent]) {
                let controller = RankedMutex(LockRank.offlineState, 0)
                let queue = RankedMutex(LockRank.writeQueueState, 1)
                _ = queue.withLock { _ in controller.withLock { $0 } }
            }
            let stderr = String(decoding: result?.standardErrorContent ?? [], as: UTF8.self)
            #expect(
                stderr.contains(
                    "Lock order: SovariaOffline.state (rank 100) taken while holding WriteQueue.state (rank 110)"))
        }
    #endif
}
