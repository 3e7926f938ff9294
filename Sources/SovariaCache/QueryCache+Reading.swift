import Sovaria

extension QueryCache {
    /// Answers `query` by `policy`: from memory, the store or `fetch`, which runs at most once
    /// at a time per query however many readers miss together (their answers and errors are
    /// shared, and the next read after it ends tries again).
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
        switch policy {
        case .cacheOnly:
            guard let cached = try await lookUp(query) else {
                return CacheRead(response: nil, source: .none, isRefreshing: false)
            }
            return CacheRead(response: cached.response, source: cached.source, isRefreshing: false)

        case .networkOnly:
            let cached = try await lookUp(query)?.response
            let fresh = try await refresh(query, cached: cached, fetch: fetch)
            return CacheRead(response: fresh, source: .network, isRefreshing: false)

        case .cacheFirstThenNetwork:
            let cached = try await lookUp(query)
            if let cached, !cached.response.needsRefresh(maxAge: maxAge, now: clock()) {
                return CacheRead(response: cached.response, source: cached.source, isRefreshing: false)
            }
            do {
                let fresh = try await refresh(query, cached: cached?.response, fetch: fetch)
                return CacheRead(response: fresh, source: .network, isRefreshing: false)
            } catch {
                // Offline-first: a failed fetch falls back to the last cached answer.
                guard let cached else { throw error }
                return CacheRead(response: cached.response, source: cached.source, isRefreshing: false)
            }

        case .staleWhileRevalidate:
            guard let cached = try await lookUp(query) else {
                let fresh = try await refresh(query, cached: nil, fetch: fetch)
                return CacheRead(response: fresh, source: .network, isRefreshing: false)
            }
            let needsRefresh = maxAge == nil || cached.response.needsRefresh(maxAge: maxAge, now: clock())
            if needsRefresh { refreshInBackground(query, cached: cached.response, fetch: fetch) }
            return CacheRead(response: cached.response, source: cached.source, isRefreshing: needsRefresh)
        }
    }

    /// Fetches `query` once for every concurrent caller and caches the answer.
    private func refresh(
        _ query: String, cached: CachedResponse?, fetch: @escaping @Sendable (String?) async throws -> FetchResult
    ) async throws -> CachedResponse {
        try await flights.run(CacheKeys.id(of: query)) {
            switch try await fetch(cached?.etag) {
            case .response(let body, let serverTime, let etag):
                return try await self.put(query, body: body, serverTime: serverTime, etag: etag)
            case .notModified(let serverTime):
                guard let cached else {
                    throw OfflineStoreError(
                        .unsupported,
                        "The fetch answered Not Modified for a query with nothing cached: send no If-None-Match "
                            + "when the ETag passed to the fetch is nil.")
                }
                return try await self.put(query, body: cached.body, serverTime: serverTime, etag: cached.etag)
            }
        }
    }

    private func refreshInBackground(
        _ query: String, cached: CachedResponse, fetch: @escaping @Sendable (String?) async throws -> FetchResult
    ) {
        refreshes.withLock { state in
            state.next += 1
            let token = state.next
            state.running[token] = Task {
                _ = try? await self.refresh(query, cached: cached, fetch: fetch)
                self.refreshes.withLock { _ = $0.running.removeValue(forKey: token) }
            }
        }
    }
}
