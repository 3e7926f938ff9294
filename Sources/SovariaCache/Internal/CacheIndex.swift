import Sovaria

/// What the query cache keeps in memory about the lists in the store: each list's server time
/// and body size, the order to evict in (a min-heap on server time), and the running total.
/// Rebuilt once per open from the `sov:cache:l:` keys; never reads a body.
struct CacheIndex {
    struct Entry: Equatable {
        var serverTimeMillis: Int64
        var sizeBytes: Int
        /// Which heap item is current: a list stored again leaves its old item behind.
        var generation: UInt64
    }

    struct OrderItem: Comparable {
        var serverTimeMillis: Int64
        var generation: UInt64
        var id: String

        static func < (lhs: OrderItem, rhs: OrderItem) -> Bool {
            (lhs.serverTimeMillis, lhs.generation) < (rhs.serverTimeMillis, rhs.generation)
        }
    }

    private(set) var entries: [String: Entry] = [:]
    private var order = MinHeap<OrderItem>()
    private var nextGeneration: UInt64 = 0
    private(set) var totalBytes = 0
    /// Responses stored since open: every 32nd one starts a size check.
    var responsesStored = 0

    /// Makes room for `count` lists without growing on the way (an open adds every list at once).
    mutating func reserveCapacity(_ count: Int) {
        entries.reserveCapacity(count)
        order.reserveCapacity(count)
    }

    /// Records `id`'s new time and size; returns what it had before.
    @discardableResult
    mutating func upsert(_ id: String, serverTimeMillis: Int64, sizeBytes: Int) -> Entry? {
        nextGeneration += 1
        let entry = Entry(serverTimeMillis: serverTimeMillis, sizeBytes: sizeBytes, generation: nextGeneration)
        let previous = entries.updateValue(entry, forKey: id)
        totalBytes += sizeBytes - (previous?.sizeBytes ?? 0)
        order.insert(OrderItem(serverTimeMillis: serverTimeMillis, generation: nextGeneration, id: id))
        compactOrderIfMostlyStale()
        return previous
    }

    @discardableResult
    mutating func remove(_ id: String) -> Entry? {
        guard let previous = entries.removeValue(forKey: id) else { return nil }
        totalBytes -= previous.sizeBytes
        compactOrderIfMostlyStale()
        return previous
    }

    /// Takes the oldest list off the order (skipping items of lists stored again or removed);
    /// the caller either removes it or gives it back with ``restore(_:)``.
    mutating func popOldest() -> (id: String, entry: Entry)? {
        while let item = order.popMin() {
            if let entry = entries[item.id], entry.generation == item.generation { return (item.id, entry) }
        }
        return nil
    }

    /// Puts back an item taken with ``popOldest()`` and not removed.
    mutating func restore(_ id: String, _ entry: Entry) {
        guard entries[id] == entry else { return }
        order.insert(OrderItem(serverTimeMillis: entry.serverTimeMillis, generation: entry.generation, id: id))
    }

    private mutating func compactOrderIfMostlyStale() {
        guard order.count > 2 * entries.count + 1_024 else { return }
        order = MinHeap(
            entries.map { OrderItem(serverTimeMillis: $1.serverTimeMillis, generation: $1.generation, id: $0) })
    }
}
