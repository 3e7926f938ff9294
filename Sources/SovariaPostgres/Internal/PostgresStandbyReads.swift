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
/// **Choosing a server.** Standbys take turns, by the rules of ``PostgresStandbyRotation``. One
/// behind the floor is passed over for the next; when none has caught up, the read polls the one
/// closest to it for up to ``PostgresOfflineStore/Configuration/standbyWait``, then goes to the
/// primary. A standby that fails (down, restarting, of another role now), or that stays short of
/// one floor for ``behindBound`` (following a dead primary, replaying late), is left out for
/// ``retryInterval``, after which one read alone tries it again (the others pass it by
/// meanwhile); any error there sends the read on, so none reaches the caller. A standby that
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
                count: standbys.count, retryInterval: Self.retryInterval, behindBound: Self.behindBound))
    }

    /// The standbys not taking writes, with the reads each answered.
    var standbysReading: [Standby] {
        let writer = rotation.withLock { $0.writer }
        return standbys.indices.filter { $0 != writer }.map { standbys[$0] }
    }

    /// Where the primary's reads go: the server the store's latest connection to the primary
    /// reached; `nil` before the first.
    var primaryServer: String? { primaryServerFound.withLock { $0 } }

    /// The store's connections to the primary reached `server`: when it is one of the standbys
    /// (promoted, or the primary among a multi-host conninfo's hosts), it leaves the rotation.
    func primaryConnected(to server: PostgresServer) {
        let index = standbys.firstIndex { $0.server.conninfo == server.conninfo }
        rotation.withLock { $0.takesWrites(index) }
        primaryServerFound.withLock { $0 = server.description }
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
            if let rows = await fromStandby(call, atLeast: 0, while: action) { return rows }
        case .standbyIfCaughtUp:
            if let needed = floor.withLock({ $0.required }) {
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
            floor.raise(toPrimary: primary.position)
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
    /// `needed`; `nil` when none has.
    private func fromStandby(
        _ call: PostgresConnection.Call, atLeast needed: UInt64, while action: String
    ) async -> PostgresResult? {
        guard !standbys.isEmpty else { return nil }
        let first = turn.add(1, ordering: .relaxed).newValue
        for offset in 0..<standbys.count {
            let index = (first &+ offset) % standbys.count
            guard takeTurn(index) else { continue }
            if let rows = await read(call, on: index, atLeast: needed, while: action) { return rows }
        }
        return nil
    }

    /// Polls the standby closest to `needed` until it reaches it, for up to ``wait``, then reads
    /// there; `nil` when none reached it in time (or the task was cancelled), or every standby is
    /// left out.
    private func afterWaiting(
        _ call: PostgresConnection.Call, atLeast needed: UInt64, while action: String
    ) async -> PostgresResult? {
        guard wait > .zero, !standbys.isEmpty else { return nil }
        let deadline = ContinuousClock.now + wait
        var pause = Duration.microseconds(200)
        var counted = false
        while ContinuousClock.now < deadline, !Task.isCancelled {
            var closest: (index: Int, lsn: UInt64)?
            for index in standbys.indices where takeTurn(index) {
                guard let lsn = await replayPosition(of: index, needed: needed), lsn > closest?.lsn ?? 0 else {
                    continue
                }
                closest = (index, lsn)
            }
            guard let closest else { return nil }
            if !counted {
                waited.add(1, ordering: .relaxed)
                counted = true
            }
            if closest.lsn >= needed, let rows = await read(call, on: closest.index, atLeast: needed, while: action) {
                return rows
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { break }
            try? await Task.sleep(for: min(pause, left))
            pause = min(pause * 2, .milliseconds(5))
        }
        return nil
    }

    /// The rows of `call` on standby `index` when its replay reached `needed`: one pipeline of its
    /// replay position, a sync, `call` and its replay position again. `.anyStandby` sends the read
    /// alone.
    private func read(
        _ call: PostgresConnection.Call, on index: Int, atLeast needed: UInt64, while action: String
    ) async -> PostgresResult? {
        let standby = standbys[index]
        let position = PostgresConnection.Step.call(.init(statement: PostgresSchema.walPosition))
        do {
            if policy == .anyStandby {
                // No position to check or keep: the read alone. A standby promoted since its
                // connection opened answers too, and is only fresher.
                let rows = try await standby.pool.withConnection(retryable: true) {
                    connection throws(OfflineStoreError) in
                    try connection.run(call.statement, call.parameters, while: action, key: call.key)
                }
                _ = answered(index, replayed: 0, needed: 0)
                standby.answered.add(1, ordering: .relaxed)
                return rows
            }
            let answer = try await standby.pool.withConnection(retryable: true) {
                connection throws(OfflineStoreError) in
                // A connection that has already seen the standby reach `needed` needs no first
                // position: its next snapshot is at least as far.
                if needed > 0, connection.knownReplayPosition >= needed {
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
            guard answer.isStandby else {
                failed(index)  // promoted: the primary's connections find it
                return nil
            }
            _ = answered(index, replayed: answer.before?.lsn ?? needed, needed: needed)
            guard answer.reached(needed) else { return nil }
            floor.withLock { $0.raise(to: answer.after.lsn) }
            standby.answered.add(1, ordering: .relaxed)
            return answer.rows
        } catch {
            // Down, restarting, or the table not there yet: the next server answers instead.
            failed(index)
            return nil
        }
    }

    /// The replay position of standby `index`, or `nil` when it fails, is no longer a standby, or
    /// has stayed short of one floor long enough to be left out.
    private func replayPosition(of index: Int, needed: UInt64) async -> UInt64? {
        do {
            let rows = try await standbys[index].pool.withConnection(retryable: true) {
                connection throws(OfflineStoreError) in
                try connection.run(PostgresSchema.walPosition, [], while: "Reading the replay position")
            }
            let position = try WALPosition(rows)
            guard position.isStandby else {
                failed(index)
                return nil
            }
            return answered(index, replayed: position.lsn, needed: needed) ? position.lsn : nil
        } catch {
            failed(index)
            return nil
        }
    }

    // MARK: - The rotation, on the store's clock

    private func takeTurn(_ index: Int) -> Bool {
        let now = now()
        return rotation.withLock { $0.takeTurn(index, at: now) }
    }

    private func failed(_ index: Int) {
        let now = now()
        rotation.withLock { $0.failed(index, at: now) }
    }

    private func answered(_ index: Int, replayed: UInt64, needed: UInt64) -> Bool {
        let now = now()
        return rotation.withLock { $0.answered(index, replayed: replayed, floor: needed, at: now) }
    }
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

/// The store's floor: the newest log position its reads must see, and whether a write whose
/// position is unknown keeps reads on the primary.
struct PostgresReadFloor {
    var lsn: UInt64 = 0
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
