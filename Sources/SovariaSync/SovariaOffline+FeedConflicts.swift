import Foundation
import Sovaria
import SovariaQueue

extension SovariaOffline {
    // MARK: - Conflicts the feed shows

    /// One row as a page of the feed shows it last: its key, version and JSON.
    struct ShownRow {
        let key: String
        let version: String
        let row: String
    }

    /// Lists as conflicts, at once, the queued writes a page of `table`'s feed shows are out of
    /// date: an update or delete whose filter expects a version of its row older than the one
    /// the page brings. The same rules as at a flush: with ``ConflictPolicy/reject`` the row's
    /// oldest such write goes to the rejected list as a conflict (the later ones wait behind
    /// it), with ``ConflictPolicy/serverWins`` each such write goes as
    /// `RejectionReason.serverWon`; ``ConflictPolicy/clientWins`` leaves them to the flush.
    ///
    /// The echo of this device's own synced write is no conflict: a version this run's writes
    /// left counts as the one they expect. Nor is an update whose every column the page's row
    /// already holds (its answer lost on the way back, or another device's identical edit): it
    /// is left to the flush, which replays it under its idempotency key where the server keeps
    /// them, and finds any conflict as before; so are the row's later writes, which must not go
    /// before it. Versions are compared as numbers, or as text of one
    /// length (timestamps of one format); other values are left to the flush. A running flush
    /// ends first (it may send these writes and find the same conflicts itself, and no write it
    /// sends is taken from under it); a flush that starts meanwhile waits for the flagging.
    func flagConflicts(shownBy changes: [RowChange], of table: String) async throws {
        let rule = conflictRule(of: table)
        guard let versionColumn = rule.versionColumn, rule.onConflict != .clientWins, queue.count > 0 else { return }
        let shown = changes.compactMap { change -> ShownRow? in
            guard case .upsert(let text) = change.operation, let row = RowJSON.rows("[" + text + "]")?.first,
                let version = RowJSON.filterText(row[versionColumn])
            else { return nil }
            // Written as a flush's conflict writes the server's row, not as the feed spelled it.
            return ShownRow(key: change.key, version: version, row: RowJSON.text(row))
        }
        guard !shown.isEmpty else { return }
        // In the write gate: no write is queued, resolved or cleared meanwhile. After a running
        // flush (it may send these writes and find the conflicts itself); a flush that starts
        // while the flagging runs waits for it.
        try await writeGate.withGate { _ in
            while true {
                enum Next {
                    case wait(Task<Int, any Error>)
                    case flag(Task<Void, any Error>)
                    case stop
                }
                let next = state.withLock { state -> Next in
                    if state.closed { return .stop }
                    if let flight = state.flight { return .wait(flight) }
                    let task = Task { try await self.rejectOutdatedWrites(shownBy: shown, of: table, rule: rule) }
                    state.conflictFlagging = task
                    return .flag(task)
                }
                switch next {
                case .stop: return
                case .wait(let flight): _ = try? await flight.value
                case .flag(let flagging):
                    defer { state.withLock { $0.conflictFlagging = nil } }
                    try await flagging.value
                    return
                }
            }
        }
    }

    private func rejectOutdatedWrites(shownBy shown: [ShownRow], of table: String, rule: ConflictRule) async throws {
        guard let versionColumn = rule.versionColumn else { return }
        var heldRows: [String] = []
        // Rows whose oldest outdated write the page's row already holds: it, and the row's later
        // writes after it, go to the flush in their order.
        var leftToFlush: [String] = []
        var flagged = false
        let api = self.api  // read once, not copied out of the configuration at each use
        for write in try await queue.pending() where api.table(of: write.request) == table {
            guard let key = api.equalValue(of: rule.keyColumn, in: write.request.path),
                let expected = api.equalValue(of: versionColumn, in: write.request.path),
                let server = shown.last(where: { RowJSON.same($0.key, key) }),
                !heldRows.contains(where: { RowJSON.same($0, key) }),
                !leftToFlush.contains(where: { RowJSON.same($0, key) }), !isHeld(write.request),
                Self.version(server.version, isNewerThan: currentVersion(of: table, key: key, from: expected))
            else { continue }
            if Self.row(server.row, holdsWhat: write.request) {
                leftToFlush.append(key)
                continue
            }
            let reason: RejectionReason = rule.onConflict == .reject ? .conflict : .serverWon
            let message = Self.message(
                for: .conflict(DataResponse(status: 409), serverRow: server.row, reason: reason), write)
            if reason == .conflict {
                holdProvisionally(write.request, id: write.id)
                heldRows.append(key)
            }
            if let rejected = try await queue.reject(
                write.id, status: 409, message: message, reason: reason, serverRow: server.row,
                sparing: conflictIDs())
            {
                report(SyncError(kind: .rejected(rejected), write: write, message: message))
            }
            flagged = true
        }
        if flagged {
            await reloadConflicts()
            // The rows' later writes wait behind their conflicts from now on, not from the next
            // flush: the status counts them at once.
            await countWritesWaitingOnConflicts()
            signals.statusChanged()
            signals.changed(table: table)
        }
    }

    /// Whether `row` (JSON text) already holds every column the update `request` sets, each
    /// value written the same way; `false` for any other write.
    static func row(_ row: String, holdsWhat request: DataRequest) -> Bool {
        guard request.method.uppercased() == "PATCH", let body = request.body,
            let set = RowJSON.rows("[" + body + "]")?.first, !set.isEmpty,
            let held = RowJSON.rows("[" + row + "]")?.first
        else { return false }
        return set.allSatisfy { column, value in
            held[column].map { RowJSON.same(RowJSON.text(["v": $0]), RowJSON.text(["v": value])) } ?? false
        }
    }

    /// Whether version `shown` comes after `expected`: as integers, as numbers, or as text of
    /// one length (an ISO 8601 timestamp of one format); `false` when neither says.
    static func version(_ shown: String, isNewerThan expected: String) -> Bool {
        if let shown = Int64(shown), let expected = Int64(expected) { return shown > expected }
        if let shown = Double(shown), let expected = Double(expected) { return shown > expected }
        return shown.utf8.count == expected.utf8.count && expected.utf8.lexicographicallyPrecedes(shown.utf8)
    }
}
