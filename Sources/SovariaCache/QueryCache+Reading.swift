import Sovaria
import SovariaPlumbing

extension QueryCache {
    /// Answers `query` by `policy`: from memory, the store or `fetch`, which runs at most once
    /// at a time per query however many readers miss together (their answers and errors are
    /// shared, and the next read after it ends tries again).
    ///
    /// - Important: A reader whose look-up misses (or finds an answer that needs a refresh)
    ///   either joins the fetch running for its query or gets the answer of one that finished
    ///   after its read began: a fetch whose answer was stored too late for the look-up to see
    ///   it is never followed by a second one, however slow the store. ``ReadPolicy/networkOnly``
    ///   is the exception by design: its answer always comes from a fetch that started after the
    ///   call began. It joins such a fetch if one runs; a fetch that started earlier is waited
    ///   for (its answer not used) and then one new fetch starts, shared by every caller that
    ///   waited for it.
    ///
    /// A fetched answer is stored like ``put(_:body:serverTime:etag:)`` does, except that the
    /// size check it calls for runs behind the answer: every reader sharing the fetch has its
    /// answer before the eviction pass ends (``waitForBackgroundRefreshes()`` waits for it).
    ///
    /// - Parameters:
    ///   - query: the query's identity (any string, such as the request's path and query).
    ///   - policy: where the answer may come from (``ReadPolicy``).
    ///   - maxAge: how old (since it was fetched, by the cache's clock) a cached answer may be
    ///     before it needs a refresh; `nil` means it never expires by age. Stale marks always
    ///     need a refresh.
    ///   - fetch: asks the server, given the cached ETag (for `If-None-Match`); returns the new
    ///     body or ``FetchResult/notModified(serverTime:)``.
    public func read(
        _ query: String,
        policy: ReadPolicy = .cacheFirstThenNetwork,
        maxAge: Duration? = nil,
        fetch: @escaping @Sendable (_ cachedETag: String?) async throws -> FetchResult
    ) async throws -> CacheRead {
        // Hashed once per read: the lookup, the shared fetch and the write all use this id.
        let id = CacheKeys.id(of: query)
        if policy == .cacheOnly {
            let cached = try await lookUp(query, id: id)
            return CacheRead(response: cached?.response, source: cached?.source ?? .none, isRefreshing: false)
        }
        let isFresh = { (response: CachedResponse) in
            // Stale-while-revalidate without a maxAge refreshes behind every answer.
            (policy != .staleWhileRevalidate || maxAge != nil)
                && !response.needsRefresh(maxAge: maxAge, now: self.clock())
        }
        // A fresh answer in memory is the common hit: it needs no ticket.
        if policy != .networkOnly, let hit = memoryHit(query, id: id), isFresh(hit) {
            return CacheRead(response: hit, source: .memory, isRefreshing: false)
        }
        // Taken before the look-up: a fetch that finishes while the look-up runs (its answer
        // stored too late for the look-up to see) is shared, never followed by a second fetch.
        let ticket = flights.ticket()
        let cached = try await lookUp(query, id: id)
        if policy != .networkOnly, let cached, isFresh(cached.response) {
            return CacheRead(response: cached.response, source: cached.source, isRefreshing: false)
        }
        switch policy {
        case .networkOnly:
            let fresh = try await refresh(
                query, id: id, cached: cached?.response, sharing: .startedAfter(ticket), fetch)
            return CacheRead(response: fresh, source: .network, isRefreshing: false)

        case .staleWhileRevalidate:
            if let cached {
                runInBackground {
                    _ = try? await self.refresh(
                        query, id: id, cached: cached.response, sharing: .finishedAfter(ticket), fetch)
                }
                return CacheRead(response: cached.response, source: cached.source, isRefreshing: true)
            }
            let fresh = try await refresh(query, id: id, cached: nil, sharing: .finishedAfter(ticket), fetch)
            return CacheRead(response: fresh, source: .network, isRefreshing: false)

        case .cacheFirstThenNetwork, .cacheOnly:
            do {
                let fresh = try await refresh(
                    query, id: id, cached: cached?.response, sharing: .finishedAfter(ticket), fetch)
                return CacheRead(response: fresh, source: .network, isRefreshing: false)
            } catch {
                // Offline-first: a failed fetch falls back to the last cached answer.
                guard let cached else { throw error }
                return CacheRead(response: cached.response, source: cached.source, isRefreshing: false)
            }
        }
    }

    /// Fetches `query` once for every caller `sharing` allows and caches the answer. The size
    /// check the answer calls for runs behind it: the readers sharing the fetch do not wait for a
    /// pass.
    private func refresh(
        _ query: String, id: HexID, cached: CachedResponse?, sharing: SingleFlight<HexID, CachedResponse>.Sharing,
        _ fetch: @escaping @Sendable (String?) async throws -> FetchResult
    ) async throws -> CachedResponse {
        try await flights.run(id, sharing: sharing) {
            let stored: (response: CachedResponse, needsSizeCheck: Bool)
            switch try await fetch(cached?.etag) {
            case .response(let body, let serverTime, let etag, let position, let headers):
                stored = try await self.write(
                    query, id: id, body: body, serverTime: serverTime, etag: etag, position: position,
                    headers: headers)
            case .notModified(let serverTime):
                guard let cached else {
                    throw OfflineStoreError(
                        .unsupported,
                        "The fetch answered Not Modified for a query with nothing cached: send no If-None-Match "
                            + "when the ETag passed to the fetch is nil.")
                }
                stored = try await self.write(
                    query, id: id, body: cached.body, serverTime: serverTime, etag: cached.etag,
                    position: cached.position, headers: cached.headers)
            }
            if stored.needsSizeCheck { self.checkSizeBehindAnswer() }
            return stored.response
        }
    }
}
