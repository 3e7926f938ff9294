import Foundation
import Sovaria
import SovariaCache
import SovariaQueue

extension SovariaOffline {
    // MARK: - Local-first reads

    /// Answers `request` through the query cache, by `policy`, with the pending writes of its
    /// table applied (read-your-writes): what the user wrote offline shows at once.
    ///
    /// The server's answer is cached as it came (``LocalRead/response``); the writes waiting in
    /// the queue, and those synced after that answer was fetched, are applied in queue order by
    /// ``Configuration/overlay`` at every read. So a refused write's effect leaves the answers the
    /// moment it moves to the rejected list, a restart loses nothing, and a synced write stays
    /// in them until a server answer fetched after the sync replaces the cached one.
    ///
    /// ```swift
    /// let notes = try await offline.read(PostgREST.select("notes", order: "id"))
    /// show(notes.body, waiting: notes.pendingRows, exact: notes.isExact)
    /// ```
    ///
    /// - Important: ``LocalRead/isExact`` says whether the answer is what the server will say
    ///   once the writes sync; an inexact one shows what is known and says why
    ///   (``LocalRead/inexactReasons``). Without an overlay, pending writes are not applied and
    ///   the answer says so.
    /// - Throws: ``SyncTransportError`` with ``SyncTransportError/Code/offline`` when offline with
    ///   nothing cached and no pending write that answers the read; ``SovariaOfflineError`` with
    ///   ``SovariaOfflineError/Code/unexpectedStatus`` for an answer that is neither 2xx nor 304,
    ///   and for a read the server will refuse once the writes sync (``LocalRead/refusal``: a
    ///   read of one row whose rows are not one), with that answer; the transport's other errors
    ///   as they are.
    public func read(
        _ request: DataRequest, policy: ReadPolicy = .cacheFirstThenNetwork, maxAge: Duration? = nil
    ) async throws -> LocalRead {
        // Built once: the cache, the overlay and the writes it applies all key by it.
        let identity = ReadIdentity(request, api: api)
        let server: CacheRead
        do {
            server = try await readThroughCache(request, identity: identity, policy: policy, maxAge: maxAge)
        } catch let error as SyncTransportError where error.code == .offline {
            // Offline with nothing cached: rows written offline may still answer.
            let local = try await overlaid(request, identity: identity, on: nil)
            guard local.body != nil || local.refusal != nil else { throw error }
            return try Self.refusingIfRefused(local, request)
        }
        return try Self.refusingIfRefused(try await overlaid(request, identity: identity, on: server), request)
    }

    /// `answer`, or the error of the server's refusal it holds.
    private static func refusingIfRefused(_ answer: LocalRead, _ request: DataRequest) throws -> LocalRead {
        guard let refusal = answer.refusal else { return answer }
        throw SovariaOfflineError(
            .unexpectedStatus,
            "\(request.method) \(request.path): the server will answer \(refusal.status) (\(refusal.body)) once the "
                + "pending writes sync; nothing is shown.",
            response: refusal)
    }

    /// ``read(_:policy:maxAge:)`` with the body decoded as `type` by
    /// ``Configuration/makeDecoder`` (PostgREST's JSON: ISO 8601 dates with fractional seconds).
    ///
    /// ```swift
    /// struct Note: Codable, Sendable { var id: String; var title: String; var done: Bool }
    /// let notes = try await offline.read(PostgREST.select("notes"), as: [Note].self)
    /// ```
    public func read<Value: Decodable & Sendable>(
        _ request: DataRequest, as type: Value.Type, policy: ReadPolicy = .cacheFirstThenNetwork,
        maxAge: Duration? = nil
    ) async throws -> TypedRead<Value> {
        let read = try await read(request, policy: policy, maxAge: maxAge)
        return TypedRead(value: try read.decode(type, using: configuration.makeDecoder()), read: read)
    }

    /// The server's answer in `server` (`nil`: nothing cached) with the overlay of its table's
    /// writes; `fresh` computes it afresh, past the overlay's sessions (for tests). `identity`
    /// must be `request`'s, built here when not given.
    func overlaid(
        _ request: DataRequest, identity: ReadIdentity? = nil, on server: CacheRead?, fresh: Bool = false
    ) async throws -> LocalRead {
        let identity = identity ?? ReadIdentity(request, api: api)
        assert(identity.cacheKey == ReadIdentity(request, api: api).cacheKey, "another request's identity")
        var answer = LocalRead(
            body: server?.response?.body, response: server?.response, source: server?.source ?? .none,
            isRefreshing: server?.isRefreshing ?? false, inexactReasons: [], pendingRows: [])
        let local = try await overlay(request, identity: identity, on: server?.response?.body, fresh: fresh)
        let query = identity.cacheKey
        if server?.response?.isStale == true, synced.isStaleAfterFeed(query) {
            answer.inexactReasons = [.staleAfterServerChanges]
        } else if server?.response?.isStale == true, let table = identity.table,
            synced.writes(notIn: query, table: table, api: api).isEmpty
        {
            // Marked stale by a sync this run does not know of (one before a restart): the write
            // may be missing from the answer until it is fetched again.
            answer.inexactReasons = [.staleAfterEarlierSync]
        }
        if let local {
            answer.inexactReasons += local.inexactReasons
            answer.body = local.body
            answer.refusal = local.refusal
            answer.pendingRows = local.pendingRows
            answer.changedByPendingWrites = local.changedByPendingWrites
        }
        if api.countsRows(request) { countRows(of: request, in: &answer, overlaid: local) }
        answer.conflictedRows = conflictedRows(of: identity.table, in: answer.body)
        return answer
    }

    /// Sets `answer`'s ``LocalRead/rowCount``: the server's with no write to apply; with writes,
    /// the rows of an exact answer that is not a page (every row it matches is in it), or else
    /// the server's moved by the rows the writes add to or take from those the read matches
    /// (``OverlayAnswer/rowCountChange``). When that is not known, the server's, called inexact.
    private func countRows(of request: DataRequest, in answer: inout LocalRead, overlaid local: OverlayAnswer?) {
        answer.rowCount = answer.response.flatMap { api.rowCount(in: $0.headers) }
        guard let local else { return }
        if !api.pagesRows(request), local.inexactReasons.isEmpty, api.answerShape(of: request) == .rows,
            let rows = answer.body.flatMap(RowJSON.rows)
        {
            answer.rowCount = rows.count
        } else if let change = local.rowCountChange {
            answer.rowCount = answer.rowCount.map { $0 + change }
        } else {
            answer.inexactReasons.append(.countNotRecomputed)
        }
    }

    /// The rows of `body` (an answer of `table`) that a conflict waiting for the app holds.
    private func conflictedRows(of table: String?, in body: String?) -> [ConflictedRow] {
        guard let table, let body else { return [] }
        let held = state.withLock { $0.conflicts.keys(of: table) }
        guard !held.isEmpty, let rows = RowJSON.rows(body) else { return [] }
        let keyColumn = conflictRule(of: table).keyColumn
        return rows.compactMap { row in
            guard let key = RowJSON.filterText(row[keyColumn]), let ids = held[StoreKey.Bytes(key)] else { return nil }
            return ConflictedRow(key: key, conflictIDs: ids)
        }
    }

    /// The overlay of the writes of `request`'s table on `cachedBody`, or `nil` when no write
    /// applies, from the read's session (the cached answer parsed once, only new writes applied):
    /// what was kept when nothing changed since it was asked (the same change version), so a
    /// repeated read reads no write. `fresh` asks the evaluator afresh instead, the answer tests
    /// compare the session's with. `identity` is `request`'s.
    func overlay(
        _ request: DataRequest, identity: ReadIdentity, on cachedBody: String?, fresh: Bool = false
    ) async throws -> OverlayAnswer? {
        let key = identity.cacheKey
        // Read before the writes: a change while the answer is computed leaves it stale.
        let version = signals.version
        if !fresh, let kept = sessions.kept(request, key: key, withRelated: false, cachedBody: cachedBody, at: version)
        {
            guard case .answer(let local) = kept else { return nil }
            guard local.wantsRelatedAnswers else { return local }
            switch sessions.kept(request, key: key, withRelated: true, cachedBody: cachedBody, at: version) {
            case .answer(let asked): return asked
            case .nothing: return local  // the table had no other answer to ask with
            case nil: break
            }
        }
        let writes = try await overlayWrites(for: request, identity: identity)
        guard !writes.isEmpty else {
            if !fresh {
                sessions.keepNothing(request, key: key, withRelated: false, cachedBody: cachedBody, at: version)
            }
            return nil
        }
        guard let overlay = configuration.overlay else {
            return OverlayAnswer(body: cachedBody, inexactReasons: [.noOverlayEvaluator])
        }
        func answer(related: [RelatedAnswer]) -> OverlayAnswer {
            guard !fresh else {
                return overlay.answer(request, cachedBody: cachedBody, writes: writes, related: related)
            }
            return sessions.answer(
                request, key: key, cachedBody: cachedBody, related: related, writes: writes, version: version,
                evaluator: overlay)
        }
        let local = answer(related: [])
        guard local.wantsRelatedAnswers else { return local }
        let related = try await relatedAnswers(of: request, identity: identity)
        guard !related.isEmpty else {
            if !fresh {
                sessions.keepNothing(request, key: key, withRelated: true, cachedBody: cachedBody, at: version)
            }
            return local
        }
        return answer(related: related)
    }

    /// The writes the answer to `request` must show: those synced after its cached answer was
    /// fetched, then those waiting in the queue, all of the request's table, oldest first.
    /// `identity` is `request`'s.
    func overlayWrites(for request: DataRequest, identity: ReadIdentity) async throws -> [OverlayWrite] {
        guard identity.isGet, let table = identity.table else { return [] }
        let rule = conflictRule(of: table)
        let api = self.api  // read once, not copied out of the configuration at each use
        var synced = synced.writes(notIn: identity.cacheKey, table: table, api: api).map {
            OverlayWrite(id: $0.id, request: byKey($0.request, rule), isPending: false)
        }
        // The common online case, an empty queue, reads nothing from the store.
        guard queue.count > 0 else { return synced }
        let pending = try await queue.pending()
        let pendingIDs = Set(pending.map(\.id))
        // A write between its record as synced and its removal from the queue is in both.
        synced.removeAll { pendingIDs.contains($0.id) }
        // A function call (RPC, no table) may change any table: it goes to the evaluator too,
        // which cannot apply it and says so.
        return synced
            + pending.filter { api.table(of: $0.request) == table || api.table(of: $0.request) == nil }.map {
                OverlayWrite(id: $0.id, request: byKey($0.request, rule), isPending: true)
            }
    }

    /// `write` (to the table `rule` is of) as the overlay applies it: a write that names its row by
    /// key without its filter on the rule's ``ConflictRule/versionColumn``. That filter is the conflict check's
    /// (the library adds it and moves it past this device's own writes), not a filter of the
    /// app's: the cached row still shows the version the device read, and a write expecting a
    /// later one is still the device's own edit of that row. One that turns out to conflict
    /// leaves the answer when it moves to the rejected list.
    private func byKey(_ write: DataRequest, _ rule: ConflictRule) -> DataRequest {
        guard let versionColumn = rule.versionColumn, api.filters(on: versionColumn, in: write.path),
            api.equalValue(of: rule.keyColumn, in: write.path) != nil, api.table(of: write) != nil
        else { return write }
        var applied = write
        applied.path = api.removingFilters(on: versionColumn, from: write.path)
        return applied
    }

    /// The other cached answers of `request`'s table, from memory or the store. `identity` is
    /// `request`'s, built here when not given.
    func relatedAnswers(of request: DataRequest, identity: ReadIdentity? = nil) async throws -> [RelatedAnswer] {
        let identity = identity ?? ReadIdentity(request, api: api)
        guard let table = identity.table else { return [] }
        let own = identity.cacheKey
        let baseline = synced.baseline(of: own)
        var related: [RelatedAnswer] = []
        // Only answers of rows: a singular object or a CSV page holds no row list to read.
        for read in try await cachedReads(of: table)
        where read.cacheKey != own && api.answerShape(of: read.request) == .rows {
            // An answer fetched before a write this one holds would show that row without it.
            guard synced.baseline(of: read.cacheKey) >= baseline else { continue }
            // A stale answer (the change feed could not apply the server's changes to it) would
            // let the overlay answer a read with nothing cached from rows the server changed.
            guard let response = try await cache.cachedResponse(for: read.cacheKey), !response.isStale else {
                continue
            }
            related.append(RelatedAnswer(read: read.request, body: response.body))
        }
        return related
    }

    // MARK: - Live queries

    /// A live query: the answer to `request` now (cached, with the overlay), then a new one after
    /// each change that can alter it — a local write to its table, a sync outcome, a network
    /// refresh, an eviction, ``clear()``.
    ///
    /// After the first answer the network is asked by `policy` (not for `.cacheOnly`), and its
    /// answer arrives as a later element. Each answer is computed when the iterating task asks
    /// for it, so changes that come while it is busy (a flush of 100 writes) make one answer,
    /// and an answer equal to the last one is not repeated. While the sequence is iterated, the
    /// query's cached list is kept from eviction (a live reader).
    ///
    /// ```swift
    /// for try await notes in offline.observe(PostgREST.select("notes", order: "id")) {
    ///     render(notes.body, pending: notes.pendingRows)
    /// }
    /// ```
    ///
    /// - Important: Iterate it from one task. It ends when that task is cancelled or on
    ///   ``close()``, and throws when the store fails. A failed network refresh is not an error:
    ///   the cached answer stays (offline-first).
    public func observe(
        _ request: DataRequest, policy: ReadPolicy = .cacheFirstThenNetwork, maxAge: Duration? = nil
    ) -> LiveQuery {
        LiveQuery(offline: self, request: request, policy: policy, maxAge: maxAge)
    }

    /// ``observe(_:policy:maxAge:)`` with each answer's body decoded as `type` by
    /// ``Configuration/makeDecoder``.
    public func observe<Value: Decodable & Sendable>(
        _ request: DataRequest, as type: Value.Type, policy: ReadPolicy = .cacheFirstThenNetwork,
        maxAge: Duration? = nil
    ) -> some AsyncSequence<TypedRead<Value>, any Error> {
        let decoder = configuration.makeDecoder
        return observe(request, policy: policy, maxAge: maxAge).map { read in
            TypedRead(value: try read.decode(type, using: decoder()), read: read)
        }
    }

    /// The answer a live query shows now: the cached one, with the overlay. `identity` is
    /// `request`'s.
    func currentAnswer(_ request: DataRequest, identity: ReadIdentity) async throws -> LocalRead {
        let server = try await readThroughCache(request, identity: identity, policy: .cacheOnly, maxAge: nil)
        return try await overlaid(request, identity: identity, on: server)
    }

    // MARK: - Sync status

    /// Where the sync stands now: online, pending and rejected counts, flushing, the last sync,
    /// the last error, the next retry.
    public var status: SyncStatus {
        state.withLock { state in
            let pending = queue.count
            return SyncStatus(
                network: !state.triedNetwork ? .untried : state.online ? .reachable : .unreachable,
                pendingCount: pending, rejectedCount: queue.rejectedCount,
                isFlushing: state.flight != nil, lastSyncedAt: state.lastSyncedAt, lastError: state.lastError,
                nextRetryAt: pending == 0 ? nil : state.retryNotBefore ?? (state.online ? nil : state.offlineRetryAt),
                isPausedForAuthorization: state.pausedForAuthorization,
                conflictCount: state.conflicts.count, waitingOnConflictCount: state.waitingOnConflicts,
                changeFeeds: state.feed.statuses, otherAccountsPendingCount: state.otherAccountsPendingCount)
        }
    }

    /// The status now, then each change of it, in order, until the controller closes or the
    /// iterating task is cancelled. A burst of changes may arrive as its last state only.
    ///
    /// ```swift
    /// for await status in offline.statusUpdates() { badge.text = "\(status.pendingCount) waiting" }
    /// ```
    public func statusUpdates() -> AsyncStream<SyncStatus> {
        let changes = signals.follow(table: nil)
        let (stream, continuation) = AsyncStream.makeStream(of: SyncStatus.self)
        let task = Task {
            var last = status
            continuation.yield(last)
            for await _ in changes {
                let now = status
                if now != last {
                    last = now
                    continuation.yield(now)
                }
            }
            continuation.finish()
        }
        continuation.onTermination = { _ in task.cancel() }
        return stream
    }
}
