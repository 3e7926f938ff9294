import Foundation
import Sovaria
import Synchronization

/// Sends a store's reads to its standbys by its ``PostgresOfflineStore/ReadPolicy``, keeping
/// read-your-writes and monotonic reads across the store instance.
///
/// **The floor.** The store keeps one log position, the floor: the newest of the primary's
/// position when the store opened, the positions its acknowledged writes reached on the primary,
/// and the states its reads answered from. A read on a standby is one pipeline (one round trip):
/// the standby's replay position and a sync (its own implicit transaction, so that whatever the
/// server's default isolation, the read's snapshot is taken after it), then the read and the replay
/// position again. The read's answer is used only when the first position is at or past the floor
/// (the snapshot then holds every write the floor stands for), and the second position raises the
/// floor (the snapshot is no newer than it), so no later read answers from an older state. A read
/// on the primary is followed, in its pipeline, by the primary's insert position, which raises the
/// floor the same way.
///
/// **The timeline.** A position means something only on one history: after a failover, the
/// promoted standby writes a new timeline from where its replay ended, and a standby still
/// following the old primary may have replayed further on the old one, past positions the new
/// primary gives the store's writes, without those writes. So the floor carries the primary's
/// timeline (learned when the servers are checked and on every new connection to the primary; a
/// new timeline starts the floor again at the new primary's position, as everything that
/// survived the failover is before it), and a standby counts only while it follows that timeline
/// (the timeline of the WAL it receives, else of its last restartpoint). A connection learns its
/// standby's timeline when it opens, and again only when the primary's timeline is not the one
/// it knows: a standby's timeline changes only when a promotion makes a new one, and a promotion
/// the store has not seen yet makes no position of the store's floor unsafe on it (the new
/// timeline shares the history up to its start). A standby on another timeline is left out as a
/// failed one is; the read that finds it so goes on to the next server.
///
/// **Choosing a server.** Standbys take turns, by the rules of ``PostgresStandbyRotation``. One
/// behind the floor is passed over for the next; when none has caught up, the read polls the one
/// closest to it for up to ``PostgresOfflineStore/Configuration/standbyWait``, then goes to the
/// primary. A standby that fails (down, restarting, of another role now), or that stays short of
/// one floor for ``behindBound`` (following a dead primary, replaying late), is left out for
/// ``retryInterval``, after which one read alone tries it again (the others pass it by
/// meanwhile); so is one that made ``vainWaitsBound`` reads in a row wait the whole
/// `standbyWait` in vain (lagging steadily by more than the wait). Any error there sends the read
/// on, so none reaches the caller. A standby that
/// answers as a primary was promoted: it is left out the same way until the primary's
/// connections find it (they connect to whichever server takes writes); from then on it is out
/// of the rotation and its reads are the primary's.
final class PostgresStandbyReads: Sendable {
    /// One standby: its connections and how many reads it answered.
    final class Standby: Sendable {
        let server: PostgresServer
        let pool: PostgresPool
        /// Reads it answered.
        let answered = Atomic<Int>(0)

        init(server: PostgresServer, pool: PostgresPool) {
            self.server = server
            self.pool = pool
        }
    }

    /// How long a standby that failed or stayed behind is left out before one read tries it again.
    static let retryInterval: Duration = .seconds(2)
    /// How long a standby may stay short of one floor before it is left out: ten waits of the
    /// default `standbyWait`, and far more than a standby that keeps up needs.
    static let behindBound: Duration = .seconds(1)
    /// How many reads in a row may wait the whole `standbyWait` for a standby that stays short of
    /// the floor before it is left out: a standby lagging by more than the wait costs three reads
    /// the wait, not every read.
    static let vainWaitsBound = 3

    let standbys: [Standby]
    let policy: PostgresOfflineStore.ReadPolicy
    private let wait: Duration
    private let floor = Mutex(PostgresReadFloor())
    private let rotation: Mutex<PostgresStandbyRotation>
    /// The clock of the rotation's rules (leaving out, trying again); the wait for a standby to
    /// catch up is always on `ContinuousClock`.
    private let now: @Sendable () -> ContinuousClock.Instant
    private let turn = Atomic<Int>(0)
    /// Where the store's latest connection to the primary went.
    private let primaryServerFound = Mutex<String?>(nil)
    /// Reads the primary answered.
    let primaryAnswered = Atomic<Int>(0)
    /// Reads that polled a standby to catch up.
    let waited = Atomic<Int>(0)

    init(
        standbys: [Standby], policy: PostgresOfflineStore.ReadPolicy, wait: Duration,
        now: @escaping @Sendable () -> ContinuousClock.Instant = { ContinuousClock.now }
    ) {
        self.standbys = standbys
        self.policy = policy
        self.wait = wait
        self.now = now
        rotation = Mutex(
            PostgresStandbyRotation(
                count: standbys.count, retryInterval: Self.retryInterval, behindBound: Self.behindBound,
                vainWaitsBound: Self.vainWaitsBound))
    }

    /// The standbys not taking writes, with the reads each answered.
    var standbysReading: [Standby] {
        let writer = rotation.withLock { $0.writer }
        return standbys.indices.filter { $0 != writer }.map { standbys[$0] }
    }

    /// Where the primary's reads go: the server the store's latest connection to the primary
    /// reached; `nil` before the first.
    var primaryServer: String? { primaryServerFound.withLock { $0 } }

    /// The store's connections to the primary reached `server`, found as `primary`: when it is one
    /// of the standbys (promoted, or the primary among a multi-host conninfo's hosts), it leaves the
    /// rotation; when its timeline is not the floor's, the floor starts again on it. Called before
    /// the connection runs anything, so every write it commits is on the floor's timeline.
    func primaryConnected(to server: PostgresServer, as primary: PostgresServerCheck.Identity) {
        let index = standbys.firstIndex { $0.server.conninfo == server.conninfo }
        rotation.withLock { $0.takesWrites(index) }
        primaryServerFound.withLock { $0 = server.description }
        floor.withLock { $0.primaryFound(onTimeline: primary.timeline, at: primary.position) }
    }

    /// Whether writes must learn their log position: only `.standbyIfCaughtUp` reads check it.
    var tracksPositions: Bool { policy == .standbyIfCaughtUp && !standbys.isEmpty }

    /// The rows of `call`, from a standby the policy allows or from the primary.
    func read(
        _ call: PostgresConnection.Call, while action: String, primary: PostgresPool
    ) async throws -> PostgresResult {
        switch policy {
        case .primary:
            return try await fromPrimary(call, while: action, primary: primary)
        case .anyStandby:
            if let rows = await fromStandby(call, atLeast: nil, while: action) { return rows }
        case .standbyIfCaughtUp:
            let needed = floor.withLock { floor in floor.required.map { Needed(lsn: $0, timeline: floor.timeline) } }
            if let needed {
                if let rows = await fromStandby(call, atLeast: needed, while: action) { return rows }
                if let rows = await afterWaiting(call, atLeast: needed, while: action) { return rows }
            }
        }
        return try await fromPrimary(call, while: action, primary: primary)
    }

    /// What the check at open learned: the primary's position (the floor starts there, so the
    /// store never reads a state older than its opening and sees every write made before), the
    /// primary's WAL page and segment sizes, and which hosts are primaries.
    func serversChecked(_ primary: PostgresServerCheck.Identity, primaries: Set<String>) {
        if let index = standbys.firstIndex(where: { primaries.contains($0.server.description) }) {
            rotation.withLock { $0.takesWrites(index) }
            primaryServerFound.withLock { $0 = $0 ?? standbys[index].server.description }
        }
        floor.withLock { floor in
            floor.walPageSize = primary.walPageSize
            floor.walSegmentSize = primary.walSegmentSize
            floor.primaryFound(onTimeline: primary.timeline, at: primary.position)
        }
    }

    /// Marks the start of a write: a write that cannot learn its position keeps reads on the
    /// primary until a write started after it learns one.
    func writeStarts() -> Int {
        floor.withLock { $0.writeStarts() }
    }

    /// Records the primary's position after the write numbered `write` committed, or that it
    /// could not be learned (`nil`: the commit's answer or the position never came).
    func writeCommitted(_ write: Int, at position: WALPosition?) {
        floor.withLock { $0.writeCommitted(write, at: position?.lsn) }
    }

    // MARK: - Servers

    private func fromPrimary(
        _ call: PostgresConnection.Call, while action: String, primary: PostgresPool
    ) async throws -> PostgresResult {
        guard tracksPositions else {
            let rows = try await primary.withConnection(retryable: true) { connection throws(OfflineStoreError) in
                try connection.run(call.statement, call.parameters, while: action, key: call.key)
            }
            primaryAnswered.add(1, ordering: .relaxed)
            return rows
        }
        // The read, then the insert position: no older than the state the read saw.
        let results = try await primary.withConnection(retryable: true) { connection throws(OfflineStoreError) in
            try connection.pipeline(
                [.call(call), .call(.init(statement: PostgresSchema.walPosition)), .sync(commits: false)],
                while: action)
        }
        let position = try WALPosition(results[1])
        floor.withLock { $0.raise(toPrimary: position.lsn) }
        primaryAnswered.add(1, ordering: .relaxed)
        return results[0]
    }

    /// The rows from the first standby, in turn, that may be used and whose replay reached
    /// `needed` on its timeline (any standby when `needed` is `nil`); `nil` when none has.
    private func fromStandby(
        _ call: PostgresConnection.Call, atLeast needed: Needed?, while action: String
    ) async -> PostgresResult? {
        guard !standbys.isEmpty else { return nil }
        let first = turn.add(1, ordering: .relaxed).newValue
        for offset in 0..<standbys.count {
            guard let turn = takeTurn((first &+ offset) % standbys.count) else { continue }
            if let rows = await read(call, on: turn, atLeast: needed, while: action) { return rows }
        }
        return nil
    }

    /// Polls the standby closest to `needed` until it reaches it, for up to ``wait``, then reads
    /// there; `nil` when none reached it in time (or the task was cancelled), or every standby is
    /// left out. When the whole wait passed, each standby polled that stayed short is told it made
    /// a read wait in vain.
    private func afterWaiting(
        _ call: PostgresConnection.Call, atLeast needed: Needed, while action: String
    ) async -> PostgresResult? {
        guard wait > .zero, !standbys.isEmpty else { return nil }
        let deadline = ContinuousClock.now + wait
        var pause = Duration.microseconds(200)
        var counted = false
        // Each standby's latest turn in this wait while it was short of the floor.
        var short: [Int: PostgresStandbyRotation.Turn] = [:]
        while ContinuousClock.now < deadline, !Task.isCancelled {
            var closest: (turn: PostgresStandbyRotation.Turn, lsn: UInt64)?
            for index in standbys.indices {
                guard let turn = takeTurn(index) else { continue }
                guard let lsn = await replayPosition(on: turn, needed: needed) else {
                    short[index] = nil
                    continue
                }
                short[index] = lsn < needed.lsn ? turn : nil
                if lsn > closest?.lsn ?? 0 { closest = (turn, lsn) }
            }
            guard let closest else { return nil }
            if !counted {
                waited.add(1, ordering: .relaxed)
                counted = true
            }
            if closest.lsn >= needed.lsn,
                let rows = await read(call, on: closest.turn, atLeast: needed, while: action)
            {
                return rows
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            try? await Task.sleep(for: min(pause, left))
            pause = min(pause * 2, .milliseconds(5))
        }
        if !Task.isCancelled {
            let now = now()
            rotation.withLock { rotation in
                for turn in short.values { _ = rotation.waitedInVain(turn, at: now) }
            }
        }
        return nil
    }

    /// The rows of `call` on the standby of `turn` when it follows `needed`'s timeline and its
    /// replay reached `needed`: one pipeline of its replay position, a sync, `call` and its replay
    /// position again. With no `needed` (`.anyStandby`), the read alone.
    private func read(
        _ call: PostgresConnection.Call, on turn: PostgresStandbyRotation.Turn, atLeast needed: Needed?,
        while action: String
    ) async -> PostgresResult? {
        let standby = standbys[turn.index]
        let position = PostgresConnection.Step.call(.init(statement: PostgresSchema.walPosition))
        do {
            guard let needed else {
                // No position to check or keep: the read alone. A standby promoted since its
                // connection opened answers too, and is only fresher.
                let rows = try await standby.pool.withConnection(retryable: true) {
                    connection throws(OfflineStoreError) in
                    try connection.run(call.statement, call.parameters, while: action, key: call.key)
                }
                _ = answered(turn, replayed: 0, needed: 0)
                standby.answered.add(1, ordering: .relaxed)
                return rows
            }
            let answer = try await standby.pool.withConnection(retryable: true) {
                connection throws(OfflineStoreError) -> StandbyAnswer? in
                guard try Self.follows(needed.timeline, on: connection) else { return nil }
                // A connection that has already seen the standby reach `needed` needs no first
                // position: its next snapshot is at least as far.
                if needed.lsn > 0, connection.knownReplayPosition >= needed.lsn {
                    let results = try connection.pipeline(
                        [.call(call), position, .sync(commits: false)], while: action)
                    return try StandbyAnswer(
                        rows: results[0], before: nil, after: WALPosition(results[1]), on: connection)
                }
                let results = try connection.pipeline(
                    [position, .sync(commits: false), .call(call), position, .sync(commits: false)], while: action)
                return try StandbyAnswer(
                    rows: results[1], before: WALPosition(results[0]), after: WALPosition(results[2]), on: connection)
            }
            // Another timeline (still following a primary that failed), or promoted (the
            // primary's connections find it): left out.
            guard let answer, answer.isStandby else {
                failed(turn)
                return nil
            }
            _ = answered(turn, replayed: answer.before?.lsn ?? needed.lsn, needed: needed.lsn)
            guard answer.reached(needed.lsn) else { return nil }
            floor.withLock { $0.raise(to: answer.after.lsn, onTimeline: needed.timeline) }
            standby.answered.add(1, ordering: .relaxed)
            return answer.rows
        } catch {
            // Down, restarting, or the table not there yet: the next server answers instead.
            failed(turn)
            return nil
        }
    }

    /// The replay position of the standby of `turn`, or `nil` when it fails, is no longer a
    /// standby, follows another timeline than `needed`'s, or has stayed short of one floor long
    /// enough to be left out.
    private func replayPosition(on turn: PostgresStandbyRotation.Turn, needed: Needed) async -> UInt64? {
        do {
            let rows = try await standbys[turn.index].pool.withConnection(retryable: true) {
                connection throws(OfflineStoreError) -> PostgresResult? in
                guard try Self.follows(needed.timeline, on: connection) else { return nil }
                return try connection.run(PostgresSchema.walPosition, [], while: "Reading the replay position")
            }
            let position = try rows.map { (rows) throws(OfflineStoreError) in try WALPosition(rows) }
            guard let position, position.isStandby else {
                failed(turn)
                return nil
            }
            return answered(turn, replayed: position.lsn, needed: needed.lsn) ? position.lsn : nil
        } catch {
            failed(turn)
            return nil
        }
    }

    /// Whether the standby of `connection` follows `timeline`: the timeline the connection knows,
    /// asked again only when it is not `timeline` (see the type's comment). A standby found on a
    /// new timeline starts its known replay position again.
    private static func follows(
        _ timeline: UInt64, on connection: PostgresConnection
    ) throws(OfflineStoreError) -> Bool {
        if connection.timeline != timeline {
            let rows = try connection.query(PostgresSchema.standbyTimeline, [], while: "Asking the standby's timeline")
            let found = rows.rowCount == 1 ? rows.uint64(row: 0, column: 0) : nil
            if found != connection.timeline { connection.knownReplayPosition = 0 }
            connection.timeline = found
        }
        return connection.timeline == timeline
    }

    // MARK: - The rotation, on the store's clock

    private func takeTurn(_ index: Int) -> PostgresStandbyRotation.Turn? {
        let now = now()
        return rotation.withLock { $0.takeTurn(index, at: now) }
    }

    private func failed(_ turn: PostgresStandbyRotation.Turn) {
        let now = now()
        rotation.withLock { $0.failed(turn, at: now) }
    }

    private func answered(_ turn: PostgresStandbyRotation.Turn, replayed: UInt64, needed: UInt64) -> Bool {
        let now = now()
        return rotation.withLock { $0.answered(turn, replayed: replayed, floor: needed, at: now) }
    }
}

/// What a read on a standby needs: a replay position on the primary's timeline.
private struct Needed: Sendable {
    let lsn: UInt64
    let timeline: UInt64
}

/// What one standby read answered: its rows and the replay positions around them.
private struct StandbyAnswer: Sendable {
    let rows: PostgresResult
    /// The position before the read; `nil` when the connection already knew it reached the floor.
    let before: WALPosition?
    let after: WALPosition

    /// Records the newest replay position on `connection` (while the server is a standby).
    init(rows: PostgresResult, before: WALPosition?, after: WALPosition, on connection: PostgresConnection) {
        self.rows = rows
        self.before = before
        self.after = after
        if isStandby { connection.knownReplayPosition = max(connection.knownReplayPosition, after.lsn) }
    }

    /// Whether the server answered as a standby both times.
    var isStandby: Bool { after.isStandby && before?.isStandby != false }

    /// Whether the read's snapshot holds everything up to `needed`.
    func reached(_ needed: UInt64) -> Bool { before.map { $0.lsn >= needed } ?? true }
}

/// The store's floor: the newest log position its reads must see, on the primary's timeline, and
/// whether a write whose position is unknown keeps reads on the primary.
struct PostgresReadFloor {
    var lsn: UInt64 = 0
    /// The primary's timeline: only a standby following it may answer (0 until the primary is
    /// found).
    var timeline: UInt64 = 0
    var writesStarted = 0
    /// Reads go to the primary until a write numbered at least this one learns its position.
    var primaryOnlyBefore: Int?
    /// The primary's WAL page and segment sizes (`wal_block_size`, `wal_segment_size`).
    var walPageSize: UInt64 = 8_192
    var walSegmentSize: UInt64 = 16 << 20

    /// The position a standby must have replayed, or `nil` when only the primary will do.
    var required: UInt64? { primaryOnlyBefore == nil ? lsn : nil }

    /// Numbers a write as it starts.
    mutating func writeStarts() -> Int {
        writesStarted += 1
        return writesStarted
    }

    /// Raises the floor to the primary's `position` after write number `write` committed; with no
    /// position, keeps reads on the primary until a write started after now learns one (its
    /// position is then past this write's commit).
    mutating func writeCommitted(_ write: Int, at position: UInt64?) {
        guard let position else {
            primaryOnlyBefore = writesStarted + 1
            return
        }
        raise(toPrimary: position)
        if let until = primaryOnlyBefore, write >= until { primaryOnlyBefore = nil }
    }

    mutating func raise(to position: UInt64) { lsn = max(lsn, position) }

    /// Raises the floor to a standby's `position` on `timeline`; a position on a timeline the
    /// primary has left says nothing about the new one.
    mutating func raise(to position: UInt64, onTimeline timeline: UInt64) {
        guard timeline == self.timeline else { return }
        raise(to: position)
    }

    /// A connection to the primary found it on `timeline` at `position`. A new timeline (a standby
    /// was promoted) starts the floor again at `position`: a position of the old timeline past the
    /// new one's start means nothing on it, and everything of the old timeline that survived the
    /// failover (every acknowledged write the promoted standby had) is before `position`.
    mutating func primaryFound(onTimeline timeline: UInt64, at position: UInt64) {
        if timeline != self.timeline {
            self.timeline = timeline
            lsn = 0
        }
        raise(toPrimary: position)
    }

    /// Raises the floor to a position the primary reported. An insert position right after a page
    /// header (24 bytes, 40 at the start of a segment) is where the next record will go; the last
    /// record ended at the page's start, which is as far as a standby's replay position goes, so
    /// the floor is that start (no record ends inside a header).
    mutating func raise(toPrimary position: UInt64) {
        var end = position
        if walSegmentSize > 0, end % walSegmentSize == 40 {
            end -= 40
        } else if walPageSize > 0, end % walPageSize == 24 {
            end -= 24
        }
        raise(to: end)
    }
}
