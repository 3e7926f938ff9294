import Sovaria
import SovariaPlumbing
import Synchronization

/// What the query cache keeps in memory about the responses in the store: each response's server time
/// and body size, the order to evict in (a min-heap on server time), and the running total.
/// Loaded once per open from the `sov:cache:l2:` keys, behind the open; never reads a body.
struct CacheIndex: Sendable {
    struct Entry: Equatable, Sendable {
        var serverTimeMillis: Int64
        var sizeBytes: Int
        /// Which heap item is current: a response stored again leaves its old item behind. Never
        /// given twice in a process (``QueryCache/version(of:)`` rests on it), whichever index.
        var generation: UInt64
    }

    struct OrderItem: Comparable, Sendable {
        var serverTimeMillis: Int64
        var generation: UInt64
        var id: HexID

        static func < (lhs: OrderItem, rhs: OrderItem) -> Bool {
            (lhs.serverTimeMillis, lhs.generation) < (rhs.serverTimeMillis, rhs.generation)
        }
    }

    private(set) var entries: [HexID: Entry] = [:]
    private var order = MinHeap<OrderItem>()
    /// The last generation given, by any index of the process: a clear's new index, or another
    /// cache's, never gives one again.
    private static let lastGeneration = Atomic<UInt64>(0)
    private(set) var totalBytes = 0
    /// Responses stored since open: every 32nd one starts a size check.
    var responsesStored = 0
    /// Whether every response in the store is in the index: `false` from an open until the load
    /// behind it ends. Until then no write that changes a response runs (each loads the index first),
    /// and reads find responses by their key prefix.
    var isComplete: Bool

    /// An empty index: no responses, a total of zero; `complete` says whether the store has none
    /// either.
    init(complete: Bool) { isComplete = complete }

    /// The complete index of `responses` in the order an open finds them (by key), and the entries it
    /// dropped: a response stored again by a store without atomic batches may appear twice after a
    /// crash, and the later key wins. The caller deletes the dropped ones.
    static func rebuilt(
        from responses: [(id: HexID, serverTimeMillis: Int64, sizeBytes: Int)]
    ) -> (index: CacheIndex, dropped: [(id: HexID, entry: Entry)]) {
        var index = CacheIndex(complete: true)
        var dropped: [(id: HexID, entry: Entry)] = []
        index.entries.reserveCapacity(responses.count)
        var items: [OrderItem] = []
        items.reserveCapacity(responses.count)
        for response in responses {
            let generation = newGeneration()
            let entry = Entry(
                serverTimeMillis: response.serverTimeMillis, sizeBytes: response.sizeBytes, generation: generation)
            if let previous = index.entries.updateValue(entry, forKey: response.id) {
                index.totalBytes -= previous.sizeBytes
                dropped.append((response.id, previous))
            }
            index.totalBytes += response.sizeBytes
            items.append(
                OrderItem(serverTimeMillis: response.serverTimeMillis, generation: generation, id: response.id))
        }
        index.order = MinHeap(items)
        index.compactOrderIfMostlyStale()
        return (index, dropped)
    }

    /// Records `id`'s new time and size; returns what it had before.
    @discardableResult
    mutating func upsert(_ id: HexID, serverTimeMillis: Int64, sizeBytes: Int) -> Entry? {
        let entry = Entry(serverTimeMillis: serverTimeMillis, sizeBytes: sizeBytes, generation: Self.newGeneration())
        let previous = entries.updateValue(entry, forKey: id)
        totalBytes += sizeBytes - (previous?.sizeBytes ?? 0)
        order.insert(OrderItem(serverTimeMillis: serverTimeMillis, generation: entry.generation, id: id))
        compactOrderIfMostlyStale()
        return previous
    }

    @discardableResult
    mutating func remove(_ id: HexID) -> Entry? {
        guard let previous = entries.removeValue(forKey: id) else { return nil }
        totalBytes -= previous.sizeBytes
        compactOrderIfMostlyStale()
        return previous
    }

    /// Takes the oldest response off the order (skipping items of responses stored again or removed);
    /// the caller either removes it or gives it back with ``restore(_:)``.
    mutating func popOldest() -> (id: HexID, entry: Entry)? {
        while let item = order.popMin() {
            if let entry = entries[item.id], entry.generation == item.generation { return (item.id, entry) }
        }
        return nil
    }

    /// Puts back an item taken with ``popOldest()`` and not removed.
    mutating func restore(_ id: HexID, _ entry: Entry) {
        guard entries[id] == entry else { return }
        order.insert(OrderItem(serverTimeMillis: entry.serverTimeMillis, generation: entry.generation, id: id))
    }

    private static func newGeneration() -> UInt64 {
        lastGeneration.wrappingAdd(1, ordering: .relaxed).newValue
    }

    private mutating func compactOrderIfMostlyStale() {
        guard order.count > 2 * entries.count + 1_024 else { return }
        order = MinHeap(
            entries.map { OrderItem(serverTimeMillis: $1.serverTimeMillis, generation: $1.generation, id: $0) })
    }
}
