/// A binary min-heap: the eviction order of the query cache and the file cache (pop the least
/// recently used in O(log n), never a sort of everything).
///
/// Inlinable, so the caches' modules specialize it for their items: unspecialized, each
/// comparison went through the generic witness table, and an open of 100,000 lists spent most
/// of its time there.
@frozen
public struct MinHeap<Element: Comparable> {
    /// The heap in an array: each item's children are at `2i + 1` and `2i + 2`.
    @usableFromInline var items: [Element] = []

    @inlinable package init() {}

    /// Builds the heap in O(n).
    @inlinable package init(_ elements: [Element]) {
        items = elements
        items.withUnsafeMutableBufferPointer { buffer in
            for index in stride(from: buffer.count / 2 - 1, through: 0, by: -1) { Self.siftDown(index, in: buffer) }
        }
    }

    @inlinable package var count: Int { items.count }

    @inlinable package mutating func insert(_ element: Element) {
        items.append(element)
        var child = items.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard items[child] < items[parent] else { break }
            items.swapAt(child, parent)
            child = parent
        }
    }

    @inlinable package mutating func popMin() -> Element? {
        guard !items.isEmpty else { return nil }
        items.swapAt(0, items.count - 1)
        let minimum = items.removeLast()
        siftDown(0)
        return minimum
    }

    @inlinable mutating func siftDown(_ start: Int) {
        items.withUnsafeMutableBufferPointer { Self.siftDown(start, in: $0) }
    }

    /// Moves the item at `start` down to its place. On the buffer, not the array: through the
    /// array, each swap checked that the array is not shared, and heapifying 100,000 items took
    /// 30 ms.
    @inlinable static func siftDown(_ start: Int, in items: UnsafeMutableBufferPointer<Element>) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < items.count, items[left] < items[smallest] { smallest = left }
            if right < items.count, items[right] < items[smallest] { smallest = right }
            if smallest == parent { return }
            items.swapAt(parent, smallest)
            parent = smallest
        }
    }
}

extension MinHeap: Sendable where Element: Sendable {}
