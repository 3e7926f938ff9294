import Sovaria
import SovariaPlumbing

/// What the file cache keeps in memory about its files: each file's size, last use and leases,
/// the least-recently-used order (a min-heap on last use), and the running total. Rebuilt once
/// per open from the metadata key names and the folder's file names; never reads a file.
///
/// A use changes the entry only, not the heap: an item whose time is older than its entry's is
/// put back with the entry's time when it comes up (``popLeastRecentlyUsed()``), so an open costs
/// O(1) here and a pass O((evicted + skipped) × log n).
struct FileIndex {
    struct Entry: Equatable {
        var sizeBytes: Int
        /// The latest use, in memory: open, lease end, download.
        var lastUseMillis: Int64
        /// The last use recorded in the metadata key.
        var storedUseMillis: Int64
        /// Which file this is: a key downloaded again gets a new generation.
        var generation: UInt64
    }

    struct OrderItem: Comparable {
        var lastUseMillis: Int64
        var generation: UInt64
        var id: FileID

        static func < (lhs: OrderItem, rhs: OrderItem) -> Bool {
            (lhs.lastUseMillis, lhs.generation) < (rhs.lastUseMillis, rhs.generation)
        }
    }

    private(set) var entries: [FileID: Entry] = [:]
    private var order = MinHeap<OrderItem>()
    private var nextGeneration: UInt64 = 0
    /// The bytes of the files in `files/`.
    private(set) var fileBytes = 0
    /// Temporary files a crash left, by name: their size and modification time (ms).
    private(set) var leftovers: [String: (sizeBytes: Int, modifiedMillis: Int64)] = [:]
    private(set) var leftoverBytes = 0
    /// Open leases by id. Kept apart from the entries: a lease outlives a removal or a new
    /// download of its key, and still protects what the key holds until it ends.
    private(set) var leases: [FileID: Int] = [:]

    init() {}

    /// The index of the files found at open, built in O(n) (one heapify, no sort).
    init(files: [(id: FileID, sizeBytes: Int, lastUseMillis: Int64)]) {
        var items: [OrderItem] = []
        items.reserveCapacity(files.count)
        entries.reserveCapacity(files.count)
        for file in files {
            nextGeneration += 1
            entries[file.id] = Entry(
                sizeBytes: file.sizeBytes, lastUseMillis: file.lastUseMillis, storedUseMillis: file.lastUseMillis,
                generation: nextGeneration)
            items.append(OrderItem(lastUseMillis: file.lastUseMillis, generation: nextGeneration, id: file.id))
            fileBytes += file.sizeBytes
        }
        order = MinHeap(items)
    }

    /// Every byte the cache holds on disk: its files and the temporary files a crash left.
    var totalBytes: Int { fileBytes + leftoverBytes }

    /// Adds a file (or replaces the entry of its id); returns the entry it had before.
    @discardableResult
    mutating func insert(_ id: FileID, sizeBytes: Int, lastUseMillis: Int64, storedUseMillis: Int64) -> Entry? {
        nextGeneration += 1
        let entry = Entry(
            sizeBytes: sizeBytes, lastUseMillis: lastUseMillis, storedUseMillis: storedUseMillis,
            generation: nextGeneration)
        let previous = entries.updateValue(entry, forKey: id)
        fileBytes += sizeBytes - (previous?.sizeBytes ?? 0)
        order.insert(OrderItem(lastUseMillis: lastUseMillis, generation: nextGeneration, id: id))
        compactOrderIfMostlyStale()
        return previous
    }

    @discardableResult
    mutating func remove(_ id: FileID) -> Entry? {
        guard let previous = entries.removeValue(forKey: id) else { return nil }
        fileBytes -= previous.sizeBytes
        compactOrderIfMostlyStale()
        return previous
    }

    /// Changes the entry of `id` in place (last use, leases); the order catches up lazily.
    mutating func update(_ id: FileID, _ change: (inout Entry) -> Void) {
        guard var entry = entries[id] else { return }
        change(&entry)
        entries[id] = entry
    }

    /// Takes the least recently used file off the order; the caller removes it or gives it
    /// back with ``restore(_:_:)``.
    mutating func popLeastRecentlyUsed() -> (id: FileID, entry: Entry)? {
        while let item = order.popMin() {
            guard let entry = entries[item.id], entry.generation == item.generation else { continue }
            if entry.lastUseMillis > item.lastUseMillis {
                // Used since this item went in: back with its real time.
                order.insert(OrderItem(lastUseMillis: entry.lastUseMillis, generation: entry.generation, id: item.id))
                continue
            }
            return (item.id, entry)
        }
        return nil
    }

    /// Puts back an item taken with ``popLeastRecentlyUsed()`` and not removed.
    mutating func restore(_ id: FileID, _ entry: Entry) {
        guard let current = entries[id], current.generation == entry.generation else { return }
        order.insert(OrderItem(lastUseMillis: current.lastUseMillis, generation: current.generation, id: id))
    }

    mutating func addLease(_ id: FileID) { leases[id, default: 0] += 1 }

    mutating func releaseLease(_ id: FileID) {
        guard let count = leases[id] else { return }
        leases[id] = count > 1 ? count - 1 : nil
    }

    func isLeased(_ id: FileID) -> Bool { leases[id] != nil }

    /// Forgets every file and leftover; leases stay (they end on their own).
    mutating func removeAllFiles() {
        entries = [:]
        order = MinHeap()
        fileBytes = 0
        leftovers = [:]
        leftoverBytes = 0
    }

    mutating func addLeftover(_ name: String, sizeBytes: Int, modifiedMillis: Int64) {
        if let previous = leftovers.updateValue((sizeBytes, modifiedMillis), forKey: name) {
            leftoverBytes -= previous.sizeBytes
        }
        leftoverBytes += sizeBytes
    }

    mutating func removeLeftover(_ name: String) {
        guard let previous = leftovers.removeValue(forKey: name) else { return }
        leftoverBytes -= previous.sizeBytes
    }

    /// Heap items outnumber entries (removed files, replaced files): rebuild the heap.
    private mutating func compactOrderIfMostlyStale() {
        guard order.count > 2 * entries.count + 1_024 else { return }
        order = MinHeap(
            entries.map { OrderItem(lastUseMillis: $1.lastUseMillis, generation: $1.generation, id: $0) })
    }

    /// The heap's size, stale items included (for tests of the cost).
    var orderCount: Int { order.count }
}

extension FileIndex.Entry {
    /// The metadata key this entry was last recorded under.
    func metadataKey(_ id: FileID) -> String {
        FileKeys.metadataKey(id: id, sizeBytes: sizeBytes, lastUseMillis: storedUseMillis)
    }
}
