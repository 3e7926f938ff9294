import Foundation
import Sovaria
import SovariaPlumbing
import Synchronization

/// The cache of query results, written once against `OfflineStore` so it runs unchanged on
/// every engine: bounded by ``CacheSize``, with an in-memory LRU layer in front of the store and
/// one fetch per query at a time.
///
/// A query's identity is any string, for example a PostgREST URL with its filters, however
/// long: the cache files it under a 128-bit hash and keeps the full identity in the entry,
/// checked on every read. When a size check runs and what a pass evicts:
/// <doc:TheQueryCache#Size-and-eviction>.
///
/// ```swift
/// let cache = try await QueryCache(store: try SQLiteOfflineStore(fileURL: url))
/// let answer = try await cache.read("/rest/v1/notes?select=*&owner=eq.7") { etag in
///     let (body, date, newETag) = try await api.get(path, ifNoneMatch: etag)
///     return .response(body: body, serverTime: date, etag: newETag)
/// }
/// ```
///
/// - Important: Safe from any number of tasks. Writes (``put(_:body:serverTime:etag:)``, stale
///   marks, removals, eviction) run one at a time, so the cache's index always matches the
///   store. Opening returns before the index is loaded: reads meanwhile find their response by
///   its key, and writes, ``totalBytes`` and ``responseCount`` wait for the load.
public final class QueryCache: Sendable {
    /// The store the cache keeps its entries in.
    public let store: any OfflineStore
    /// The options the cache was opened with.
    public let configuration: Configuration
    /// The bound on the cached bodies: ``Configuration/size``.
    public var size: CacheSize { configuration.size }

    // The eviction rules (see <doc:TheQueryCache#Size-and-eviction>): constants, not options.
    /// How many responses shown by live readers are kept whatever their age.
    static let maxProtectedResponses = 500
    /// A response at least this long (UTF-8 bytes) starts a size check.
    static let checkAfterResponseBytes = 4_096
    /// Every this many responses start a size check.
    static let checkEveryResponses = 32
    /// Responses deleted per store batch during eviction.
    static let evictionBatchResponses = 10
    /// How long a pass that puts carry waits between its looks: it writes a batch of its own
    /// only when no put carried one for this long.
    static let carriedPassLookInterval = Duration.milliseconds(1)

    // Coordination. Who may touch what:
    // - `gate`: every change of the store's cache entries runs inside it (puts, stale marks,
    //   removals, clearing, eviction batches, the index load). Helpers that must run inside take
    //   its `GateToken`.
    // - `state`: the fields that change together (the index, the pass puts carry, the pass
    //   behind answers, the records, the background tasks). Taken for a few dictionary and
    //   heap operations, never across a suspension.
    // - `memory`: the memory layer, with a lock of its own so memory hits never wait for the
    //   index. It is changed only while `state` is held, so it never keeps an answer older than
    //   the index's; a memory hit reads it alone.
    // Lock order: SovariaPlumbing/LockOrder.swift (`state`, then `memory`). `flights`, `readers`
    // and a pass's `EvictionProgress` are leaf locks.

    /// What the cache changes under one lock.
    struct State {
        /// The responses in the store: their keys, the eviction order and the total.
        var index = CacheIndex(complete: false)
        /// The pass whose batches puts carry in their own store writes, while it runs.
        var carriedPass: EvictionProgress?
        /// Whether a pass runs behind an answer, and whether another check was asked for
        /// meanwhile: one runs at a time, and once more after it when asked.
        var passBehind = (running: false, runAgain: false)
        /// The most recent eviction passes (up to 1,000), oldest first.
        var passes: [EvictionPass] = []
        /// The memory layer's most recent sheds (up to 100), oldest first.
        var sheds: [MemoryShed] = []
        /// Work running behind answers already given: refreshes, passes, the index load.
        var background: [UInt64: Task<Void, Never>] = [:]
        var nextBackgroundID: UInt64 = 0
        /// The memory-pressure events the memory layer answers (cancelled when the cache
        /// goes), or why the configured source delivers none.
        var memoryPressureObservation: MemoryPressureObservation?
        var memoryPressureUnavailable: MemoryPressureUnavailable?
    }

    let clock: @Sendable () -> Date
    let state = RankedMutex(LockRank.queryCacheState, State())
    /// The in-memory layer, keyed by the query's hash id; costs are body bytes.
    let memory: MemoryCache<HexID, CachedResponse>
    let gate = AsyncGate<QueryCache>()
    let flights = SingleFlight<HexID, CachedResponse>()
    /// Shared with the ``LiveReader`` objects it hands out, which may outlive the cache.
    let readers = LiveReaders()

    /// Opens the cache kept in `store` with the options in `configuration`, and starts
    /// loading its index from the key names behind the open.
    ///
    /// The index loads in a task of its own (``waitForBackgroundRefreshes()`` waits for it), and a
    /// read made meanwhile finds its response by its key. Puts, stale marks, removals and
    /// eviction wait for the load; if it fails, the next of them (or ``totalBytes``,
    /// ``responseCount``) loads again and throws its error. ``clearLocalData()`` does not need it.
    public init(store: any OfflineStore, configuration: Configuration) async throws {
        self.store = store
        self.configuration = configuration
        clock = configuration.clock
        memory = MemoryCache(
            countLimit: configuration.memoryCountLimit, costLimit: configuration.memoryCostLimitBytes,
            rank: .queryCacheMemory)
        observeMemoryPressure(configuration.memoryPressure)
        runInBackground { try? await self.waitForIndex() }
    }

    /// Opens the cache kept in `store`: the short form of ``init(store:configuration:)``, with
    /// ``Configuration``'s defaults for what it does not name.
    ///
    /// - Parameters:
    ///   - store: the store the responses are kept in.
    ///   - size: the bound on cached bodies (``Configuration/size``).
    ///   - memoryCountLimit: the most responses the memory layer keeps
    ///     (``Configuration/memoryCountLimit``).
    ///   - memoryCostLimitBytes: the most body bytes the memory layer keeps
    ///     (``Configuration/memoryCostLimitBytes``).
    ///   - clock: the time `maxAge` is measured with (``Configuration/clock``).
    public convenience init(
        store: any OfflineStore,
        size: CacheSize = Configuration.defaultSize,
        memoryCountLimit: Int = Configuration.defaultMemoryCountLimit,
        memoryCostLimitBytes: Int = Configuration.defaultMemoryCostLimitBytes,
        clock: @escaping @Sendable () -> Date = Configuration.defaultClock
    ) async throws {
        try await self.init(
            store: store,
            configuration: Configuration(
                size: size, memoryCountLimit: memoryCountLimit, memoryCostLimitBytes: memoryCostLimitBytes,
                clock: clock))
    }

    /// The summed UTF-8 length of every cached body; waits for the index if it still loads.
    public var totalBytes: Int {
        get async throws {
            try await waitForIndex()
            return state.withLock { $0.index.totalBytes }
        }
    }

    /// How many responses are cached; waits for the index if it still loads.
    public var responseCount: Int {
        get async throws {
            try await waitForIndex()
            return state.withLock { $0.index.entries.count }
        }
    }

    /// The cached response for `query` from memory or the store (copied up to memory), or `nil`.
    public func cachedResponse(for query: String) async throws -> CachedResponse? {
        try await lookUp(query, id: CacheKeys.id(of: query))?.response
    }

    /// ``cachedResponse(for:)`` where the caller holds `query`'s ``Slot``: its key is not hashed
    /// again (a change feed's page reads each answer it rewrote at the last page). `nil` also
    /// when `slot` is another query's: the response read is checked against `query`.
    public func cachedResponse(for query: String, at slot: Slot) async throws -> CachedResponse? {
        try await lookUp(query, id: slot.id)?.response
    }

    /// A number that changes whenever `query`'s cached response does (stored, brought up to date,
    /// marked stale, removed, evicted, cleared) and is never given again in the process; `nil`
    /// when nothing is cached for it, or while the index still loads behind the open.
    ///
    /// What a caller learned from the response at one version holds while the version stays:
    /// read the version first, then the response, and keep what it shows under that version.
    /// Two queries whose keys collide share a slot and its version, which only makes it change
    /// more often. O(1): no store read.
    public func version(of query: String) -> UInt64? {
        versions(of: [query])[0]
    }

    /// ``version(of:)`` of each of `queries`, under one lock.
    public func versions(of queries: [String]) -> [UInt64?] {
        versions(of: queries.map(Slot.init))
    }

    /// ``version(of:)`` of the query of each of `slots`, under one lock: what a caller asking
    /// about the same queries again and again hashes once.
    public func versions(of slots: [Slot]) -> [UInt64?] {
        state.withLock { state in
            guard state.index.isComplete else { return Array(repeating: nil, count: slots.count) }
            return slots.map { state.index.entries[$0.id]?.generation }
        }
    }

    /// Where a query's response is kept in the cache: its key hashed once, to ask for versions
    /// by slot.
    public struct Slot: Sendable, Hashable {
        let id: HexID

        /// The slot of `query`.
        public init(_ query: String) { id = CacheKeys.id(of: query) }
    }

    /// Caches `body` as the response to `query` and, when the eviction rules say so, starts an
    /// eviction pass behind it.
    ///
    /// Returns once its own response is stored; the pass runs in a task of its own
    /// (``waitForBackgroundRefreshes()`` waits for it). A put made while a pass runs may delete
    /// some of the pass's responses in its own store write; if that write fails, the put is
    /// written again alone, so its caller sees its own error or none.
    @discardableResult
    public func put(
        _ query: String, body: String, serverTime: Date, etag: String? = nil
    ) async throws
        -> CachedResponse
    {
        let stored = try await write(query, id: CacheKeys.id(of: query), body: body, serverTime: serverTime, etag: etag)
        if stored.needsSizeCheck { checkSizeBehindAnswer() }
        return stored.response
    }

    /// Marks `query`'s cached response stale (a local write changed what it shows): readers
    /// refresh it, and it keeps its place in eviction order.
    public func markStale(_ query: String) async throws {
        let id = CacheKeys.id(of: query)
        try await gate.withGate { gated in
            try await loadIndexIfNeeded(gated)
            // From the store, under the index's key: the memory layer may hold an older answer.
            guard let entry = state.withLock({ $0.index.entries[id] }),
                let text = try await store.get(CacheKeys.responseKey(id, entry)),
                let current = CacheRecord.decode(text), current.query.hasSameUTF8Bytes(as: query), !current.isStale
            else { return }
            let stale = current.with(stale: true)
            do {
                try await store.set(CacheKeys.responseKey(id, entry), CacheRecord.encode(stale))
            } catch {
                forgetMemory(of: [id])
                throw error
            }
            // A reader that sees the mark must fetch, not take the answer of a fetch that finished
            // before it.
            flights.forgetFinished(id)
            state.withLock { state in
                guard state.index.entries[id] == entry else { return }
                // Same key, same place in the order, but a new generation: a reader that read the
                // record before the mark does not copy it up over the stale one.
                state.index.upsert(id, serverTimeMillis: entry.serverTimeMillis, sizeBytes: entry.sizeBytes)
                memory.set(stale, forKey: id, cost: stale.sizeBytes)
            }
        }
    }

    /// Removes `query`'s cached response.
    public func remove(_ query: String) async throws {
        let id = CacheKeys.id(of: query)
        try await gate.withGate { gated in
            try await loadIndexIfNeeded(gated)
            guard let entry = state.withLock({ $0.index.entries[id] }) else { return }
            do {
                try await store.delete(CacheKeys.responseKey(id, entry))
            } catch {
                forgetMemory(of: [id])
                throw error
            }
            flights.forgetFinished(id)
            state.withLock { state in
                state.index.remove(id)
                memory.removeValue(forKey: id)
            }
        }
    }

    /// Forgets every cached response (every key under `sov:cache:`, those of the first key
    /// layout included) and gives the space back to the operating system
    /// (`OfflineStore.compact()`): what "clear local data" does.
    public func clearLocalData() async throws {
        try await gate.withGate { _ in
            // No read after the clear is answered with what a fetch brought in before it.
            flights.forgetFinished()
            let keys = try await store.keys(CacheKeys.areaPrefix)
            do {
                for start in stride(from: 0, to: keys.count, by: 1_000) {
                    try await store.write(keys[start..<min(keys.count, start + 1_000)].map { .delete(key: $0) })
                }
            } catch {
                // Some batches went: nothing the memory layer holds is sure to be stored.
                state.withLock { _ in memory.removeAll() }
                throw error
            }
            state.withLock { state in
                state.index = CacheIndex(complete: true)
                memory.removeAll()
            }
        }
        try await store.compact()
    }

    /// Waits for the work started behind answers already given: the refreshes of
    /// stale-while-revalidate reads, the eviction passes that puts and fetched responses called
    /// for, and the index's load behind the open.
    public func waitForBackgroundRefreshes() async {
        // A refresh may start a pass behind it: wait until nothing is left.
        while true {
            let running = state.withLock { Array($0.background.values) }
            if running.isEmpty { return }
            for task in running { await task.value }
        }
    }

    // MARK: - Internals shared by the extensions

    /// Memory first, then the store; `nil` on a miss or when the entry belongs to another query.
    /// `id` is `CacheKeys.id(of: query)`, hashed once by the caller.
    func lookUp(_ query: String, id: HexID) async throws -> (response: CachedResponse, source: CacheRead.Source)? {
        if let hit = memoryHit(query, id: id) { return (hit, .memory) }
        // A put may move the response to a new key between the index read and the store read:
        // one more look at the index then finds it.
        for _ in 0..<2 {
            let (entry, complete) = state.withLock { ($0.index.entries[id], $0.index.isComplete) }
            let key: String
            if complete {
                guard let entry else { return nil }
                key = CacheKeys.responseKey(id, entry)
            } else {
                // The index still loads: the response's own keys say where it is (the later of
                // two a crash left is current; the load deletes the earlier).
                guard let found = try await store.keys(CacheKeys.responsePrefix(of: id)).last else { return nil }
                key = found
            }
            if let text = try await store.get(key) {
                guard let response = CacheRecord.decode(text), response.query.hasSameUTF8Bytes(as: query) else {
                    return nil
                }
                // Copied up only if no write changed the response meanwhile; the memory layer
                // changes under `state`, so a slow reader never puts back an older answer. While
                // the index is incomplete no write that changes a response runs (each loads the
                // index first; clearing completes it, empty, and empties memory under this lock);
                // once it is complete, the entry's generation tells.
                state.withLock { state in
                    if complete ? state.index.entries[id] == entry : !state.index.isComplete {
                        memory.set(response, forKey: id, cost: response.sizeBytes)
                    }
                }
                return (response, .store)
            }
        }
        return nil
    }

    /// The memory layer's answer for `query`, or `nil` (also when the entry belongs to another
    /// query).
    func memoryHit(_ query: String, id: HexID) -> CachedResponse? {
        guard let hit = memory.value(forKey: id), hit.query.hasSameUTF8Bytes(as: query) else { return nil }
        return hit
    }

    /// Caches `body` as `query`'s response under its key (one `set` for a new response, and the
    /// delete of the old key for a response stored again), `id` being `CacheKeys.id(of: query)`.
    /// Returns the response and whether the eviction rules call for a size check now; the caller
    /// runs it, at once or behind its answer.
    func write(
        _ query: String, id: HexID, body: String, serverTime: Date, etag: String?, position: Int64? = nil,
        headers: [String: String] = [:]
    ) async throws -> (response: CachedResponse, needsSizeCheck: Bool) {
        let response = CachedResponse(
            query: query, body: body, serverTime: serverTime, fetchedAt: clock(), etag: etag, position: position,
            headers: headers)
        let responsesStored = try await gate.withGate { gated in
            try await storeResponse(response, id: id, gated)
        }
        configuration.onStored?(query)
        let needsSizeCheck =
            response.sizeBytes >= Self.checkAfterResponseBytes || responsesStored % Self.checkEveryResponses == 0
        return (response, needsSizeCheck)
    }

    /// Stores `response` under `id`'s key, with the next batch of the pass puts carry if one
    /// runs, and records it in the index and the memory layer; returns how many responses were
    /// stored since the open.
    private func storeResponse(
        _ response: CachedResponse, id: HexID, _ gated: borrowing GateToken<QueryCache>
    ) async throws -> Int {
        try await loadIndexIfNeeded(gated)
        let millis = CacheRecord.millis(response.serverTime)
        let previous = state.withLock { $0.index.entries[id] }
        let entry = CacheIndex.Entry(serverTimeMillis: millis, sizeBytes: response.sizeBytes, generation: 0)
        let key = CacheKeys.responseKey(id, entry)
        var writes: [StoreWrite] = [.set(key: key, value: CacheRecord.encode(response))]
        if let previous, CacheKeys.responseKey(id, previous) != key {
            writes.append(.delete(key: CacheKeys.responseKey(id, previous)))
        }
        // A pass that runs meanwhile has its next ten deletes ride in this write: one commit,
        // and no wait for a commit of the pass's own.
        let change = (bytes: response.sizeBytes - (previous?.sizeBytes ?? 0), responses: previous == nil ? 1 : 0)
        do {
            if let carried = carryEviction(sparing: id, adding: change, gated) {
                do {
                    try await store.write(writes + carried.writes)
                    finishCarrying(carried, stored: true, gated)
                } catch {
                    // Alone again, so the put's own error (or none) is what its caller sees.
                    finishCarrying(carried, stored: false, gated)
                    try await store.write(writes)
                }
            } else {
                try await store.write(writes)
            }
        } catch {
            forgetMemory(of: [id])
            throw error
        }
        return state.withLock { state in
            state.index.upsert(id, serverTimeMillis: millis, sizeBytes: response.sizeBytes)
            state.index.responsesStored += 1
            memory.set(response, forKey: id, cost: response.sizeBytes)
            return state.index.responsesStored
        }
    }

    /// After a store write that threw, forgets the memory layer's copies of `ids`' responses. A
    /// write that throws may still have applied, in part or whole (a store without atomic
    /// batches, a commit whose acknowledgement was lost), and the memory layer never holds a
    /// record the store may not: the next read, and the next update, go to the store.
    func forgetMemory(of ids: [HexID]) {
        state.withLock { _ in
            for id in ids { memory.removeValue(forKey: id) }
        }
    }

    /// Runs `work` in a task of its own, which ``waitForBackgroundRefreshes()`` waits for.
    func runInBackground(_ work: @escaping @Sendable () async -> Void) {
        state.withLock { state in
            state.nextBackgroundID += 1
            let id = state.nextBackgroundID
            state.background[id] = Task {
                await work()
                self.state.withLock { _ = $0.background.removeValue(forKey: id) }
            }
        }
    }

    /// Returns once the index holds every response in the store, loading it if no one has.
    func waitForIndex() async throws {
        guard !state.withLock({ $0.index.isComplete }) else { return }
        try await gate.withGate { gated in try await loadIndexIfNeeded(gated) }
    }

    /// Loads the index if it is not complete yet: the first step of every write.
    func loadIndexIfNeeded(_ gated: borrowing GateToken<QueryCache>) async throws {
        guard !state.withLock({ $0.index.isComplete }) else { return }
        let loaded = try await Self.loadIndex(from: store)
        state.withLock { $0.index = loaded }
    }

    /// Reads the response keys as borrowed bytes (never a value, no `String` per key) and keeps
    /// the newest of the duplicates a crash of a store without atomic batches may have left.
    private static func loadIndex(from store: any OfflineStore) async throws -> CacheIndex {
        var parsed: [(id: HexID, serverTimeMillis: Int64, sizeBytes: Int)] = []
        // One page of every key, as `keys(_:)` lists them: pages would make a store without a
        // native `withKeys` list the prefix once per page.
        _ = try await store.withKeys(CacheKeys.responsePrefix, after: nil, limit: .max) { key in
            if let response = CacheKeys.parseResponseKey(key) { parsed.append(response) }
            return true
        }
        // A response's keys are next to each other, its earlier key first: that is the one to drop.
        let (index, dropped) = CacheIndex.rebuilt(from: parsed)
        let duplicates = dropped.map { StoreWrite.delete(key: CacheKeys.responseKey($0.id, $0.entry)) }
        for start in stride(from: 0, to: duplicates.count, by: 1_000) {
            try await store.write(Array(duplicates[start..<min(duplicates.count, start + 1_000)]))
        }
        return index
    }
}
