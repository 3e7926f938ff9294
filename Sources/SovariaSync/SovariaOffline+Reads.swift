import Foundation
import Sovaria
import SovariaCache
import SovariaQueue

extension SovariaOffline {
    // MARK: - Reads

    /// Answers `request` through the query cache, by `policy`; offline, from the last cached
    /// result: the server's answer, before any overlay. `identity` must be `request`'s
    /// (``ReadIdentity``), built once per read by the caller, or here when not given.
    func readThroughCache(
        _ request: DataRequest, identity: ReadIdentity? = nil, policy: ReadPolicy, maxAge: Duration?
    ) async throws -> CacheRead {
        try inFlight.enter()
        defer { inFlight.leave() }
        let identity = identity ?? ReadIdentity(request, api: api)
        assert(identity.cacheKey == ReadIdentity(request, api: api).cacheKey, "another request's identity")
        let query = identity.cacheKey
        try await rememberTable(identity.table, query: query)
        let feedAppliesBefore = feedApplies(of: identity.table)
        let answer = try await cache.read(query, policy: policy, maxAge: maxAge) { [self] etag in
            // The synced writes this fetch's answer will hold: every one synced before it starts.
            synced.fetchStarted(query)
            // A refresh behind an answer that starts after a close sends nothing.
            try checkOpen()
            var conditional = request
            if let etag { conditional.setHeader("If-None-Match", etag) }
            let response: DataResponse
            do {
                response = try await send(conditional)
            } catch let error as SyncTransportError where error.code == .offline {
                wentOffline(error)
                throw error
            }
            // Nor stores what came back once the controller closed.
            try checkOpen()
            reachedServer()
            let serverTime = response.header("Date").flatMap(HTTPDate.parse) ?? configuration.clock()
            guard response.status == 304 || response.isSuccess else {
                throw SovariaOfflineError(
                    .unexpectedStatus,
                    "\(request.method) \(request.path): the server answered \(response.status) (\(response.body)); "
                        + "nothing was cached: check the request, or try again later for a 5xx.",
                    response: response)
            }
            if response.status == 304 { return .notModified(serverTime: serverTime) }
            var kept: [String: String] = [:]
            for name in api.keptResponseHeaders { kept[name] = response.header(name) }
            return .response(
                body: response.body, serverTime: serverTime, etag: response.header("ETag"),
                position: configuration.changeFeed?.position(of: response), headers: kept)
        }
        if answer.source == .network {
            // Changes from the feed applied while the fetch ran may be missing from its answer:
            // the next network read fetches it again. Not when the server said the answer is
            // current to the checkpoint the feed reached, or past it: it holds them.
            if feedApplies(of: identity.table) != feedAppliesBefore,
                try await !holdsTheFeed(answer.response, of: identity.table)
            {
                try await cache.markStale(query)
                synced.markedStaleByFeed([query])
                // A live query shows it: fetched again behind this answer (the feed keeps it from
                // then on), not left stale until the app reads from the network.
                if cache.isBeingRead(query) { refetchBehind(identity.request) }
            }
            try await cache.evict(downToResponses: configuration.maxCached)
            try await keepDeviceCacheBudget()
        }
        return answer
    }

    /// Whether `response`, an answer of `table`, is current to the table's checkpoint or past
    /// it, as the server said.
    private func holdsTheFeed(_ response: CachedResponse?, of table: String?) async throws -> Bool {
        guard let position = response?.position, let table,
            let checkpoint = try await feedCheckpoint(of: table)
        else { return false }
        return position >= checkpoint
    }

}
