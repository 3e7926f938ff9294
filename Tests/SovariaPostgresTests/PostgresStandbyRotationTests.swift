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
    @Test func aStandbyShortOfOneFloorPastTheBoundIsLeftOutAndTriedAgainByOneRead() throws {
        let rotation = rotation()
        #expect(rotation.answered(0, replayed: 10, floor: 100, at: start))
        // Within the bound, even with the floor moving on: still in the rotation, reads wait for it.
        #expect(rotation.answered(0, replayed: 20, floor: 200, at: start + .milliseconds(999)))
        #expect(rotation.takeTurn(0, at: start + .milliseconds(999)) != nil)
        #expect(!rotation.answered(0, replayed: 30, floor: 300, at: start + .seconds(1)))
        #expect(rotation.takeTurn(0, at: start + .milliseconds(2_999)) == nil)
        #expect(rotation.takeTurn(1, at: start + .milliseconds(2_999)) != nil, "the other standby is not left out")
        // Its time is up: one read takes it, the others pass it by.
        let retry = try #require(rotation.takeTurn(0, at: start + .seconds(3)))
        #expect(rotation.takeTurn(0, at: start + .seconds(3)) == nil)
        #expect(!rotation.answered(retry, replayed: 40, floor: 300, at: start + .seconds(3)))
        #expect(rotation.takeTurn(0, at: start + .milliseconds(4_999)) == nil)
        // Caught up when tried again: back in the rotation.
        let again = try #require(rotation.takeTurn(0, at: start + .seconds(5)))
        #expect(rotation.answered(again, replayed: 300, floor: 300, at: start + .seconds(5)))
        #expect(rotation.takeTurn(0, at: start + .seconds(5)) != nil)
        #expect(rotation.value.standings[0].leftOutUntil == nil)
        #expect(rotation.value.standings[0].behind == nil)
    }

    /// A standby that keeps reaching the floor it was found short of, while writes keep raising the
    /// floor past it, is not left out for the time it is behind, however long that goes on (so
    /// long as no read waits the whole wait for it: see the next test).
    @Test func aStandbyThatKeepsReachingTheFloorItWasShortOfStaysIn() {
        let rotation = rotation()
        for step in 1...100 {
            let floor = UInt64(step * 100)
            #expect(
                rotation.answered(0, replayed: floor - 100, floor: floor, at: start + .milliseconds(step * 400)),
                "step \(step)")
            #expect(rotation.takeTurn(0, at: start + .milliseconds(step * 400)) != nil)
        }
        // The floor it was last short of, set at the last step; short of it past the bound: out.
        #expect(!rotation.answered(0, replayed: 9_950, floor: 10_000, at: start + .milliseconds(41_000)))
    }

    /// A standby lagging steadily by more than the wait (it reaches each floor, but later than a
    /// read waits, and sooner than the time bound): the third read in a row that waits the whole
    /// wait for it leaves it out, though its clock never passed the time bound. An answer at the
    /// floor in between starts the count again.
    @Test func aStandbyThatMakesReadsWaitTheWholeWaitRepeatedlyIsLeftOut() throws {
        let rotation = rotation()
        var now = start
        /// One read: the standby short of a new floor, polled through the wait, still short.
        func readWaitsInVain(_ step: Int) throws -> Bool {
            let floor = UInt64(step * 100)
            let turn = try #require(rotation.takeTurn(0, at: now))
            #expect(rotation.answered(turn, replayed: floor - 100, floor: floor, at: now))
            now += .milliseconds(100)  // the whole standbyWait
            #expect(rotation.answered(turn, replayed: floor - 50, floor: floor, at: now))
            let stays = rotation.waitedInVain(turn, at: now)
            now += .milliseconds(300)  // it reaches that floor before the next read's
            return stays
        }
        #expect(try readWaitsInVain(1))
        #expect(try readWaitsInVain(2))
        // Caught up at one read: the count starts again.
        let caughtUp = try #require(rotation.takeTurn(0, at: now))
        #expect(rotation.answered(caughtUp, replayed: 300, floor: 300, at: now))
        #expect(try readWaitsInVain(4))
        #expect(try readWaitsInVain(5))
        #expect(!(try readWaitsInVain(6)), "the third read in a row that waited in vain")
        #expect(rotation.takeTurn(0, at: now) == nil)
        #expect(rotation.takeTurn(1, at: now) != nil, "the other standby is not left out")
        // Left out for the retry interval from the moment it was.
        #expect(rotation.takeTurn(0, at: now - .milliseconds(300) + .seconds(2)) != nil)
    }

    /// A read's answer that comes back after a newer read left the standby out (its connection
    /// failed) does not take it back into the rotation; the answer of a turn taken after the
    /// leave-out does.
    @Test func aLateAnswerDoesNotUndoANewerLeaveOut() throws {
        let rotation = rotation()
        let slow = try #require(rotation.takeTurn(0, at: start))
        let failing = try #require(rotation.takeTurn(0, at: start))
        rotation.failed(failing, at: start + .milliseconds(10))
        #expect(!rotation.answered(slow, replayed: 100, floor: 100, at: start + .milliseconds(20)))
        #expect(rotation.takeTurn(0, at: start + .milliseconds(20)) == nil, "still left out")
        #expect(!rotation.waitedInVain(slow, at: start + .milliseconds(20)))
        #expect(rotation.value.standings[0].vainWaits == 0)
        #expect(rotation.takeTurn(0, at: start + .milliseconds(2_009)) == nil)
        // Its time up: the answer of the turn taken now counts.
        let retry = try #require(rotation.takeTurn(0, at: start + .milliseconds(2_010)))
        #expect(rotation.answered(retry, replayed: 100, floor: 100, at: start + .milliseconds(2_010)))
        #expect(rotation.takeTurn(0, at: start + .milliseconds(2_010)) != nil)
    }

    /// A standby that fails is left out until one read tries it again; an answer takes it back.
    @Test func aFailedStandbyIsLeftOutUntilOneReadTriesItAgain() throws {
        let rotation = rotation()
        rotation.failed(try #require(rotation.takeTurn(1, at: start)), at: start)
        #expect(rotation.takeTurn(1, at: start + .milliseconds(1_999)) == nil)
        #expect(rotation.takeTurn(0, at: start) != nil)
        let retry = try #require(rotation.takeTurn(1, at: start + .seconds(2)))
        #expect(rotation.takeTurn(1, at: start + .seconds(2)) == nil)
        #expect(rotation.answered(retry, replayed: 5, floor: 5, at: start + .seconds(2)))
        #expect(rotation.takeTurn(1, at: start + .seconds(2)) != nil)
    }

    /// The standby the store's connections to the primary reached (promoted after a failover) is
    /// never taken as a standby, however long; when writes go elsewhere again, it is.
    @Test func theStandbyTakingWritesIsNeverTakenAsAStandby() throws {
        let rotation = rotation()
        // It answered as a primary before the store knew.
        rotation.failed(try #require(rotation.takeTurn(0, at: start)), at: start)
        rotation.takesWrites(0)
        #expect(rotation.value.writer == 0)
        for seconds in [0, 2, 10, 3_600] {
            #expect(rotation.takeTurn(0, at: start + .seconds(seconds)) == nil)
            #expect(rotation.takeTurn(1, at: start + .seconds(seconds)) != nil)
        }
        rotation.takesWrites(nil)
        #expect(rotation.takeTurn(0, at: start + .seconds(3_600)) != nil)
    }
}

/// Two standbys' rotation (retried after 2 s, left out after 1 s behind or 3 reads in a row that
/// waited in vain) in a box, so `#expect` can call its transitions (it cannot call a mutating
/// method of a local).
private final class Rotation {
    var value = PostgresStandbyRotation(
        count: 2, retryInterval: .seconds(2), behindBound: .seconds(1), vainWaitsBound: 3)

    func takeTurn(_ index: Int, at now: ContinuousClock.Instant) -> PostgresStandbyRotation.Turn? {
        value.takeTurn(index, at: now)
    }

    /// The answer of a turn taken at `now` (the standby must be in the rotation then).
    func answered(_ index: Int, replayed: UInt64, floor: UInt64, at now: ContinuousClock.Instant) -> Bool {
        guard let turn = value.takeTurn(index, at: now) else {
            Issue.record("standby \(index) is left out: no read may take it")
            return false
        }
        return value.answered(turn, replayed: replayed, floor: floor, at: now)
    }

    func answered(
        _ turn: PostgresStandbyRotation.Turn, replayed: UInt64, floor: UInt64, at now: ContinuousClock.Instant
    ) -> Bool {
        value.answered(turn, replayed: replayed, floor: floor, at: now)
    }

    func waitedInVain(_ turn: PostgresStandbyRotation.Turn, at now: ContinuousClock.Instant) -> Bool {
        value.waitedInVain(turn, at: now)
    }

    func failed(_ turn: PostgresStandbyRotation.Turn, at now: ContinuousClock.Instant) { value.failed(turn, at: now) }

    func takesWrites(_ index: Int?) { value.takesWrites(index) }
}
