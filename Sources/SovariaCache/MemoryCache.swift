import Sovaria
import SovariaPlumbing
import Synchronization

/// An in-memory LRU cache limited by entry count and by total cost: a dictionary for O(1)
/// lookup and a doubly linked list (kept in arrays, linked by slot index) for O(1)
/// reordering. Every read and write makes its entry the most recently used; when a limit is
/// passed, the least recently used entries go.
///
/// - Important: Safe from any number of tasks: each call holds a lock for a few array and
///   dictionary operations and never suspends. Unlike `NSCache`, eviction is exactly LRU and
///   entries never disappear for any other reason.
///
/// Not public because it is the query cache's building block, not its API; `package` so the
/// benchmark can measure it against `NSCache`.
///
/// ```swift
/// let memory = MemoryCache<String, String>(countLimit: 1_000, costLimit: 8 << 20)
/// memory.set("v", forKey: "k", cost: 1)
/// memory.value(forKey: "k")  // "v", now the most recently used
/// ```
package final class MemoryCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    // Specialized for the query cache's key and value types in this module (unspecialized generic
    // code was slower than NSCache). Not `@inlinable`: Swift does not inline a member of a
    // `package` type in another module, so the overlay's sessions (SovariaSync) call it
    // unspecialized either way. The links live in arrays of their own so reordering moves
    // integers, never retains a key or a value.
    struct Link {
        var newer: Int  // towards the head (most recent); -1 at the head
        var older: Int  // towards the tail (least recent); -1 at the tail
        init(newer: Int, older: Int) {
            self.newer = newer
            self.older = older
        }
    }

    struct List {
        var index: [Key: Int] = [:]
        var keys: [Key?] = []
        var values: [Value?] = []
        var costs: [Int] = []
        /// Each slot's neighbours, side by side so a reorder touches one cache line per slot.
        var links: [Link] = []
        var free: [Int] = []
        var head = -1
        var tail = -1
        var totalCost = 0
        init() {}
        mutating func moveToHead(_ slot: Int) {
            guard head != slot else { return }
            unlink(slot)
            linkAtHead(slot)
        }
        mutating func unlink(_ slot: Int) {
            let link = links[slot]
            if link.newer >= 0 { links[link.newer].older = link.older } else { head = link.older }
            if link.older >= 0 { links[link.older].newer = link.newer } else { tail = link.newer }
        }
        mutating func linkAtHead(_ slot: Int) {
            links[slot] = Link(newer: -1, older: head)
            if head >= 0 { links[head].newer = slot }
            head = slot
            if tail < 0 { tail = slot }
        }
        mutating func insert(_ key: Key, _ value: Value, cost: Int) {
            let slot: Int
            if let reused = free.popLast() {
                slot = reused
                keys[slot] = key
                values[slot] = value
                costs[slot] = cost
            } else {
                slot = keys.count
                keys.append(key)
                values.append(value)
                costs.append(cost)
                links.append(Link(newer: -1, older: -1))
            }
            index[key] = slot
            totalCost += cost
            linkAtHead(slot)
        }

        @discardableResult
        mutating func remove(_ slot: Int) -> Value? {
            unlink(slot)
            if let key = keys[slot] { index[key] = nil }
            let value = values[slot]
            keys[slot] = nil
            values[slot] = nil
            totalCost -= costs[slot]
            free.append(slot)
            return value
        }
    }

    /// Ranked so that a type that takes it inside a lock of its own has the order checked in
    /// debug builds (SovariaPlumbing/LockOrder.swift).
    let list: RankedMutex<List>
    /// The most entries kept.
    package let countLimit: Int
    /// The most total cost kept (for example bytes).
    package let costLimit: Int

    /// Creates a cache holding at most `countLimit` entries and `costLimit` total cost, its lock
    /// at `rank` (SovariaPlumbing/LockOrder.swift).
    package init(countLimit: Int = .max, costLimit: Int = .max, rank: LockRank = .standaloneMemoryCache) {
        self.countLimit = max(0, countLimit)
        self.costLimit = max(0, costLimit)
        list = RankedMutex(rank, List())
    }

    /// The value for `key`, which becomes the most recently used; `nil` when absent.
    ///
    /// - Complexity: O(1).
    package func value(forKey key: Key) -> Value? {
        list.withLock { list in
            guard let slot = list.index[key] else { return nil }
            list.moveToHead(slot)
            return list.values[slot]
        }
    }

    /// Stores `value` for `key` as the most recently used entry, then evicts the least recently
    /// used until both limits hold. An entry costlier than `costLimit` is not kept.
    ///
    /// - Complexity: O(1), plus O(1) per evicted entry.
    package func set(_ value: Value, forKey key: Key, cost: Int = 1) {
        let cost = max(0, cost)
        list.withLock { list in
            if let slot = list.index[key] {
                if cost <= costLimit {
                    // Replace in place: no dictionary write.
                    list.values[slot] = value
                    list.totalCost += cost - list.costs[slot]
                    list.costs[slot] = cost
                    list.moveToHead(slot)
                } else {
                    list.remove(slot)
                }
            } else if cost <= costLimit, countLimit > 0 {
                list.insert(key, value, cost: cost)
            }
            while list.index.count > countLimit || list.totalCost > costLimit, list.tail >= 0 {
                list.remove(list.tail)
            }
        }
    }

    /// Removes `key`'s entry and returns its value.
    @discardableResult
    package func removeValue(forKey key: Key) -> Value? {
        list.withLock { list in
            guard let slot = list.index[key] else { return nil }
            return list.remove(slot)
        }
    }

    /// Removes least recently used entries until at most `count` are kept and their cost is at
    /// most `cost`, passing over (and keeping) those `keep` says to; the limits stay as they are,
    /// so the cache fills again as values are set. Returns how many entries and how much cost
    /// went. What a memory layer does on a memory warning.
    ///
    /// - Complexity: O(r + k) for r removed and k kept entries walked past.
    @discardableResult
    package func trim(
        toCount count: Int, cost: Int, keeping keep: (Key, Value) -> Bool = { _, _ in false }
    ) -> (count: Int, cost: Int) {
        list.withLock { list in
            var removed = (count: 0, cost: 0)
            var slot = list.tail
            while slot >= 0, list.index.count > count || list.totalCost > cost {
                let newer = list.links[slot].newer
                if let key = list.keys[slot], let value = list.values[slot], !keep(key, value) {
                    removed.count += 1
                    removed.cost += list.costs[slot]
                    list.remove(slot)
                }
                slot = newer
            }
            return removed
        }
    }

    /// Removes every entry.
    package func removeAll() {
        list.withLock { $0 = List() }
    }

    /// How many entries are kept.
    package var count: Int { list.withLock { $0.index.count } }

    /// The summed cost of the entries kept.
    package var totalCost: Int { list.withLock { $0.totalCost } }

    /// The keys from most to least recently used (O(n); for tests and diagnostics).
    package var keysByRecency: [Key] {
        list.withLock { list in
            var keys: [Key] = []
            var slot = list.head
            while slot >= 0, let key = list.keys[slot] {
                keys.append(key)
                slot = list.links[slot].older
            }
            return keys
        }
    }
}
