import Foundation
import Sovaria
import Synchronization

/// The cache of query results, written once against `OfflineStore` so it runs unchanged on
/// every engine: bounded by ``CacheSize``, evicting the lists the server sent longest ago, with
/// an in-memory LRU layer (``MemoryCache``) in front of the store and one fetch per query at a
/// time (``SingleFlight``).
///
/// A query's identity is any string, for example a PostgREST URL with its filters, however
/// long: the cache files it under a 128-bit hash and keeps the full identity in the entry,
/// checked on every read. Each list is one store key whose name carries its server time and
/// size (see docs/ARCHITECTURE.md for the layout under `sov:cache:`).
///
/// Eviction's rules are fixed, not options: after a response of
/// 4,096 bytes or more (`checkAfterResponseBytes`), and after every 32nd response
/// (`checkEveryResponses`), never on reads, the total of the cached bodies is checked; over the
/// bound, the lists fetched longest ago by the server's time go, ten per store batch
/// (`evictionBatchLists`), until the total is 50,000,000 bytes below the bound (or at the
/// bound, for bounds of 50 MB or less, ``CacheSize/evictionTargetBytes``). Up to 500 lists
/// that live readers show (`maxProtectedLists`, ``startReading(_:)``) are kept whatever their
/// age.
///
/// ```swift
/// let cache = try await QueryCache(store: try SQLiteOfflineStore(fileURL: url))
/// let answer = try await cache.read("/rest/v1/notes?select=*&owner=eq.7") { etag in
///     let (body, date, newETag) = try await api.get(path, ifNoneMatch: etag)
///     return .response(body: body, serverTime: date, etag: newETag)
/// }
/// ```
///
/// - Important: Safe from any number of tasks. Reads run on the caller's executor and take no
///   lock beyond the memory layer's; writes (``put(_:body:serverTime:etag:)``, stale marks,
///   eviction) go through one async gate, so the in-memory index always matches the store.
///   Opening returns before the index is loaded: the load (which lists the keys only, never a
///   value: O(lists), not O(bytes)) runs behind it, reads meanwhile find their list by its key
///   prefix, and writes, ``totalBytes`` and ``listCount`` wait for it.
public final class QueryCache: Sendable {
    /// The store the cache keeps its entries in.
    public let store: any OfflineStore
    /// The options the cache was opened with.
    public let configuration: Configuration
    /// The bound on the cached bodies: ``Configuration/size``.
    public var size: CacheSize { configuration.size }
    /// The in-memory layer, keyed by the query's hash id; costs are body bytes.
    let memory: MemoryCache<HexID, CachedResponse>

    // The seed's rules (see the type's documentation): constants, not options.
    /// How many lists shown by live readers are kept whatever their age.
    static let maxProtectedLists = 500
    /// A response at least this long (UTF-8 bytes) starts a size check.
    static let checkAfterResponseBytes = 4_096
    /// Every this many responses start a size check.
    static let checkEveryResponses = 32
    /// Lists deleted per store batch during eviction.
    static let evictionBatchLists = 10
    /// How long a pass that puts carry waits between its looks: it writes a batch of its own
    /// only when no put carried one for this long.
    static let carriedPassLookInterval = Duration.milliseconds(1)

    let clock: @Sendable () -> Date
    /// The lists in the store. The memory layer is changed only under this lock (index first,
    /// then memory), so it never keeps an answer older than the index's.
    let index: Mutex<CacheIndex>
    let gate = AsyncGate<QueryCache>()
    let flights = SingleFlight<HexID, CachedResponse>()
    let readers = LiveReaders()
    let passes = Mutex<[EvictionPass]>([])
    /// The memory-pressure events the memory layer answers (cancelled when the cache goes), or
    /// why the configured source delivers none.
    let memoryPressure = Mutex<(observation: MemoryPressureObservation?, unavailable: MemoryPressureUnavailable?)>(
        (nil, nil))
    /// The memory layer's most recent sheds (up to 100), oldest first.
    let sheds = Mutex<[MemoryShed]>([])
    /// Work running behind answers already given: refreshes, and passes that reads called for.
    let background = Mutex<(next: UInt64, running: [UInt64: Task<Void, Never>])>((0, [:]))
    /// Whether a pass runs behind an answer, and whether another check was asked for meanwhile.
    let passBehind = RunAgainLatch()
    /// The pass whose batches puts carry in their own store writes, while it runs.
    let carriedPass = Mutex<EvictionProgress?>(nil)

    /// Opens the cache kept in `store` with the options in `configuration`, and starts
    /// rebuilding its order and total from the key names behind the open.
    ///
    /// Returns once lists of the first layout (if any) are moved to the current one; the index
    /// loads in a task of its own (``waitForBackgroundRefreshes()`` waits for it), and a read
    /// made meanwhile finds its list by its key prefix. Puts, stale marks, removals and eviction
    /// wait for the load; if it fails, the next of them (or ``totalBytes``, ``listCount``) loads
    /// again and throws its error. ``clearLocalData()`` does not need it.
    public init(store: any OfflineStore, configuration: Configuration) async throws {
        self.store = store
        self.configuration = configuration
        clock = configuration.clock
        memory = MemoryCache(
            countLimit: configuration.memoryCountLimit, costLimit: configuration.memoryCostLimitBytes)
        index = Mutex(CacheIndex(complete: false))
        observeMemoryPressure(configuration.memoryPressure)
        try await Self.migrateLegacyLists(in: store)
        runInBackground { try? await self.waitForIndex() }
    }

    /// Opens the cache kept in `store`, loading its order and total from the key names behind
    /// the open: the short form of ``init(store:configuration:)``, with the same defaults.
    ///
    /// - Parameters:
    ///   - store: the store the lists are kept in.
    ///   - size: the bound on cached bodies; ``CacheSize/default`` is 100 MiB.
    ///   - memoryCountLimit: the most responses the memory layer keeps.
    ///   - memoryCostLimitBytes: the most body bytes the memory layer keeps.
    ///   - clock: the time `maxAge` is measured with; inject one in tests.
    public convenience init(
        store: any OfflineStore,
        size: CacheSize = .default,
        memoryCountLimit: Int = Configuration.defaultMemoryCountLimit,
        memoryCostLimitBytes: Int = Configuration.defaultMemoryCostLimitBytes,
        clock: @escaping @Sendable () -> Date = { Date() }
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
            return index.withLock { $0.totalBytes }
        }
    }

    /// How many lists are cached; waits for the index if it still loads.
    public var listCount: Int {
        get async throws {
            try await waitForIndex()
            return index.withLock { $0.entries.count }
        }
    }

    /// The cached response for `query` from memory or the store (copied up to memory), or `nil`.
    public func cachedResponse(for query: String) async throws -> CachedResponse? {
        try await lookUp(query, id: CacheKeys.id(of: query))?.response
    }

    /// Caches `body` as the response to `query` and, when the rules say so, starts an eviction
    /// pass behind it.
    ///
    /// The put returns once its own list is stored: the pass runs in a task of its own, one at a
    /// time (``waitForBackgroundRefreshes()`` waits for it). While it runs, each put deletes the
    /// pass's next ten lists in its own store write, one commit with its list, and the pass
    /// writes a batch of its own only when no put carried one for a millisecond: puts made in a
    /// burst do not wait for the pass's commits. If that write fails, the put is written
    /// again alone, so its caller sees its own error or none, and the ten lists wait for the
    /// pass. A process that ends during a pass leaves the cache over its bound until the next
    /// put's check.
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

    /// Marks `query`'s cached list stale (a local write changed what it shows): readers refresh
    /// it, and it keeps its place in eviction order.
    public func markStale(_ query: String) async throws {
        let id = CacheKeys.id(of: query)
        try await gate.withGate { _ in
            try await loadIndexIfNeeded()
            // From the store, under the index's key: the memory layer may hold an older answer.
            guard let entry = index.withLock({ $0.entries[id] }),
                let text = try await store.get(CacheKeys.listKey(id, entry)),
                let current = CacheRecord.decode(text), current.query.utf8.elementsEqual(query.utf8), !current.isStale
            else { return }
            let stale = current.with(stale: true)
            try await store.set(CacheKeys.listKey(id, entry), CacheRecord.encode(stale))
            // A reader that sees the mark must fetch, not take the answer of a fetch that finished
            // before it.
            flights.forgetFinished(id)
            index.withLock { index in
                guard index.entries[id] == entry else { return }
                // Same key, same place in the order, but a new generation: a reader that read the
                // record before the mark does not copy it up over the stale one.
                index.upsert(id, serverTimeMillis: entry.serverTimeMillis, sizeBytes: entry.sizeBytes)
                memory.set(stale, forKey: id, cost: stale.sizeBytes)
            }
        }
    }

    /// Removes `query`'s cached list.
    public func remove(_ query: String) async throws {
        let id = CacheKeys.id(of: query)
        try await gate.withGate { _ in
            try await loadIndexIfNeeded()
            guard let entry = index.withLock({ $0.entries[id] }) else { return }
            try await store.delete(CacheKeys.listKey(id, entry))
            flights.forgetFinished(id)
            index.withLock { index in
                index.remove(id)
                memory.removeValue(forKey: id)
            }
        }
    }

    /// Forgets every cached list (every key under `sov:cache:`, lists of the first layout
    /// included) and gives the space back to the operating system (`OfflineStore.compact()`):
    /// what "clear local data" does.
    public func clearLocalData() async throws {
        try await gate.withGate { _ in
            // No read after the clear is answered with what a fetch brought in before it.
            flights.forgetFinished()
            let keys = try await store.keys(CacheKeys.areaPrefix)
            for start in stride(from: 0, to: keys.count, by: 1_000) {
                try await store.write(keys[start..<min(keys.count, start + 1_000)].map { .delete(key: $0) })
            }
            index.withLock { index in
                index = CacheIndex(complete: true)
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
            let running = background.withLock { Array($0.running.values) }
            if running.isEmpty { return }
            for task in running { await task.value }
        }
    }

    // MARK: - Internals shared by the extensions

    /// Memory first, then the store; `nil` on a miss or when the entry belongs to another query.
    /// `id` is `CacheKeys.id(of: query)`, hashed once by the caller.
    func lookUp(_ query: String, id: HexID) async throws -> (response: CachedResponse, source: CacheRead.Source)? {
        if let hit = memoryHit(query, id: id) { return (hit, .memory) }
        // A put may move the list to a new key between the index read and the store read: one
        // more look at the index then finds it.
        for _ in 0..<2 {
            let (entry, complete) = index.withLock { ($0.entries[id], $0.isComplete) }
            let key: String
            if complete {
                guard let entry else { return nil }
                key = CacheKeys.listKey(id, entry)
            } else {
                // The index still loads: the list's own keys say where it is (the later of two a
                // crash left is current; the load deletes the earlier).
                guard let found = try await store.keys(CacheKeys.listPrefix(of: id)).last else { return nil }
                key = found
            }
            if let text = try await store.get(key) {
                guard let response = CacheRecord.decode(text), response.query.utf8.elementsEqual(query.utf8) else {
                    return nil
                }
                // Copied up only if no write changed the list meanwhile; the memory layer changes
                // under the index's lock, so a slow reader never puts back an older answer. While
                // the index is incomplete no write that changes a list runs (each loads the index
                // first; clearing completes it, empty, and empties memory under this lock); once
                // it is complete, the entry's generation tells.
                index.withLock { index in
                    if complete ? index.entries[id] == entry : !index.isComplete {
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
        guard let hit = memory.value(forKey: id), hit.query.utf8.elementsEqual(query.utf8) else { return nil }
        return hit
    }

    /// Caches `body` as `query`'s response under its list key (one `set` for a new list, and the
    /// delete of the old key for a list stored again), `id` being `CacheKeys.id(of: query)`.
    /// Returns the response and whether the eviction rules call for a size check now; the caller
    /// runs it, at once or behind its answer.
    func write(
        _ query: String, id: HexID, body: String, serverTime: Date, etag: String?
    ) async throws -> (response: CachedResponse, needsSizeCheck: Bool) {
        let response = CachedResponse(query: query, body: body, serverTime: serverTime, fetchedAt: clock(), etag: etag)
        let millis = CacheRecord.millis(response.serverTime)
        let responsesStored = try await gate.withGate { _ in
            try await loadIndexIfNeeded()
            let previous = index.withLock { $0.entries[id] }
            let entry = CacheIndex.Entry(serverTimeMillis: millis, sizeBytes: response.sizeBytes, generation: 0)
            let key = CacheKeys.listKey(id, entry)
            var writes: [StoreWrite] = [.set(key: key, value: CacheRecord.encode(response))]
            if let previous, CacheKeys.listKey(id, previous) != key {
                writes.append(.delete(key: CacheKeys.listKey(id, previous)))
            }
            // A pass that runs meanwhile has its next ten deletes ride in this write: one commit,
            // and no wait for a commit of the pass's own.
            let change = (bytes: response.sizeBytes - (previous?.sizeBytes ?? 0), lists: previous == nil ? 1 : 0)
            if let carried = carryEviction(sparing: id, adding: change) {
                do {
                    try await store.write(writes + carried.writes)
                    finishCarrying(carried, stored: true)
                } catch {
                    // Alone again, so the put's own error (or none) is what its caller sees.
                    finishCarrying(carried, stored: false)
                    try await store.write(writes)
                }
            } else {
                try await store.write(writes)
            }
            return index.withLock { index in
                index.upsert(id, serverTimeMillis: millis, sizeBytes: response.sizeBytes)
                index.responsesStored += 1
                memory.set(response, forKey: id, cost: response.sizeBytes)
                return index.responsesStored
            }
        }
        configuration.onStored?(query)
        let needsSizeCheck =
            response.sizeBytes >= Self.checkAfterResponseBytes || responsesStored % Self.checkEveryResponses == 0
        return (response, needsSizeCheck)
    }

    /// Runs `work` in a task of its own, which ``waitForBackgroundRefreshes()`` waits for.
    func runInBackground(_ work: @escaping @Sendable () async -> Void) {
        background.withLock { state in
            state.next += 1
            let token = state.next
            state.running[token] = Task {
                await work()
                self.background.withLock { _ = $0.running.removeValue(forKey: token) }
            }
        }
    }

    /// Returns once the index holds every list in the store, loading it if no one has.
    func waitForIndex() async throws {
        guard !index.withLock({ $0.isComplete }) else { return }
        try await gate.withGate { _ in try await loadIndexIfNeeded() }
    }

    /// Loads the index if it is not complete yet; run it inside the gate, before a write reads
    /// the index.
    func loadIndexIfNeeded() async throws {
        guard !index.withLock({ $0.isComplete }) else { return }
        let loaded = try await Self.loadIndex(from: store)
        index.withLock { $0 = loaded }
    }

    /// Lists the list keys (never a value) and keeps the newest of the duplicates a crash of
    /// a store without atomic batches may have left.
    private static func loadIndex(from store: any OfflineStore) async throws -> CacheIndex {
        let keys = try await store.keys(CacheKeys.listPrefix)
        // A list's keys are next to each other, its earlier key first: that is the one to drop.
        let (index, dropped) = CacheIndex.rebuilt(from: keys.compactMap(CacheKeys.parseListKey))
        let duplicates = dropped.map { StoreWrite.delete(key: CacheKeys.listKey($0.id, $0.entry)) }
        for start in stride(from: 0, to: duplicates.count, by: 1_000) {
            try await store.write(Array(duplicates[start..<min(duplicates.count, start + 1_000)]))
        }
        return index
    }

    /// Moves the lists of the first layout (time first, ``CacheKeys/legacyListPrefix``) to the
    /// current one, 100 per batch, each set beside the delete of its old key: a crash between the
    /// two leaves both, and the next open moves it again. Keys of another shape under the old
    /// prefix, and lists whose value cannot be read, stay. Reads no value on a store without old
    /// lists; with them, it reads each one's value once, the first time.
    private static func migrateLegacyLists(in store: any OfflineStore) async throws {
        let legacy = try await store.keys(CacheKeys.legacyListPrefix)
        for start in stride(from: 0, to: legacy.count, by: 100) {
            var writes: [StoreWrite] = []
            for key in legacy[start..<min(legacy.count, start + 100)] {
                guard let list = CacheKeys.parseLegacyListKey(key) else { continue }
                // A value that cannot be read (damaged, or a failed read) stays where it is, for
                // a later open to try again: one entry never keeps the cache from opening. (A
                // key gone meanwhile has nothing to move.)
                guard let value = try? await store.get(key) else { continue }
                let entry = CacheIndex.Entry(
                    serverTimeMillis: list.serverTimeMillis, sizeBytes: list.sizeBytes, generation: 0)
                writes.append(.set(key: CacheKeys.listKey(list.id, entry), value: value))
                writes.append(.delete(key: key))
            }
            if !writes.isEmpty { try await store.write(writes) }
        }
    }
}
