import Foundation
import Sovaria
import SovariaPlumbing
import SovariaQueue

extension SovariaOffline {
    // MARK: - Tables

    /// Where the queries read from each table are listed: `sov:meta:tables:<table>:<hash>` holds
    /// the query, so a write to the table finds its cached lists after a restart too.
    static let tablesPrefix = "sov:meta:tables:"

    /// Lists `query` among the cached queries of `table` (`nil`: a read of no table), once.
    func rememberTable(_ table: String?, query: String) async throws {
        guard let table else { return }
        let known = try await queriesByTable()
        guard known[table]?.contains(query) != true else { return }
        let hash = String(EntryChecksum.of(key: table, value: query), radix: 16)
        try await store.set(Self.tablesPrefix + table + ":" + hash, query)
        state.withLock { _ = $0.queriesByTable?[table, default: []].insert(query) }
    }

    /// Marks the cached answers of `request`'s table stale after one of this run's writes to it
    /// synced (the synced write overlays them until they are fetched again), unless a change
    /// feed follows the table (``isFollowingFeed(of:)``): then the feed brings the write's echo, with
    /// what the server added to the row, into the answers in place.
    func markTableStale(of request: DataRequest) async throws {
        let known = try await queriesByTable()
        guard !known.isEmpty, let table = api.table(of: request) else { return }
        if configuration.changeFeed != nil, try await isFollowingFeed(of: table) { return }
        for query in known[table] ?? [] { try await cache.markStale(query) }
    }

    /// The cached queries of `table`.
    func cachedQueries(of table: String) async throws -> Set<String> {
        try await queriesByTable()[table] ?? []
    }

    /// The cached `GET` reads of `table`, in their cache keys' order; parsed again only after a
    /// query of the table was added.
    func cachedReads(of table: String) async throws -> [ReadIdentity] {
        // Counted before the queries are read: a clear after that keeps nothing parsed here.
        let cleared = state.withLock { $0.tablesCleared }
        let queries = try await cachedQueries(of: table)
        let kept = state.withLock { $0.tablesCleared == cleared ? $0.readsByTable[table] : nil }
        if let kept, kept.queries == queries.count { return kept.reads }
        let api = self.api  // read once, not copied out of the configuration at each use
        let reads = queries.sorted().compactMap { ReadIdentity(cacheKey: $0, api: api) }.filter(\.isGet)
        state.withLock { state in
            if state.tablesCleared == cleared { state.readsByTable[table] = (queries.count, reads) }
        }
        return reads
    }

    /// The cached queries of each table: from memory, or listed once from the store.
    private func queriesByTable() async throws -> [String: Set<String>] {
        if let known = state.withLock({ $0.queriesByTable }) { return known }
        var listed: [String: Set<String>] = [:]
        var after: String?
        while true {
            let page = try await store.entries(Self.tablesPrefix, after: after, limit: 1_000)
            for entry in page {
                let table = entry.key.dropFirst(Self.tablesPrefix.count).split(separator: ":").dropLast().joined(
                    separator: ":")
                listed[table, default: []].insert(entry.value)
            }
            guard page.count == 1_000, let last = page.last else { break }
            after = last.key
        }
        return state.withLock { state in
            if let known = state.queriesByTable { return known }
            state.queriesByTable = listed
            return listed
        }
    }
}
