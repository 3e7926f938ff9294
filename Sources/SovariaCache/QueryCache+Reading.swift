import Sovaria

extension QueryCache {
    /// Answers `query` by `policy`: from memory, the store or `fetch`, which runs at most once
    /// at a time per query however many readers miss together (their answers and errors are
    /// shared, and the next read after it ends tries again).
    ///
    /// A fetched answer is stored like ``put(_:body:serverTime:etag:)`` does, except that the
    /// size check it calls for runs behind the answer: every reader sharing the fetch has its
    /// answer before the eviction pass ends (``waitForBackgroundRefreshes()`` waits for it).
    ///
    /// - Parameters:
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
        switch policy {
        case .cacheOnly:
            guard let cached = try await lookUp(query, id: id) else {
                return CacheRead(response: nil, source: .none, isRefreshing: false)
            }
            return CacheRead(response: cached.response, source: cached.source, isRefreshing: false)

        case .networkOnly:
            let cached = try await lookUp(query, id: id)?.response
            let fresh = try await refresh(query, id: id, cached: cached, fetch: fetch)
            return CacheRead(response: fresh, source: .network, isRefreshing: false)

        case .cacheFirstThenNetwork:
            let cached = try await lookUp(query, id: id)
            if let cached, !cached.response.needsRefresh(maxAge: maxAge, now: clock()) {
                return CacheRead(response: cached.response, source: cached.source, isRefreshing: false)
            }
            do {
                let fresh = try await refresh(query, id: id, cached: cached?.response, fetch: fetch)
                return CacheRead(response: fresh, source: .network, isRefreshing: false)
            } catch {
                // Offline-first: a failed fetch falls back to the last cached answer.
                guard let cached else { throw error }
                return CacheRead(response: cached.response, source: cached.source, isRefreshing: false)
            }

        case .staleWhileRevalidate:
            guard let cached = try await lookUp(query, id: id) else {
                let fresh = try await refresh(query, id: id, cached: nil, fetch: fetch)
                return CacheRead(response: fresh, source: .network, isRefreshing: false)
            }
            let needsRefresh = maxAge == nil || cached.response.needsRefresh(maxAge: maxAge, now: clock())
            if needsRefresh {
                runInBackground { _ = try? await self.refresh(query, id: id, cached: cached.response, fetch: fetch) }
            }
            return CacheRead(response: cached.response, source: cached.source, isRefreshing: needsRefresh)
        }
    }

    /// Fetches `query` once for every concurrent caller and caches the answer. The size check
    /// the answer calls for runs behind it: the readers sharing the fetch do not wait for a pass.
    private func refresh(
        _ query: String, id: HexID, cached: CachedResponse?,
        fetch: @escaping @Sendable (String?) async throws -> FetchResult
    ) async throws -> CachedResponse {
        try await flights.run(id) {
            let stored: (response: CachedResponse, needsSizeCheck: Bool)
            switch try await fetch(cached?.etag) {
            case .response(let body, let serverTime, let etag):
                stored = try await self.write(query, id: id, body: body, serverTime: serverTime, etag: etag)
            case .notModified(let serverTime):
                guard let cached else {
                    throw OfflineStoreError(
                        .unsupported,
                        "The fetch answered Not Modified for a query with nothing cached: send no If-None-Match "
                            + "when the ETag passed to the fetch is nil.")
                }
                stored = try await self.write(
                    query, id: id, body: cached.body, serverTime: serverTime, etag: cached.etag)
            }
            if stored.needsSizeCheck { self.checkSizeBehindAnswer() }
            return stored.response
        }
    }
}
