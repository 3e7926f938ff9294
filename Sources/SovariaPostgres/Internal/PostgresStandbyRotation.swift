/// Which standbys a store's reads may use: the rules, as a value whose transitions each take the
/// moment they happen at, so they are tested without a server or a clock
/// (``PostgresStandbyReads`` holds it and drives it).
///
/// Possible states of one standby:
/// 1. In the rotation, caught up (or never found behind): reads use it.
/// 2. In the rotation, behind: a read found its replay short of the floor, and it has not reached
///    that floor since. Reads still try it, and wait up to `standbyWait` for it.
/// 3. Left out until a moment: it failed (an error, it answered as a primary, or it follows
///    another timeline than the primary's), it stayed short of one floor for ``behindBound`` or
///    longer (a standby following a dead primary, one replaying late), or ``vainWaitsBound`` reads
///    in a row waited the whole `standbyWait` for it in vain (one lagging steadily by more than
///    the wait). Reads pass it by, so it costs them nothing.
/// 4. Left out, its time up: the next read alone takes it, and it stays left out for the others
///    until that read's answer decides (back to 1, 2, or 3 with a new time).
/// 5. Taking writes: the store's latest connection to the primary went to it (a standby promoted
///    after a failover, or the primary among the hosts of a multi-host conninfo). It is never
///    read as a standby: its reads are the primary's.
///
/// Behind is measured against one floor, not the moving one: a standby that reaches the floor it
/// was found short of is behind again only from then on. So a standby that keeps up within
/// milliseconds while writes keep raising the floor is never left out; one whose replay stays
/// short of a floor for the bound is.
///
/// Every turn is numbered. An answer of a turn given out before the standby's latest leave-out
/// changes nothing: it was sent before whatever left the standby out, so it cannot take it back.
struct PostgresStandbyRotation: Sendable {
    /// The state of one standby.
    struct Standing: Sendable, Equatable {
        /// Until when it is left out (3, 4); `nil` while in the rotation.
        var leftOutUntil: ContinuousClock.Instant?
        /// The first floor it was found short of and since when (2); `nil` once it reached it.
        var behind: Behind?
        /// Reads in a row that waited the whole `standbyWait` for it and went to the primary.
        var vainWaits = 0
        /// The newest turn given out when it was last left out: answers of turns up to this one
        /// are older than the leave-out.
        var leftOutAfterTurn = 0
    }

    /// A floor a standby was found short of, and when.
    struct Behind: Sendable, Equatable {
        let floor: UInt64
        let since: ContinuousClock.Instant
    }

    /// A read's turn on one standby: its answer is given back with it.
    struct Turn: Sendable, Equatable {
        let index: Int
        let number: Int
    }

    /// Each standby's state, in the store's order.
    private(set) var standings: [Standing]
    /// The standby taking writes (5), by index; `nil` when it is the named primary (or unknown).
    private(set) var writer: Int?
    /// The number of the latest turn given out.
    private(set) var turnsGiven = 0
    /// How long a standby is left out before one read tries it again.
    let retryInterval: Duration
    /// How long a standby may stay short of one floor before it is left out.
    let behindBound: Duration
    /// How many reads in a row may wait the whole `standbyWait` for a standby before it is left out.
    let vainWaitsBound: Int

    init(count: Int, retryInterval: Duration, behindBound: Duration, vainWaitsBound: Int) {
        standings = Array(repeating: Standing(), count: count)
        self.retryInterval = retryInterval
        self.behindBound = behindBound
        self.vainWaitsBound = max(1, vainWaitsBound)
    }

    /// A turn on standby `index` at `now`, or `nil` when a read may not use it. A standby left out
    /// whose time is up is given to this read alone: it stays left out for the others until it
    /// answers.
    mutating func takeTurn(_ index: Int, at now: ContinuousClock.Instant) -> Turn? {
        guard writer != index else { return nil }
        if let until = standings[index].leftOutUntil {
            guard now >= until else { return nil }
            standings[index].leftOutUntil = now + retryInterval
        }
        turnsGiven += 1
        return Turn(index: index, number: turnsGiven)
    }

    /// The standby of `turn` failed at `now` (an error, it answered as a primary, or it follows
    /// another timeline): left out for ``retryInterval``, whatever turn failed.
    mutating func failed(_ turn: Turn, at now: ContinuousClock.Instant) {
        leaveOut(turn.index, at: now)
    }

    /// The standby of `turn` answered at `now` that it has replayed up to `replayed`, while reads
    /// need `floor`. Returns whether it stays in the rotation: `false` when it has been short of
    /// one floor for ``behindBound`` or longer (it is then left out for ``retryInterval``), or
    /// when the turn is older than its latest leave-out (the answer then changes nothing).
    mutating func answered(
        _ turn: Turn, replayed: UInt64, floor: UInt64, at now: ContinuousClock.Instant
    ) -> Bool {
        let index = turn.index
        guard turn.number > standings[index].leftOutAfterTurn else { return standings[index].leftOutUntil == nil }
        var standing = standings[index]
        standing.leftOutUntil = nil
        guard replayed < floor else {
            standing.behind = nil
            standing.vainWaits = 0
            standings[index] = standing
            return true
        }
        guard let behind = standing.behind, replayed < behind.floor else {
            // Newly behind, or it reached the floor it was short of: behind from now, on this floor.
            standing.behind = Behind(floor: floor, since: now)
            standings[index] = standing
            return true
        }
        standings[index] = standing
        guard now - behind.since >= behindBound else { return true }
        leaveOut(index, at: now)
        return false
    }

    /// A read waited the whole `standbyWait` for the standby of `turn` (its latest turn in that
    /// wait), which stayed short of the floor, and went to the primary. Returns whether it stays
    /// in the rotation: `false` once ``vainWaitsBound`` reads in a row did (it is then left out
    /// for ``retryInterval``). An answer at or past the floor starts the count again.
    mutating func waitedInVain(_ turn: Turn, at now: ContinuousClock.Instant) -> Bool {
        let index = turn.index
        guard turn.number > standings[index].leftOutAfterTurn else { return standings[index].leftOutUntil == nil }
        standings[index].vainWaits += 1
        guard standings[index].vainWaits >= vainWaitsBound else { return true }
        leaveOut(index, at: now)
        return false
    }

    /// The store's connections to the primary now go to standby `index` (`nil`: to a server that
    /// is not one of the standbys, the named primary).
    mutating func takesWrites(_ index: Int?) {
        writer = index
    }

    private mutating func leaveOut(_ index: Int, at now: ContinuousClock.Instant) {
        standings[index].leftOutUntil = now + retryInterval
        standings[index].leftOutAfterTurn = turnsGiven
        standings[index].vainWaits = 0
    }
}
