import Foundation
import Sovaria
import Synchronization

/// Sends a store's reads to its standbys by its ``PostgresOfflineStore/ReadPolicy``, keeping
/// read-your-writes and monotonic reads across the store instance.
///
/// **The floor.** The store keeps one log position, the floor: the newest of the primary's
/// position when the store opened, the positions its acknowledged writes reached on the primary,
/// and the states its reads answered from. A read on a
/// standby is one pipeline (one round trip): the standby's replay position, the read, the replay
/// position again. The read's answer is used only when the first position is at or past the floor
/// (the read's snapshot, taken after, then holds every write the floor stands for), and the
/// second position raises the floor (the snapshot is no newer than it), so no later read answers
/// from an older state. A read on the primary is followed, in its pipeline, by the primary's
/// insert position, which raises the floor the same way.
///
/// **Choosing a server.** Standbys take turns. One behind the floor is passed over for the next;
/// when none has caught up, the read polls the one closest to it for up to
/// ``PostgresOfflineStore/Configuration/standbyWait``, then goes to the primary. A standby that
/// fails (down, restarting, of another role now) is left out for ``retryInterval``; any error there
/// sends the read on, so none reaches the caller. A standby that answers as a primary was promoted:
/// it is left out the same way, and the primary's connections find it (they connect to whichever
/// server takes writes).
final class PostgresStandbyReads: Sendable {
    /// One standby: its connections and its state.
    final class Standby: Sendable {
        let server: PostgresServer
        let pool: PostgresPool
        /// Until when the standby is left out after a failure.
        let leftOutUntil = Mutex<ContinuousClock.Instant?>(nil)
        /// Reads it answered.
        let answered = Atomic<Int>(0)

        init(server: PostgresServer, pool: PostgresPool) {
            self.server = server
            self.pool = pool
        }

        func isAvailable(at now: ContinuousClock.Instant) -> Bool {
            leftOutUntil.withLock { until in until.map { now >= $0 } ?? true }
        }

        func leaveOut(until instant: ContinuousClock.Instant) {
            leftOutUntil.withLock { $0 = instant }
        }
    }

    /// How long a standby that failed is left out before it is tried again.
    static let retryInterval: Duration = .seconds(2)

    let standbys: [Standby]
    let policy: PostgresOfflineStore.ReadPolicy
    private let wait: Duration
    private let floor = Mutex(Floor())
    private let turn = Atomic<Int>(0)
    /// Reads the primary answered.
    let primaryAnswered = Atomic<Int>(0)
    /// Reads that waited for a standby to catch up.
    let waited = Atomic<Int>(0)

    init(standbys: [Standby], policy: PostgresOfflineStore.ReadPolicy, wait: Duration) {
        self.standbys = standbys
        self.policy = policy
        self.wait = wait
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

    /// Starts the floor at the primary's position when the store opened: a store never reads a
    /// state older than that, so it sees every write any process had made before.
    func startFloor(at position: UInt64) {
        floor.withLock { $0.raise(to: position) }
    }

    /// Marks the start of a write: a write that cannot learn its position keeps reads on the
    /// primary until a write started after it learns one.
    func writeStarts() -> Int {
        floor.withLock { floor in
            floor.writesStarted += 1
            return floor.writesStarted
        }
    }

    /// Records the primary's position after the write numbered `write` committed, or that it could
    /// not be learned (`nil`).
    func writeCommitted(_ write: Int, at position: WALPosition?) {
        floor.withLock { floor in
            guard let position else {
                floor.primaryOnlyBefore = floor.writesStarted + 1
                return
            }
            floor.raise(to: position.lsn)
            if let until = floor.primaryOnlyBefore, write >= until { floor.primaryOnlyBefore = nil }
        }
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
        // The read, then the insert position: no newer than the state the read saw.
        let results = try await primary.withConnection(retryable: true) { connection throws(OfflineStoreError) in
            try connection.pipeline(
                [.call(call), .call(.init(statement: PostgresSchema.walPosition)), .sync(commits: false)],
                while: action)
        }
        let position = try WALPosition(results[1])
        floor.withLock { $0.raise(to: position.lsn) }
        primaryAnswered.add(1, ordering: .relaxed)
        return results[0]
    }

    /// The rows from the first available standby, in turn, whose replay reached `needed`; `nil`
    /// when none has.
    private func fromStandby(
        _ call: PostgresConnection.Call, atLeast needed: UInt64, while action: String
    ) async -> PostgresResult? {
        guard !standbys.isEmpty else { return nil }
        let first = turn.add(1, ordering: .relaxed).newValue
        let now = ContinuousClock.now
        for offset in 0..<standbys.count {
            let standby = standbys[(first &+ offset) % standbys.count]
            guard standby.isAvailable(at: now) else { continue }
            if let rows = await read(call, on: standby, atLeast: needed, while: action).rows { return rows }
        }
        return nil
    }

    /// Polls the standby closest to `needed` until it reaches it, for up to ``wait``, then reads
    /// there; `nil` when none reached it in time.
    private func afterWaiting(
        _ call: PostgresConnection.Call, atLeast needed: UInt64, while action: String
    ) async -> PostgresResult? {
        guard wait > .zero else { return nil }
        let deadline = ContinuousClock.now + wait
        var pause = Duration.microseconds(200)
        waited.add(1, ordering: .relaxed)
        while ContinuousClock.now < deadline {
            let now = ContinuousClock.now
            var closest: (standby: Standby, lsn: UInt64)?
            for standby in standbys where standby.isAvailable(at: now) {
                guard let position = await position(of: standby), position.lsn > closest?.lsn ?? 0 else { continue }
                closest = (standby, position.lsn)
            }
            guard let closest else { return nil }
            if closest.lsn >= needed {
                let answer = await read(call, on: closest.standby, atLeast: needed, while: action)
                if let rows = answer.rows { return rows }
            }
            try? await Task.sleep(for: min(pause, deadline - ContinuousClock.now))
            pause = min(pause * 2, .milliseconds(5))
        }
        return nil
    }

    /// One pipeline on `standby`: its replay position, `call`, its replay position again. The rows
    /// when the first position reached `needed`. `.anyStandby` sends the read alone.
    private func read(
        _ call: PostgresConnection.Call, on standby: Standby, atLeast needed: UInt64, while action: String
    ) async -> (rows: PostgresResult?, position: WALPosition?) {
        let position = PostgresConnection.Call(statement: PostgresSchema.walPosition)
        if policy == .anyStandby {
            // No position to check or keep: the read alone. A standby promoted since its
            // connection opened answers too, and is only fresher.
            do {
                let rows = try await standby.pool.withConnection(retryable: true) {
                    connection throws(OfflineStoreError) in
                    try connection.run(call.statement, call.parameters, while: action, key: call.key)
                }
                standby.answered.add(1, ordering: .relaxed)
                return (rows, nil)
            } catch {
                standby.leaveOut(until: .now + Self.retryInterval)
                return (nil, nil)
            }
        }
        do {
            let results = try await standby.pool.withConnection(retryable: true) {
                connection throws(OfflineStoreError) in
                try connection.pipeline(
                    [.call(position), .call(call), .call(position), .sync(commits: false)], while: action)
            }
            let before = try WALPosition(results[0])
            let after = try WALPosition(results[2])
            guard before.isStandby, after.isStandby else {
                standby.leaveOut(until: .now + Self.retryInterval)  // promoted: the primary's pool finds it
                return (nil, nil)
            }
            guard before.lsn >= needed else { return (nil, before) }
            if policy == .standbyIfCaughtUp { floor.withLock { $0.raise(to: after.lsn) } }
            standby.answered.add(1, ordering: .relaxed)
            return (results[1], after)
        } catch {
            // Down, restarting, or the table not there yet: the next server answers instead.
            standby.leaveOut(until: .now + Self.retryInterval)
            return (nil, nil)
        }
    }

    /// The replay position of `standby`, or `nil` when it fails or is no longer a standby.
    private func position(of standby: Standby) async -> WALPosition? {
        do {
            let rows = try await standby.pool.withConnection(retryable: true) { connection throws(OfflineStoreError) in
                try connection.run(PostgresSchema.walPosition, [], while: "Reading the replay position")
            }
            let position = try WALPosition(rows)
            guard position.isStandby else {
                standby.leaveOut(until: .now + Self.retryInterval)
                return nil
            }
            return position
        } catch {
            standby.leaveOut(until: .now + Self.retryInterval)
            return nil
        }
    }
}

/// The store's floor: the newest log position its reads must see, and whether a write whose
/// position is unknown keeps reads on the primary.
private struct Floor {
    var lsn: UInt64 = 0
    var writesStarted = 0
    /// Reads go to the primary until a write numbered at least this one learns its position.
    var primaryOnlyBefore: Int?

    /// The position a standby must have replayed, or `nil` when only the primary will do.
    var required: UInt64? { primaryOnlyBefore == nil ? lsn : nil }

    mutating func raise(to position: UInt64) { lsn = max(lsn, position) }
}
