import Synchronization

/// An in-memory LRU cache limited by entry count and by total cost: a dictionary for O(1)
/// lookup and a doubly linked list (kept in an array of nodes, linked by index) for O(1)
/// reordering. Every read and write makes its entry the most recently used; when a limit is
/// passed, the least recently used entries go.
///
/// - Important: Safe from any number of tasks: each call holds a lock for a few array and
///   dictionary operations and never suspends. Unlike `NSCache`, eviction is exactly LRU and
///   entries never disappear for any other reason.
///
/// ```swift
/// let memory = MemoryCache<String, String>(countLimit: 1_000, costLimit: 8 << 20)
/// memory.set("k", "v", cost: 1)
/// memory.value(forKey: "k")  // "v", now the most recently used
/// ```
public final class MemoryCache<Key: Hashable & Sendable, Value: Sendable>: Sendable {
    private struct Node {
        var key: Key
        var value: Value
        var cost: Int
        var newer: Int  // towards the head (most recent), -1 at the head
        var older: Int  // towards the tail (least recent), -1 at the tail
    }

    private struct List {
        var index: [Key: Int] = [:]
        var nodes: [Node?] = []
        var free: [Int] = []
        var head = -1
        var tail = -1
        var totalCost = 0

        mutating func unlink(_ slot: Int) {
            guard let node = nodes[slot] else { return }
            if node.newer >= 0 { nodes[node.newer]?.older = node.older } else { head = node.older }
            if node.older >= 0 { nodes[node.older]?.newer = node.newer } else { tail = node.newer }
        }

        mutating func linkAtHead(_ slot: Int) {
            nodes[slot]?.newer = -1
            nodes[slot]?.older = head
            if head >= 0 { nodes[head]?.newer = slot }
            head = slot
            if tail < 0 { tail = slot }
        }

        @discardableResult
        mutating func remove(_ slot: Int) -> Node? {
            unlink(slot)
            guard let node = nodes[slot] else { return nil }
            nodes[slot] = nil
            free.append(slot)
            index[node.key] = nil
            totalCost -= node.cost
            return node
        }
    }

    private let list = Mutex(List())
    /// The most entries kept.
    public let countLimit: Int
    /// The most total cost kept (for example bytes).
    public let costLimit: Int

    /// Creates a cache holding at most `countLimit` entries and `costLimit` total cost.
    public init(countLimit: Int = .max, costLimit: Int = .max) {
        self.countLimit = max(0, countLimit)
        self.costLimit = max(0, costLimit)
    }

    /// The value for `key`, which becomes the most recently used; `nil` when absent.
    ///
    /// - Complexity: O(1).
    public func value(forKey key: Key) -> Value? {
        list.withLock { list in
            guard let slot = list.index[key] else { return nil }
            if list.head != slot {
                list.unlink(slot)
                list.linkAtHead(slot)
            }
            return list.nodes[slot]?.value
        }
    }

    /// Stores `value` as the most recently used entry, then evicts the least recently used
    /// until both limits hold. An entry costlier than `costLimit` is not kept.
    ///
    /// - Complexity: O(1), plus O(1) per evicted entry.
    public func set(_ key: Key, _ value: Value, cost: Int = 1) {
        let cost = max(0, cost)
        list.withLock { list in
            if let slot = list.index[key] { list.remove(slot) }
            guard cost <= costLimit, countLimit > 0 else { return }
            let node = Node(key: key, value: value, cost: cost, newer: -1, older: -1)
            let slot: Int
            if let reused = list.free.popLast() {
                slot = reused
                list.nodes[slot] = node
            } else {
                slot = list.nodes.count
                list.nodes.append(node)
            }
            list.index[key] = slot
            list.totalCost += cost
            list.linkAtHead(slot)
            while list.index.count > countLimit || list.totalCost > costLimit, list.tail >= 0 {
                list.remove(list.tail)
            }
        }
    }

    /// Removes `key`'s entry and returns its value.
    @discardableResult
    public func removeValue(forKey key: Key) -> Value? {
        list.withLock { list in
            guard let slot = list.index[key] else { return nil }
            return list.remove(slot)?.value
        }
    }

    /// Removes every entry.
    public func removeAll() {
        list.withLock { $0 = List() }
    }

    /// How many entries are kept.
    public var count: Int { list.withLock { $0.index.count } }

    /// The summed cost of the entries kept.
    public var totalCost: Int { list.withLock { $0.totalCost } }

    /// The keys from most to least recently used (O(n); for tests and diagnostics).
    public var keysByRecency: [Key] {
        list.withLock { list in
            var keys: [Key] = []
            var slot = list.head
            while slot >= 0, let node = list.nodes[slot] {
                keys.append(node.key)
                slot = node.older
            }
            return keys
        }
    }
}
