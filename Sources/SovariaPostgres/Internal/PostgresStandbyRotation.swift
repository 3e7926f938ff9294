/// Which standbys a store's reads may use: the rules, as a value whose transitions each take the
/// moment they happen at, so they are tested without a server or a clock
/// (``PostgresStandbyReads`` holds it and drives it).
///
/// Possible states of one standby:
/// 1. In the rotation, caught up (or never found behind): reads use it.
/// 2. In the rotation, behind: a read found its replay short of the floor, and it has not reached
///    that floor since. Reads still try it, and wait up to `standbyWait` for it.
/// 3. Left out until a moment: it failed (an error, or it answered as a primary), or it stayed
///    short of one floor for ``behindBound`` or longer (a standby following a dead primary, one
///    replaying late). Reads pass it by, so it costs them nothing.
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
struct PostgresStandbyRotation: Sendable {
    /// The state of one standby.
    struct Standing: Sendable, Equatable {
        /// Until when it is left out (3, 4); `nil` while in the rotation.
        var leftOutUntil: ContinuousClock.Instant?
        /// The first floor it was found short of and since when (2); `nil` once it reached it.
        var behind: Behind?
    }

    /// A floor a standby was found short of, and when.
    struct Behind: Sendable, Equatable {
        let floor: UInt64
        let since: ContinuousClock.Instant
    }

    /// Each standby's state, in the store's order.
    private(set) var standings: [Standing]
    /// The standby taking writes (5), by index; `nil` when it is the named primary (or unknown).
    private(set) var writer: Int?
    /// How long a standby is left out before one read tries it again.
    let retryInterval: Duration
    /// How long a standby may stay short of one floor before it is left out.
    let behindBound: Duration

    init(count: Int, retryInterval: Duration, behindBound: Duration) {
        standings = Array(repeating: Standing(), count: count)
        self.retryInterval = retryInterval
        self.behindBound = behindBound
    }

    /// Whether a read may use standby `index` at `now`. A standby left out whose time is up is
    /// given to this read alone: it stays left out for the others until it answers.
    mutating func takeTurn(_ index: Int, at now: ContinuousClock.Instant) -> Bool {
        guard writer != index else { return false }
        guard let until = standings[index].leftOutUntil else { return true }
        guard now >= until else { return false }
        standings[index].leftOutUntil = now + retryInterval
        return true
    }

    /// Standby `index` failed at `now` (an error, or it answered as a primary): left out for
    /// ``retryInterval``.
    mutating func failed(_ index: Int, at now: ContinuousClock.Instant) {
        standings[index].leftOutUntil = now + retryInterval
    }

    /// Standby `index` answered at `now` that it has replayed up to `replayed`, while reads need
    /// `floor`. Returns whether it stays in the rotation: `false` when it has been short of one
    /// floor for ``behindBound`` or longer (it is then left out for ``retryInterval``).
    mutating func answered(
        _ index: Int, replayed: UInt64, floor: UInt64, at now: ContinuousClock.Instant
    ) -> Bool {
        var standing = standings[index]
        defer { standings[index] = standing }
        standing.leftOutUntil = nil
        guard replayed < floor else {
            standing.behind = nil
            return true
        }
        guard let behind = standing.behind, replayed < behind.floor else {
            // Newly behind, or it reached the floor it was short of: behind from now, on this floor.
            standing.behind = Behind(floor: floor, since: now)
            return true
        }
        guard now - behind.since >= behindBound else { return true }
        standing.leftOutUntil = now + retryInterval
        return false
    }

    /// The store's connections to the primary now go to standby `index` (`nil`: to a server that
    /// is not one of the standbys, the named primary).
    mutating func takesWrites(_ index: Int?) {
        writer = index
    }
}
