import Foundation
import Sovaria
import SovariaCache
import SovariaPlumbing
import SovariaQueue

extension SovariaOffline {
    // MARK: - Changes from other devices

    /// Where each table's checkpoint is kept: `sov:meta:feed:<table>` holds the position of the
    /// last change applied, as decimal text.
    static let feedPrefix = "sov:meta:feed:"

    /// Reads `table`'s changes after its checkpoint from ``Configuration/changeFeed`` (a page,
    /// and the pages after it while they come full, up to ``Configuration/feedPullBytes`` of
    /// rows) and brings the table's cached answers up to date without fetching them: each answer the
    /// ``Configuration/overlay`` evaluates exactly with the changes applied (rows replaced or
    /// removed by key, new rows placed by the answer's filter and order, only its columns kept)
    /// is stored so; any other (a `limit` page that lost a row, embedded resources, no overlay)
    /// is marked stale, and one a live query shows is fetched again at once. The checkpoint is
    /// written in the same store batch as the answers, after them: a crash never skips a change,
    /// and a change applied twice changes nothing. Pending writes still apply on top at every
    /// read.
    ///
    /// `wait`: how long the server may hold an empty answer for a change, when the feed offers
    /// that. The controller pulls the ``Configuration/followedTables`` on its own while online;
    /// call this to catch up now (after a launch, a pull to refresh).
    ///
    /// ```swift
    /// let pulled = try await offline.pullChanges(of: "notes")
    /// if pulled.hasMore { try await offline.pullChanges(of: "notes") }
    /// ```
    ///
    /// - Throws: ``ChangeFeedError`` for a first page that cannot be applied (a malformed change,
    ///   a position going back, another table): nothing of it is applied, the checkpoint stays,
    ///   the table's cached answers are marked stale, and the error is in ``status`` and
    ///   ``changeFeedErrors``; ``ChangeFeedError/Code/noFeed`` without a feed. The transport's
    ///   errors as they are (`SyncTransportError` `offline`: ``online`` turns `false`). A later
    ///   page that fails ends the pull with the pages before it, applied; the next pull throws.
    @discardableResult
    public func pullChanges(of table: String, wait: Duration? = nil) async throws -> ChangeFeedPull {
        try checkOpen()
        guard let feed = configuration.changeFeed else {
            throw ChangeFeedError(
                .noFeed, table: table, "This controller has no change feed: set Configuration.changeFeed.")
        }
        // Not counted in `inFlight`: a long poll would hold a close for `feedWait`. Instead a pull
        // that waited at the gate through a close sends nothing, and a page that comes back after
        // one is dropped before it is applied (it may have been asked with the next user's token).
        return try await feedGate(of: table).withGate { _ in
            try checkOpen()
            let epoch = state.withLock { $0.feed.epoch }
            let checkpoint = try await feedCheckpoint(of: table)
            // The writes synced before the feed is read: a page that reaches the log's end holds them.
            let syncedBefore = synced.count
            var page: ChangeFeedPage
            var skipped = 0
            do {
                page = try await asAccount { try await feed.changes(of: table, after: checkpoint, wait: wait) }
                try Self.check(page, of: table, after: checkpoint)
                // A backlog past the limit: its answers are fetched again rather than brought up
                // to date change by change (a must-refetch the controller chose).
                if let limit = configuration.feedRefetchPast, page.hasMore, let remaining = page.remaining,
                    page.changes.count + remaining > limit,
                    let latest = try await asAccount({ try await feed.latestPosition(of: table) }),
                    latest > (page.position ?? checkpoint ?? .min)
                {
                    skipped = page.changes.count + remaining
                    page = ChangeFeedPage(
                        changes: [], position: latest, mustRefetch: true, offersWaiting: page.offersWaiting,
                        remaining: 0)
                }
                if skipped == 0 { page = await joiningFullPages(to: page, of: table, feed: feed, epoch: epoch) }
            } catch {
                switch FeedFollower.failure(of: error) {
                case .offline(let offline): wentOffline(offline)
                case .unavailable(let unavailable):
                    reachedServer()
                    state.withLock { state in
                        if state.feed.epoch == epoch { state.feed.unavailable(table, unavailable) }
                    }
                    signals.statusChanged()
                case .cannotApply(let refused):
                    reachedServer()
                    // A page from before a clear() stops nothing of what the store holds now.
                    if state.withLock({ $0.feed.epoch }) == epoch { try await feedFailed(table, refused) }
                case .other: break
                }
                throw error
            }
            reachedServer()
            // A clear() while the page came: its checkpoint and answers are gone, the page is not
            // for what the store holds now.
            let cleared = ChangeFeedPull(
                changes: 0, updatedAnswers: 0, staleAnswers: 0, position: nil, mustRefetch: false, hasMore: false)
            guard state.withLock({ $0.feed.epoch == epoch && !$0.closed }) else { return cleared }
            var (pulled, changedAnswers, refetch) = try await apply(
                page, of: table, after: checkpoint, syncedBefore: syncedBefore)
            guard state.withLock({ $0.feed.epoch }) == epoch else {
                // The clear ran while the page was applied: what it wrote after the clear goes too
                // (an answer it updated was already gone: the cache skips it).
                try await store.delete(Self.feedPrefix + table)
                return cleared
            }
            if skipped > 0 {
                pulled.mustRefetch = false
                pulled.skippedChanges = skipped
            }
            state.withLock { state in
                // Not after a clear() that ran since the epoch was checked: it forgot the status.
                guard state.feed.epoch == epoch else { return }
                state.feed.pulled(
                    table, position: pulled.position, hasMore: page.hasMore, behindBy: page.remaining,
                    mustRefetch: pulled.mustRefetch, askedToWait: wait != nil, offersWaiting: page.offersWaiting)
            }
            // The status first: a live query that wakes on the answers finds it current.
            signals.statusChanged()
            if changedAnswers { signals.changed(table: table) }
            for read in refetch { refetchBehind(read) }
            // A queued write the page shows is out of date is a conflict now, not at the next flush.
            try await flagConflicts(shownBy: page.changes, of: table)
            return pulled
        }
    }

    /// Every feed error, as it happens: a page that could not be applied. One stream per
    /// controller: iterate it from one task.
    public var changeFeedErrors: AsyncStream<ChangeFeedError> { feedErrors.stream }

    /// The position of the last change of `table` applied, from the store (`nil`: none yet).
    public func feedCheckpoint(of table: String) async throws -> Int64? {
        guard let text = try await store.get(Self.feedPrefix + table) else { return nil }
        return Int64(text)
    }

    /// Whether a change feed follows `table`: it is one of the ``Configuration/followedTables``,
    /// was pulled in this run, or has a checkpoint.
    func isFollowingFeed(of table: String) async throws -> Bool {
        if configuration.followedTables.contains(table) || state.withLock({ $0.feed.statuses[table] != nil }) {
            return true
        }
        return try await feedCheckpoint(of: table) != nil
    }

    /// `page` with the full pages after it joined to it (``ChangeFeedPage/readsOn(holding:limit:)``,
    /// ``ChangeFeedPage/joined(with:)``): applied as one, each cached answer is rewritten once for
    /// them all. A later page that cannot be read or checked (offline, a 5xx, a change going
    /// back) ends the reading with the pages before it: the next pull reads it again and meets its
    /// error as a first page. A close, a clear or a cancellation ends it too.
    private func joiningFullPages(
        to page: ChangeFeedPage, of table: String, feed: any ChangeFeed, epoch: Int
    )
        async -> ChangeFeedPage
    {
        var page = page
        var bytes = page.changes.reduce(0) { $0 + $1.textBytes }
        while page.readsOn(holding: bytes, limit: configuration.feedPullBytes), !Task.isCancelled,
            let position = page.resumePosition, state.withLock({ $0.feed.epoch == epoch && !$0.closed })
        {
            let next: ChangeFeedPage
            do {
                next = try await asAccount { try await feed.changes(of: table, after: position, wait: nil) }
                try Self.check(next, of: table, after: position)
            } catch {
                break
            }
            page = page.joined(with: next)
            bytes += next.changes.reduce(0) { $0 + $1.textBytes }
            if next.changes.isEmpty { break }
        }
        return page
    }

    /// Checks that `page` is `table`'s, in order, after `checkpoint`.
    private static func check(_ page: ChangeFeedPage, of table: String, after checkpoint: Int64?) throws {
        var last = checkpoint
        for change in page.changes {
            guard change.table == table else {
                throw ChangeFeedError(
                    .unexpectedTable, table: table, "a change of \"\(change.table)\" in the feed of \"\(table)\"")
            }
            if let last, change.position <= last {
                throw ChangeFeedError(
                    .positionWentBack, table: table,
                    "the change at \(change.position) (row \(change.key)) comes after position \(last)")
            }
            last = change.position
        }
        if let position = page.position, let last, position < last {
            throw ChangeFeedError(.positionWentBack, table: table, "the page ends at \(position), before \(last)")
        }
    }

    /// Applies `page` to `table`'s cached answers and moves the checkpoint from `checkpoint`, in one
    /// store batch; returns what it did, whether an answer changed, and the reads a live query
    /// shows that must be fetched again (the caller signals and fetches once the status is set).
    private func apply(
        _ page: ChangeFeedPage, of table: String, after checkpoint: Int64?, syncedBefore: UInt64
    ) async throws -> (pull: ChangeFeedPull, changedAnswers: Bool, refetch: [DataRequest]) {
        // Read once: each use of the configuration's would copy it, per answer.
        let (api, overlay) = (self.api, configuration.overlay)
        // A change holds its row's whole new state: only the last one of each row matters (rows
        // told apart by their key's bytes: `é` composed and decomposed are two keys).
        var seen = Set<StoreKey.Bytes>(minimumCapacity: page.changes.count)
        var changes: [RowChange] = []
        changes.reserveCapacity(page.changes.count)
        for change in page.changes.reversed() where seen.insert(StoreKey.Bytes(change.key)).inserted {
            changes.append(change)
        }
        changes.reverse()
        // Two arrays, not one of pairs: a pair holding a write is copied by the runtime's generic
        // tuple copy, for each change of each answer.
        let writes = changes.map(OverlayWrite.init(change:))
        let position = page.position ?? page.changes.last?.position
        // Counted before the answers are read: a fetch of the table that ends after this finds the
        // count moved, whether it stored its answer before the batch below or after.
        if !page.changes.isEmpty || page.mustRefetch { state.withLock { $0.feed.applying(table) } }
        var updates: [CachedResponseUpdate] = []
        var refetch: [DataRequest] = []
        var current: [Int] = []  // the answers the page leaves exact, by index in `answers`
        let reads = try await cachedReads(of: table)
        var answers = try await pageAnswers(
            of: table, reads, mustRead: page.mustRefetch, keepsVersions: !page.changes.isEmpty || page.mustRefetch)
        var rewritten = [Bool](repeating: false, count: answers.count)  // a body replaced, by index
        // The changes that can alter each answer the overlay brings up to date; the others are
        // not evaluated with it (an answer none can alter stays as it is, and is not read).
        var altering = [[Int]?](repeating: nil, count: answers.count)
        if let overlay, !changes.isEmpty, !page.mustRefetch {
            altering = try await changesThatCanAlter(&answers, of: reads, among: changes, overlay: overlay)
        }
        for index in answers.indices {
            // The answers no change can alter, first, without a copy of each (most, as a rule).
            guard !page.changes.isEmpty || page.mustRefetch else {
                if !answers[index].isStale { current.append(index) }
                continue
            }
            if !page.mustRefetch, !answers[index].isStale, altering[index]?.isEmpty == true {
                current.append(index)
                continue
            }
            let answer = answers[index]
            let identity = reads[answer.read]
            let (query, read) = (identity.cacheKey, identity.request)
            if answer.isStale {
                if cache.isBeingRead(query) { refetch.append(read) }
                continue
            }
            // Read now, it may be a body a fetch stored since the overlay was asked about the one
            // it keeps: every change counts for it.
            var (cached, altered) = (answer.cached, altering[index])
            if cached == nil { (cached, altered) = (try await cache.cachedResponse(for: query, at: answer.slot), nil) }
            guard let cached else { continue }
            // Only the changes after the position the answer is current to (an older one would
            // set a row it holds newer back) that can alter it.
            var fresh: [OverlayWrite] = []
            fresh.reserveCapacity(altered?.count ?? writes.count)
            for change in altered ?? Array(writes.indices)
            where cached.position.map({ changes[change].position > $0 }) ?? true {
                fresh.append(writes[change])
            }
            if !page.mustRefetch, !cached.isStale, fresh.isEmpty {
                current.append(index)
                continue
            }
            // A counted answer is fetched again: a change would leave its count wrong.
            if !page.mustRefetch, !cached.isStale, !api.countsRows(read), let overlay {
                let brought = overlay.answer(read, cachedBody: cached.body, writes: fresh, related: [])
                if brought.inexactReasons.isEmpty, !brought.wantsRelatedAnswers, let body = brought.body {
                    if !body.hasSameUTF8Bytes(as: cached.body) {
                        updates.append(.replaceBody(base: cached, body: body, position: position))
                        rewritten[index] = true
                    }
                    current.append(index)
                    continue
                }
            }
            if !cached.isStale { updates.append(.markStale(query: query)) }
            if cache.isBeingRead(query) { refetch.append(identity.request) }
        }
        let moveCheckpoint: [StoreWrite] =
            position.map { [.set(key: Self.feedPrefix + table, value: String($0))] } ?? []
        let changed = try await cache.update(updates, alongWith: moveCheckpoint)
        // An answer whose body the cache did not replace, because a fetch stored another one
        // meanwhile, is a stale mark now: it may lack the page, like any other it was not applied
        // to, and it holds no synced write either. One at the version the page began with is as
        // it was then: not stale. One that changed while the page ran is current only if the
        // server answered it at the page's position or past it (the page's own rewrite is at
        // it); a fetch answered before the page's changes lacks them, and is marked stale.
        let versionsNow = cache.versions(of: current.map { answers[$0].slot })
        var kept: [String] = []
        var missedThePage: [String] = []
        for (index, versionNow) in zip(current, versionsNow) {
            let query = reads[answers[index].read].cacheKey
            let unchanged =
                answers[index].version != nil && versionNow == answers[index].version
                && !rewritten[index]
            var isCurrent = unchanged
            if !isCurrent, let now = try await cache.cachedResponse(for: query, at: answers[index].slot), !now.isStale {
                isCurrent = page.changes.isEmpty || (now.position ?? .min) >= (position ?? .max)
                if !isCurrent { missedThePage.append(query) }
            }
            if isCurrent {
                kept.append(query)
            } else if cache.isBeingRead(query) {
                refetch.append(reads[answers[index].read].request)
            }
        }
        for query in missedThePage { try await cache.markStale(query) }
        if !page.changes.isEmpty || page.mustRefetch {
            // Every answer the page was not applied to misses its changes until it is fetched.
            // All kept (the distinct reads' keys): none to mark.
            if kept.count < reads.count {
                let applied = Set(kept)
                synced.markedStaleByFeed(reads.map(\.cacheKey).filter { !applied.contains($0) })
            }
        }
        if !page.hasMore {
            // Read to the log's end: the answers brought up to date hold every write synced
            // before the read (its echo, or a later change of its row), and stop applying them.
            synced.caughtUp(kept, since: syncedBefore, checkpoint: position ?? checkpoint)
        }
        let stale = updates.count { if case .markStale = $0 { true } else { false } }
        let pull = ChangeFeedPull(
            changes: page.changes.count, updatedAnswers: updates.count - stale, staleAnswers: stale,
            position: position ?? checkpoint, mustRefetch: page.mustRefetch,
            hasMore: page.hasMore)
        return (pull, !changed.isEmpty, refetch)
    }

    /// A cached answer of a table as a page meets it.
    private struct PageAnswer {
        /// Its read, by index in the page's reads: not a copy of the read's identity, which a page
        /// would make for every cached answer of the table.
        var read: Int
        var slot: QueryCache.Slot
        /// Its version in the cache when the page began (`QueryCache.version(of:)`).
        var version: UInt64?
        /// Whether it was stale then.
        var isStale: Bool
        /// The cached response, where the page read it (read after `version`).
        var cached: CachedResponse?
    }

    /// The cached answers of `table` among `reads` as the page begins: each at its version, read
    /// only where the last page did not see it at that version (or `mustRead`); kept for the
    /// next page when `keepsVersions`. A page with nothing to apply keeps none: the overlay
    /// learns an answer's version only from a page that asks it, so the next page must give it
    /// the body of each answer a page rewrote since (unread, the overlay would not know it). The
    /// price: each empty page reads those answers again (from the memory layer, as a rule).
    private func pageAnswers(
        of table: String, _ reads: [ReadIdentity], mustRead: Bool, keepsVersions: Bool
    ) async throws -> [PageAnswer] {
        // The last page's, when it met the same reads, their keys byte for byte: a slot is the hash
        // of a key's bytes, and one of another spelling (`é` composed or not, which `==` calls
        // the same read) would find no response of this read.
        let last = state.withLock { state in
            state.feedAnswerVersions[table].flatMap { last in
                last.reads.count == reads.count
                    && zip(last.reads, reads).allSatisfy { $0.cacheKey.hasSameUTF8Bytes(as: $1.cacheKey) } ? last : nil
            }
        }
        let seen = last?.seen
        let slots = last?.slots ?? reads.map { QueryCache.Slot($0.cacheKey) }
        // Before the responses: what is read after them is of this version or a later one.
        let versions = cache.versions(of: slots)
        var answers: [PageAnswer] = []
        var seenNow = [(version: UInt64, isStale: Bool)?](repeating: nil, count: reads.count)
        for index in reads.indices {
            let version = versions[index]
            if !mustRead, let version, let known = seen?[index], known.version == version {
                answers.append(
                    PageAnswer(read: index, slot: slots[index], version: version, isStale: known.isStale))
                seenNow[index] = known
                continue
            }
            guard let cached = try await cache.cachedResponse(for: reads[index].cacheKey, at: slots[index]) else {
                continue
            }
            answers.append(
                PageAnswer(
                    read: index, slot: slots[index], version: version, isStale: cached.isStale, cached: cached))
            seenNow[index] = version.map { ($0, cached.isStale) }
        }
        if keepsVersions { state.withLock { $0.feedAnswerVersions[table] = (reads, slots, seenNow) } }
        return answers
    }

    /// For each of `answers`, the indexes of `changes` that can alter it (`nil`: every change,
    /// unasked: a stale or counted answer). The overlay is asked with the answers' versions and
    /// the bodies the page read; those it does not keep are read and it is asked again.
    private func changesThatCanAlter(
        _ answers: inout [PageAnswer], of reads: [ReadIdentity], among changes: [RowChange],
        overlay: any OverlayEvaluator
    ) async throws -> [[Int]?] {
        var altering = [[Int]?](repeating: nil, count: answers.count)
        let api = self.api  // read once, not copied out of the configuration at each use
        let evaluated = answers.indices.filter {
            !answers[$0].isStale && !api.countsRows(reads[answers[$0].read].request)
        }
        guard !evaluated.isEmpty else { return altering }
        func ask(_ answers: [PageAnswer]) -> [[Int]?] {
            let asked = evaluated.map {
                FeedAnswer(
                    id: reads[answers[$0].read].cacheKey, version: answers[$0].version,
                    read: reads[answers[$0].read].request, cachedBody: answers[$0].cached?.body)
            }
            return overlay.changesThatCanAlter(versioned: asked, among: changes)
        }
        var found = ask(answers)
        // Read now: the answers the overlay does not keep, and those some change can alter (the
        // page evaluates them). Each is asked about again with the body read: a fetch may have
        // stored another body since the one the overlay kept, and what can alter it is found
        // for the body the page evaluates.
        let toRead = zip(evaluated, found).filter {
            $0.1 == nil || ($0.1?.isEmpty == false && answers[$0.0].cached == nil)
        }
        if !toRead.isEmpty {
            for (index, _) in toRead {
                answers[index].cached = try await cache.cachedResponse(
                    for: reads[answers[index].read].cacheKey, at: answers[index].slot)
            }
            found = ask(answers)
        }
        for (index, indexes) in zip(evaluated, found) { altering[index] = indexes }
        return altering
    }

    /// A page of `table` could not be applied: its cached answers go stale (what a live query
    /// shows is fetched again), the error is kept in the status and delivered.
    private func feedFailed(_ table: String, _ error: ChangeFeedError) async throws {
        let retry = configuration.clock().addingTimeInterval(configuration.retryMaxDelay.timeInterval)
        state.withLock { $0.feed.stopped(table, error, until: retry) }
        feedErrors.continuation.yield(error)
        signals.statusChanged()
        let reads = try await cachedReads(of: table)
        let queries = reads.map(\.cacheKey)
        let changed = try await cache.update(queries.map { .markStale(query: $0) }, alongWith: [])
        synced.markedStaleByFeed(queries)
        if !changed.isEmpty { signals.changed(table: table) }
        for read in reads where cache.isBeingRead(read.cacheKey) { refetchBehind(read.request) }
    }

    /// Fetches `read` again behind the caller's answer (one fetch per query at a time: the
    /// cache's single flight); its answer reaches live queries as a change of the table.
    func refetchBehind(_ read: DataRequest) {
        Task { _ = try? await self.readThroughCache(read, policy: .networkOnly, maxAge: nil) }
    }

    /// How many pulls of `table` with changes were applied in this run: a fetch that saw it
    /// change while it ran may lack what they brought. 0 for `nil`, a read of no table.
    func feedApplies(of table: String?) -> Int {
        guard let table else { return 0 }
        return state.withLock { $0.feed.applies(of: table) }
    }

    /// Whether the next read of `table` waits for a change (``FeedFollower/waits(_:feedWait:)``).
    private func waitsForChanges(of table: String) -> Bool {
        state.withLock { $0.feed.waits(table, feedWait: configuration.feedWait) }
    }

    /// The timer's pull of the followed tables (and the open's,
    /// ``Configuration/feedFollowsAtOpen``): each at once, to the log's end; a caught-up one that
    /// the feed offers waiting for with ``Configuration/feedWait``, at once after the read that
    /// caught it up and again after each wait that brought changes. Skipped offline until the flush's retry time, and after a failed
    /// pull (the server busy, a 5xx) until the flush's backoff or the answer's `Retry-After`
    /// passes; a table whose page could not be applied is pulled again after
    /// ``Configuration/retryMaxDelay`` (or at once by ``pullChanges(of:wait:)``).
    func feedTimerFired() async {
        let now = configuration.clock()
        let tables = state.withLock { state -> [String]? in
            if state.closed { return nil }
            return state.feed.startTick(
                configuration.followedTables, now: now, online: state.online, offlineRetryAt: state.offlineRetryAt)
        }
        guard let tables else { return }
        await withTaskGroup(of: (any Error)?.self) { group in
            for table in tables {
                group.addTask {
                    do {
                        var waits = self.waitsForChanges(of: table)
                        while true {
                            let pulled = try await self.pullChanges(
                                of: table, wait: waits ? self.configuration.feedWait : nil)
                            // On at once while the follower's rule says so (full pages, a wait
                            // that brought changes, the first wait after catching up).
                            let waitsNext = self.waitsForChanges(of: table)
                            guard
                                FeedFollower.readsOn(
                                    hasMore: pulled.hasMore, changes: pulled.changes, waited: waits,
                                    waitsNext: waitsNext)
                            else { return nil }
                            waits = waitsNext
                        }
                    } catch {
                        return error
                    }
                }
            }
            var failures: [any Error] = []
            for await failure in group { if let failure { failures.append(failure) } }
            // A busy server's Retry-After is kept; else the flush's backoff.
            let busy = failures.compactMap { ($0 as? ChangeFeedError)?.response }.first { $0.asksToTryLater }
            let backoff = FeedFollower.Backoff(base: configuration.retryBaseDelay, maximum: configuration.retryMaxDelay)
            let jitter = configuration.jitter()
            state.withLock { state in
                state.feed.endTick(failed: !failures.isEmpty, busy: busy, now: now, backoff: backoff, jitter: jitter)
            }
        }
    }
}
