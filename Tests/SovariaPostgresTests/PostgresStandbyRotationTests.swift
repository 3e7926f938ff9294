import Testing

@testable import SovariaPostgres

/// The rules that leave a standby out of the reads and take it back, without a server: each
/// transition is given its moment.
@Suite struct PostgresStandbyRotationTests {
    private let start = ContinuousClock.now

    private func rotation() -> Rotation { Rotation() }

    /// A standby that answers but stays short of one floor (one following a primary that failed)
    /// is left out once it has been short of it for the bound; one read tries it again when its
    /// time is up, and it is left out again at once while it is still behind.
    @Test func aStandbyShortOfOneFloorPastTheBoundIsLeftOutAndTriedAgainByOneRead() {
        let rotation = rotation()
        #expect(rotation.answered(0, replayed: 10, floor: 100, at: start))
        // Within the bound, even with the floor moving on: still in the rotation, reads wait for it.
        #expect(rotation.answered(0, replayed: 20, floor: 200, at: start + .milliseconds(999)))
        #expect(rotation.takeTurn(0, at: start + .milliseconds(999)))
        #expect(!rotation.answered(0, replayed: 30, floor: 300, at: start + .seconds(1)))
        #expect(!rotation.takeTurn(0, at: start + .milliseconds(2_999)))
        #expect(rotation.takeTurn(1, at: start + .milliseconds(2_999)), "the other standby is not left out")
        // Its time is up: one read takes it, the others pass it by.
        #expect(rotation.takeTurn(0, at: start + .seconds(3)))
        #expect(!rotation.takeTurn(0, at: start + .seconds(3)))
        #expect(!rotation.answered(0, replayed: 40, floor: 300, at: start + .seconds(3)))
        #expect(!rotation.takeTurn(0, at: start + .milliseconds(4_999)))
        // Caught up when tried again: back in the rotation.
        #expect(rotation.takeTurn(0, at: start + .seconds(5)))
        #expect(rotation.answered(0, replayed: 300, floor: 300, at: start + .seconds(5)))
        #expect(rotation.takeTurn(0, at: start + .seconds(5)))
        #expect(rotation.value.standings[0] == .init())
    }

    /// A standby that keeps reaching the floor it was found short of, while writes keep raising the
    /// floor past it, is never left out however long that goes on.
    @Test func aStandbyThatKeepsReachingTheFloorItWasShortOfStaysIn() {
        let rotation = rotation()
        for step in 1...100 {
            let floor = UInt64(step * 100)
            #expect(
                rotation.answered(0, replayed: floor - 100, floor: floor, at: start + .milliseconds(step * 400)),
                "step \(step)")
            #expect(rotation.takeTurn(0, at: start + .milliseconds(step * 400)))
        }
        // The floor it was last short of, set at the last step; short of it past the bound: out.
        #expect(!rotation.answered(0, replayed: 9_950, floor: 10_000, at: start + .milliseconds(41_000)))
    }

    /// A standby that fails is left out until one read tries it again; an answer takes it back.
    @Test func aFailedStandbyIsLeftOutUntilOneReadTriesItAgain() {
        let rotation = rotation()
        rotation.failed(1, at: start)
        #expect(!rotation.takeTurn(1, at: start + .milliseconds(1_999)))
        #expect(rotation.takeTurn(0, at: start))
        #expect(rotation.takeTurn(1, at: start + .seconds(2)))
        #expect(!rotation.takeTurn(1, at: start + .seconds(2)))
        #expect(rotation.answered(1, replayed: 5, floor: 5, at: start + .seconds(2)))
        #expect(rotation.takeTurn(1, at: start + .seconds(2)))
    }

    /// The standby the store's connections to the primary reached (promoted after a failover) is
    /// never taken as a standby, however long; when writes go elsewhere again, it is.
    @Test func theStandbyTakingWritesIsNeverTakenAsAStandby() {
        let rotation = rotation()
        rotation.failed(0, at: start)  // it answered as a primary before the store knew
        rotation.takesWrites(0)
        #expect(rotation.value.writer == 0)
        for seconds in [0, 2, 10, 3_600] {
            #expect(!rotation.takeTurn(0, at: start + .seconds(seconds)))
            #expect(rotation.takeTurn(1, at: start + .seconds(seconds)))
        }
        rotation.takesWrites(nil)
        #expect(rotation.takeTurn(0, at: start + .seconds(3_600)))
    }
}

/// Two standbys' rotation (retried after 2 s, left out after 1 s behind) in a box, so `#expect` can
/// call its transitions (it cannot call a mutating method of a local).
private final class Rotation {
    var value = PostgresStandbyRotation(count: 2, retryInterval: .seconds(2), behindBound: .seconds(1))

    func takeTurn(_ index: Int, at now: ContinuousClock.Instant) -> Bool { value.takeTurn(index, at: now) }

    func failed(_ index: Int, at now: ContinuousClock.Instant) { value.failed(index, at: now) }

    func answered(_ index: Int, replayed: UInt64, floor: UInt64, at now: ContinuousClock.Instant) -> Bool {
        value.answered(index, replayed: replayed, floor: floor, at: now)
    }

    func takesWrites(_ index: Int?) { value.takesWrites(index) }
}
