import Foundation
import Sovaria
import SovariaQueue

extension SovariaOffline {
    // MARK: - Conflicts

    /// What the server did with one write, once the follow-up requests a no-match needs are made.
    enum Delivery {
        /// The server took it: 2xx, touching rows (or not saying), or matching none under
        /// ``NoMatchPolicy/ignoreNoMatch``. `sent` is the request it took; `newVersion` the row's
        /// version after it, when the table has a version column and the answer shows the row.
        case applied(DataResponse, sent: DataRequest, newVersion: String?)
        /// 2xx, but it matched no row: rejected with ``RejectionReason/noMatchingRow``.
        case noMatch(DataResponse)
        /// The row changed since it was read: rejected as a conflict (or as ``RejectionReason/serverWon``).
        case conflict(DataResponse, serverRow: String, reason: RejectionReason)
        /// The follow-up read of the server's row failed: try the write again later.
        case retry(DataResponse)
        /// Any other answer (not 2xx): the usual rules apply.
        case answered(DataResponse)
    }

    /// The API adapter of the configuration.
    var api: any DataAPI { configuration.api }

    /// The rule of `table`: the configured one, or the defaults; its key column, when not given,
    /// the overlay's key of the table.
    func conflictRule(of table: String?) -> ConflictRule {
        var rule = table.flatMap { configuration.conflictRules[$0] } ?? ConflictRule()
        if rule.givenKeyColumn == nil, let table, let key = configuration.overlay?.primaryKey(of: table) {
            rule.givenKeyColumn = key
        }
        return rule
    }

    /// Counts the queued writes a conflict holds back (``SyncStatus/waitingOnConflictCount``);
    /// the count stays as it was when the queue cannot be read.
    func countWritesWaitingOnConflicts() async {
        guard let pending = try? await queue.pending() else { return }
        let waiting = pending.count { isHeld($0.request) }
        state.withLock { $0.waitingOnConflicts = waiting }
    }

    /// Sends `write` and works out what it did.
    ///
    /// Updates and deletes ask for the rows they changed. One that changed none is checked: with a
    /// version in its filter, the server's row is read (`GET` with the write's filters less the
    /// version) to tell a changed row (a conflict, by the table's policy) from a gone one (no
    /// match, by the write's policy). `.clientWins` sends the write again without the version,
    /// under a key derived from its own, so a replay after a crash is recognised too.
    ///
    /// - Throws: ``SyncTransportError`` when a request did not reach the server; the transport's
    ///   other errors.
    func deliver(_ write: QueuedWrite) async throws -> Delivery {
        let rule = conflictRule(of: api.table(of: write.request))
        var request = write.request
        let key = request.header(Self.idempotencyHeader) ?? write.id
        request.setHeader(Self.idempotencyHeader, key)
        let checked = changesRows(request)
        if checked { request = api.askingForRows(request) }
        let response = try await send(request)
        guard response.isSuccess else { return .answered(response) }
        guard checked, let touched = api.rowsTouched(by: response) else {
            return .applied(response, sent: request, newVersion: nil)
        }
        if touched > 0 { return .applied(response, sent: request, newVersion: newVersion(in: response, rule)) }
        if let versionColumn = rule.versionColumn, api.equalValue(of: versionColumn, in: request.path) != nil {
            let current = try await send(readingRow(of: request, without: versionColumn))
            guard current.isSuccess else {
                // A 401 goes through the refresh and the write is sent again (its key replays the
                // answer); a refusal to read the row is the write's refusal.
                return Self.isRetryable(current.status) ? .retry(current) : .answered(current)
            }
            guard let rows = RowJSON.rows(current.body) else { return .retry(current) }
            if let row = rows.first {
                switch rule.onConflict {
                case .reject: return .conflict(response, serverRow: RowJSON.text(row), reason: .conflict)
                case .serverWins: return .conflict(response, serverRow: RowJSON.text(row), reason: .serverWon)
                case .clientWins:
                    var forced = request
                    forced.path = api.removingFilters(on: versionColumn, from: request.path)
                    forced.setHeader(Self.idempotencyHeader, key + ":client-wins")
                    let again = try await send(forced)
                    guard again.isSuccess else { return .answered(again) }
                    if api.rowsTouched(by: again) != 0 {
                        return .applied(again, sent: forced, newVersion: newVersion(in: again, rule))
                    }
                }
            }
        }
        let policy = write.request.noMatchPolicy ?? rule.onNoMatch
        return policy == .ignoreNoMatch ? .applied(response, sent: request, newVersion: nil) : .noMatch(response)
    }

    /// The `GET` of the rows `write` targets, with its filters less the version and its headers
    /// less those of a write (the adapter's ``DataAPI/readingRows(of:without:)``, less the
    /// idempotency key).
    func readingRow(of write: DataRequest, without versionColumn: String) -> DataRequest {
        var read = api.readingRows(of: write, without: versionColumn)
        read.setHeader(Self.idempotencyHeader, nil)
        return read
    }

    /// An update or delete of a table: its answer can say how many rows it changed.
    func changesRows(_ request: DataRequest) -> Bool {
        let method = request.method.uppercased()
        return (method == "PATCH" || method == "DELETE") && api.table(of: request) != nil
    }

    private func newVersion(in response: DataResponse, _ rule: ConflictRule) -> String? {
        guard let versionColumn = rule.versionColumn, let row = RowJSON.rows(response.body)?.first else { return nil }
        return RowJSON.filterText(row[versionColumn])
    }

    /// `request` with the version of the row it names, as the app last read it, in its filter: an
    /// update or delete of a table with a version column that names its row by key and has no
    /// version filter yet. Unchanged when no cached answer holds the row.
    func recordingVersion(_ request: DataRequest) async throws -> DataRequest {
        guard changesRows(request), let table = api.table(of: request), case let rule = conflictRule(of: table),
            let versionColumn = rule.versionColumn,
            !api.filters(on: versionColumn, in: request.path),
            let key = api.equalValue(of: rule.keyColumn, in: request.path)
        else { return request }
        // The answer fetched last: by the server's time (whole seconds), then by the device's.
        var newest: (fetched: (Date, Date), version: String)?
        for read in try await cachedReads(of: table) {
            let shape = api.answerShape(of: read.request)
            if case .other = shape { continue }
            guard let response = try await cache.cachedResponse(for: read.cacheKey) else { continue }
            // A list of rows, or one row as an object (a detail screen's `.single()` read).
            let rows = shape == .singleRow ? "[" + response.body + "]" : response.body
            guard newest.map({ (response.serverTime, response.fetchedAt) > $0.fetched }) ?? true,
                let row = RowJSON.rows(rows)?.first(where: {
                    RowJSON.same(RowJSON.filterText($0[rule.keyColumn]), key)
                }),
                let version = RowJSON.filterText(row[versionColumn])
            else { continue }
            newest = ((response.serverTime, response.fetchedAt), version)
        }
        guard let cached = newest?.version else { return request }
        let version = currentVersion(of: table, key: key, from: cached)
        var recorded = request
        recorded.path = api.settingFilter(on: versionColumn, equalTo: version, in: request.path)
        return recorded
    }

    /// `version` of row `key`, moved on past every version this run's own writes replaced.
    func currentVersion(of table: String, key: String, from version: String) -> String {
        state.withLock { state in
            var current = version
            for _ in 0..<state.replacedVersions.count {
                guard let next = state.replacedVersions[Self.rowVersionKey(table, key, current)],
                    !RowJSON.same(next, current)
                else { break }
                current = next
            }
            return current
        }
    }

    /// Remembers that `write`, now applied, replaced the version its filter expected with
    /// `newVersion`.
    func recordReplacedVersion(by write: QueuedWrite, newVersion: String?) {
        recordVersion(newVersion, replacingTheOneExpectedBy: write.request)
    }

    /// Remembers that the row `request` names by key is at `newVersion` now, past the version
    /// `request`'s filter expected: a write of this device's replaced it, or a conflict showed it.
    func recordVersion(_ newVersion: String?, replacingTheOneExpectedBy request: DataRequest) {
        let rule = conflictRule(of: api.table(of: request))
        guard let newVersion, let table = api.table(of: request), let versionColumn = rule.versionColumn,
            let expected = api.equalValue(of: versionColumn, in: request.path),
            let key = api.equalValue(of: rule.keyColumn, in: request.path)
        else { return }
        state.withLock { state in
            // A bound, not a cache: past it the oldest knowledge is of rows long refetched.
            if state.replacedVersions.count >= Self.maxReplacedVersions { state.replacedVersions.removeAll() }
            state.replacedVersions[Self.rowVersionKey(table, key, expected)] = newVersion
        }
    }

    /// Replaced versions remembered at most.
    static let maxReplacedVersions = 10_000

    private static func rowVersionKey(_ table: String, _ key: String, _ version: String) -> StoreKey.Bytes {
        StoreKey.Bytes(table + "\u{0}" + key + "\u{0}" + version)
    }

    /// `write` expecting the row's version as this device's own writes left it, stored before it
    /// is sent (so a replay after a crash sends the same request under the same key).
    func expectingCurrentVersion(_ write: QueuedWrite) async throws -> QueuedWrite {
        let rule = conflictRule(of: api.table(of: write.request))
        guard let table = api.table(of: write.request), let versionColumn = rule.versionColumn,
            let expected = api.equalValue(of: versionColumn, in: write.request.path),
            let key = api.equalValue(of: rule.keyColumn, in: write.request.path)
        else { return write }
        let current = currentVersion(of: table, key: key, from: expected)
        guard !RowJSON.same(current, expected) else { return write }
        let moved = self.write(write, expecting: current, in: versionColumn)
        try await queue.update([moved])
        return moved
    }

    /// The queued writes after `head` to the same row that expected the version `head` expected,
    /// now expecting `newVersion`: they were made on top of `head`.
    func followers(of head: QueuedWrite, newVersion: String?) async throws -> [QueuedWrite] {
        let rule = conflictRule(of: api.table(of: head.request))
        guard let newVersion, let versionColumn = rule.versionColumn, queue.count > 1,
            let expected = api.equalValue(of: versionColumn, in: head.request.path),
            let key = api.equalValue(of: rule.keyColumn, in: head.request.path)
        else { return [] }
        return try await queue.pending().compactMap { write in
            guard write.id != head.id, api.table(of: write.request) == api.table(of: head.request),
                RowJSON.same(api.equalValue(of: rule.keyColumn, in: write.request.path), key),
                RowJSON.same(api.equalValue(of: versionColumn, in: write.request.path), expected)
            else { return nil }
            return self.write(write, expecting: newVersion, in: versionColumn)
        }
    }

    /// `write` with its version filter on `column` set to `version`.
    func write(_ write: QueuedWrite, expecting version: String, in column: String) -> QueuedWrite {
        var request = write.request
        request.path = api.settingFilter(on: column, equalTo: version, in: request.path)
        return QueuedWrite(
            id: write.id, sequence: write.sequence, request: request, queuedAt: write.queuedAt,
            attempts: write.attempts, lastError: write.lastError)
    }

    /// Whether `request` must wait behind a conflict on its row.
    func isHeld(_ request: DataRequest) -> Bool {
        let conflicts = state.withLock { $0.conflicts }
        return conflicts.holds(request, keyColumn: conflictRule(of: api.table(of: request)).keyColumn, api: api)
    }

    /// The ids of the conflicts waiting for the app: never dropped from the rejected list.
    func conflictIDs() -> Set<String> { state.withLock { $0.conflicts.ids } }

    /// Holds `request`'s row before its conflict is stored, so that no write to the row slips
    /// past while the rejected list changes; ``reloadConflicts()`` then makes it exact.
    func holdProvisionally(_ request: DataRequest, id: String) {
        let keyColumn = conflictRule(of: api.table(of: request)).keyColumn
        state.withLock { $0.conflicts.add(request, id: id, keyColumn: keyColumn, api: api) }
    }

    /// Reads the conflicts from the rejected list again (after it changed), one reload at a
    /// time. If the list cannot be read, the index keeps what it had.
    func reloadConflicts() async {
        try? await conflictReloads.withGate { _ in
            let index = ConflictIndex(
                try await queue.rejected(), keyColumn: { conflictRule(of: $0).keyColumn }, api: api)
            state.withLock { state in
                state.conflicts = index
                if index.isEmpty { state.waitingOnConflicts = 0 }
            }
        }
        signals.statusChanged()
    }

    /// Starts a flush for the writes a resolved or dropped conflict let go, when online.
    func flushReleasedWrites() {
        let idle = state.withLock { !$0.online || $0.closed || $0.pausedForAuthorization }
        if !idle, queue.count > 0 { _ = startFlush() }
    }

    /// The message a write that did not apply is kept with.
    static func message(for delivery: Delivery, _ write: QueuedWrite) -> String {
        let what = write.request.method.uppercased() + " " + write.request.path
        switch delivery {
        case .noMatch: return "\(what) matched no row on the server: the row is gone."
        case .conflict(_, _, .serverWon):
            return "\(what) was not applied: the row changed on the server since it was read, and the server wins."
        case .conflict:
            return "\(what) was not applied: the row changed on the server since it was read. Resolve it."
        case .applied(let response, _, _), .retry(let response), .answered(let response): return response.body
        }
    }

    // MARK: - Resolving

    /// The writes whose rows changed on the server since they were read, waiting for the app:
    /// each with the server's row (`RejectedWrite.serverRow`), newest first.
    public func conflicts() async throws -> [RejectedWrite] {
        try await rejectedWrites().filter { $0.reason == .conflict }
    }

    /// Resolves conflict `conflictID` with `merged`: the write to send instead (typically the
    /// server's row with the app's changes merged in).
    ///
    /// `merged` is sent with the version of the server's row the conflict holds in its filter (it
    /// replaces any version filter `merged` has; a server row without the version column leaves
    /// `merged` unchecked), so it applies only if the row has not changed again. It is queued at
    /// the tail under a new client id, and the queued writes that name the same row by key move
    /// behind it, expecting the same version. A flush starts when online.
    ///
    /// ```swift
    /// for conflict in try await offline.conflicts() {
    ///     let merged = PostgREST.update("notes", where: [.eq("id", "n1")], json: mergedJSON(conflict))
    ///     try await offline.resolve(conflict.id, with: merged)
    /// }
    /// ```
    ///
    /// - Returns: the queued resolution.
    /// - Important: One atomic store batch: a crash leaves the conflict as it was, or resolved.
    /// - Throws: ``SovariaOfflineError`` with ``SovariaOfflineError/Code/noSuchConflict`` when no
    ///   conflict waiting for the app has that id; `WriteQueueError` with
    ///   `WriteQueueError.Code.queueFull`.
    @discardableResult
    public func resolve(_ conflictID: String, with merged: DataRequest) async throws -> QueuedWrite {
        try checkOpen()
        let resolution = try await writeGate.withGate { _ in
            guard let conflict = try await conflicts().first(where: { $0.id == conflictID }) else {
                throw SovariaOfflineError(
                    .noSuchConflict, "No conflict waiting for the app has id \(conflictID): it was resolved or dropped."
                )
            }
            let rule = conflictRule(of: api.table(of: conflict.write.request))
            var request = merged
            var version: String?
            if let versionColumn = rule.versionColumn, let serverRow = conflict.serverRow,
                let row = RowJSON.rows("[" + serverRow + "]")?.first
            {
                version = RowJSON.filterText(row[versionColumn])
                if let version {
                    request.path = api.settingFilter(on: versionColumn, equalTo: version, in: request.path)
                }
                // The app has seen the server's row: an edit made later against the cached row
                // (still the version the conflicted write expected) expects the resolution's.
                recordVersion(version, replacingTheOneExpectedBy: conflict.write.request)
            }
            let key = ConflictIndex.key(of: conflict.write.request, keyColumn: rule.keyColumn, api: api)
            let waiting = try await queue.pending().filter { write in
                api.table(of: write.request) == api.table(of: conflict.write.request)
                    && RowJSON.same(ConflictIndex.key(of: write.request, keyColumn: rule.keyColumn, api: api), key)
            }.map { write in
                guard let version, let versionColumn = rule.versionColumn,
                    api.equalValue(of: versionColumn, in: write.request.path) != nil
                else { return write }
                return self.write(write, expecting: version, in: versionColumn)
            }
            return try await queue.resolve(
                conflictID, with: request, id: WriteQueue.makeClientID(), moving: waiting)
        }
        await reloadConflicts()
        signals.changed(table: api.table(of: resolution.request))
        flushReleasedWrites()
        return resolution
    }
}
