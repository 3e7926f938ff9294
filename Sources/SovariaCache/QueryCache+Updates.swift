import Foundation
import Sovaria
import SovariaPlumbing

/// What ``QueryCache/update(_:alongWith:)`` does to one cached response.
public enum CachedResponseUpdate: Sendable, Hashable {
    /// The cached response `base` is now `body`: brought up to date without a fetch (by changes
    /// the server reported). It keeps its server time, so its place in eviction order, and its
    /// fetch time; its `ETag` goes, as it named the body the server sent. If the cached response
    /// is no longer `base` (a fetch stored another meanwhile), it is marked stale instead: `body`
    /// was computed from an answer that is gone, and the new one may lack the changes.
    /// `position`: the change-feed position it is now current to (`nil`: it keeps its own).
    case replaceBody(base: CachedResponse, body: String, position: Int64? = nil)
    /// The response to `query` is stale: readers fetch it again.
    case markStale(query: String)

    /// The query it is about.
    public var query: String {
        switch self {
        case .replaceBody(let base, _, _): base.query
        case .markStale(let query): query
        }
    }
}

extension QueryCache {
    /// Applies `updates` to the cached responses and writes `extra` in the **same store batch**,
    /// after them: a checkpoint written with the changes it covers is never ahead of them (on a
    /// store without atomic batches, a crash can leave the changes without the checkpoint, never
    /// the reverse). An update of a query not cached (evicted meanwhile) is skipped; returns the
    /// queries changed.
    ///
    /// No `QueryCache.Configuration.onStored` call: the bodies were not fetched.
    ///
    /// - Throws: the store's error; then nothing was changed.
    @discardableResult
    public func update(_ updates: [CachedResponseUpdate], alongWith extra: [StoreWrite]) async throws -> [String] {
        try await gate.withGate { gated in
            try await loadIndexIfNeeded(gated)
            var writes: [StoreWrite] = []
            var changed: [(id: HexID, was: CacheIndex.Entry, response: CachedResponse)] = []
            writes.reserveCapacity(2 * updates.count + extra.count)
            changed.reserveCapacity(updates.count)
            for update in updates {
                let query = update.query
                let id = CacheKeys.id(of: query)
                // The record under the index's key: the memory layer's copy when it holds one,
                // read with the entry. Every write of a response (under the gate, which this
                // holds) sets the store first, then the entry and the memory layer together under
                // `state`; one that throws forgets the memory copies of what it touched
                // (`forgetMemory(of:)`); a reader copies a record up only while its entry still
                // names it. So a copy held is the stored record, and a page does not read back
                // each answer it just read.
                guard
                    let (entry, held) = state.withLock({ state in
                        state.index.entries[id].map { ($0, memoryHit(query, id: id)) }
                    })
                else { continue }
                // The record's key, written out only where it is read or deleted (a page rewrites
                // most records at the size they had, under the key they had).
                var key: String { CacheKeys.responseKey(id, entry) }
                let current: CachedResponse
                if let held {
                    current = held
                } else {
                    guard let text = try await store.get(key), let stored = CacheRecord.decode(text),
                        stored.query.hasSameUTF8Bytes(as: query)
                    else { continue }
                    current = stored
                }
                switch update {
                case .replaceBody(let base, let body, let position) where Self.sameRecord(current, base):
                    let response = CachedResponse(
                        query: query, body: body, serverTime: current.serverTime, fetchedAt: current.fetchedAt,
                        isStale: current.isStale, position: position ?? current.position)
                    // The key names the time and the size: a body of another size moves it.
                    let moved = CacheIndex.Entry(
                        serverTimeMillis: entry.serverTimeMillis, sizeBytes: response.sizeBytes, generation: 0)
                    writes.append(.set(key: CacheKeys.responseKey(id, moved), value: CacheRecord.encode(response)))
                    if !CacheKeys.sameResponseKey(entry, moved) { writes.append(.delete(key: key)) }
                    changed.append((id, entry, response))
                case .replaceBody, .markStale:
                    guard !current.isStale else { continue }
                    let stale = current.with(stale: true)
                    writes.append(.set(key: key, value: CacheRecord.encode(stale)))
                    changed.append((id, entry, stale))
                }
            }
            guard !writes.isEmpty || !extra.isEmpty else { return [] }
            writes.append(contentsOf: extra)
            do {
                try await store.write(writes)
            } catch {
                forgetMemory(of: changed.map(\.id))
                throw error
            }
            for (id, was, response) in changed {
                // A reader must not take the answer of a fetch that finished before the change.
                flights.forgetFinished(id)
                state.withLock { state in
                    guard state.index.entries[id] == was else { return }
                    state.index.upsert(id, serverTimeMillis: was.serverTimeMillis, sizeBytes: response.sizeBytes)
                    memory.set(response, forKey: id, cost: response.sizeBytes)
                }
            }
            return changed.map(\.response.query)
        }
    }

    /// Whether `a` and `b` are the same cached response as the store keeps it (times to the
    /// millisecond: one read from memory holds the clock's full precision; bodies byte for byte:
    /// Swift's `==` takes two spellings of one text for one body).
    private static func sameRecord(_ a: CachedResponse, _ b: CachedResponse) -> Bool {
        a.body.hasSameUTF8Bytes(as: b.body) && a.etag == b.etag && a.isStale == b.isStale && a.position == b.position
            && CacheRecord.millis(a.serverTime) == CacheRecord.millis(b.serverTime)
            && CacheRecord.millis(a.fetchedAt) == CacheRecord.millis(b.fetchedAt)
    }
}
