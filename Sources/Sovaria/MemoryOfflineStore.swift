import Foundation
import SovariaPlumbing
import Synchronization

/// Keeps entries in memory for this run only: queued writes not yet synced are lost on relaunch.
///
/// Keys are held as their UTF-8 bytes, so precomposed and decomposed forms stay two keys, and
/// listed in byte order from a sorted index: a key added or removed between reads of the index
/// is put in or taken out in place (a binary search), and the index is sorted anew only after
/// more than 64 such changes since it was last read (a bulk load sorts once).
///
/// - Important: Safe from any number of tasks; every call runs on the caller's executor and
///   holds a lock for a few dictionary operations. Batches are atomic.
public final class MemoryOfflineStore: OfflineStore {
    /// A value kept as it was written, so neither kind converts on its own round trip.
    private enum Value {
        case text(String)
        case bytes(Data)

        func string(key: String) throws(OfflineStoreError) -> String {
            switch self {
            case .text(let text): text
            case .bytes(let data):
                try data.withBytes { (bytes) throws(OfflineStoreError) in
                    try StoreValue.string(bytes, key: key, engine: .memory)
                }
            }
        }

        var data: Data {
            switch self {
            case .text(let text): Data(text.utf8)
            case .bytes(let data): data
            }
        }

        /// Calls `body` with the value's bytes where they lie.
        func withBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
            switch self {
            case .text(let text): text.withUTF8Bytes { body(UnsafeRawBufferPointer($0)) }
            case .bytes(let data): data.withUnsafeBytes(body)
            }
        }
    }

    private struct State {
        var values: [StoreKey.Bytes: Value] = [:]
        /// Every key in byte order; `nil` once more than `maxChangesInPlace` keys were added or
        /// removed since it was last read.
        var sortedKeys: [StoreKey.Bytes]? = []
        /// Keys added or removed in place since the index was last read.
        var changesInPlace = 0
        /// More changes than this between two reads drop the index (a sort is then cheaper than a
        /// move of the array per key).
        static let maxChangesInPlace = 64

        mutating func orderedKeys() -> [StoreKey.Bytes] {
            changesInPlace = 0
            if let sortedKeys { return sortedKeys }
            let sorted = values.keys.sorted()
            sortedKeys = sorted
            return sorted
        }

        mutating func apply(_ write: StoreWrite) {
            switch write {
            case .set(let key, let value):
                let bytes = StoreKey.Bytes(key)
                if values.updateValue(.text(value), forKey: bytes) == nil { changeIndex(bytes, added: true) }
            case .setData(let key, let data):
                let bytes = StoreKey.Bytes(key)
                if values.updateValue(.bytes(data), forKey: bytes) == nil { changeIndex(bytes, added: true) }
            case .delete(let key):
                let bytes = StoreKey.Bytes(key)
                if values.removeValue(forKey: bytes) != nil { changeIndex(bytes, added: false) }
            }
        }

        private mutating func changeIndex(_ key: StoreKey.Bytes, added: Bool) {
            guard sortedKeys != nil else { return }
            changesInPlace += 1
            guard changesInPlace <= Self.maxChangesInPlace else {
                sortedKeys = nil
                return
            }
            let index = sortedKeys!.partitioningIndex { !($0 < key) }
            if added {
                sortedKeys!.insert(key, at: index)
            } else {
                sortedKeys!.remove(at: index)
            }
        }
    }

    private let state = Mutex(State())

    /// Creates an empty store.
    public init() {}

    /// Atomic batches and byte values, in memory only.
    public var capabilities: StoreCapabilities { [.atomicBatch, .byteValues] }

    /// The value stored under `key`, or `nil`.
    public func get(_ key: String) async throws -> String? {
        try StoreKey.validate(key)
        return try state.withLock { $0.values[StoreKey.Bytes(key)] }?.string(key: key)
    }

    /// The bytes stored under `key`, or `nil`.
    public func data(_ key: String) async throws -> Data? {
        try StoreKey.validate(key)
        return state.withLock { $0.values[StoreKey.Bytes(key)] }?.data
    }

    /// Calls `body` with the value's bytes where the store keeps them (its `String` or `Data`): no
    /// copy. The value is taken under the lock and read after it is released.
    public func withValue<Result>(
        _ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) async throws -> Result? {
        try StoreKey.validate(key)
        guard let value = state.withLock({ $0.values[StoreKey.Bytes(key)] }) else { return nil }
        let slot = ResultSlot(for: Result.self)
        defer { slot.free() }
        var failure: (any Error)?
        value.withBytes { bytes in
            do {
                slot.store(try body(bytes))
            } catch {
                failure = error
            }
        }
        if let failure { throw failure }
        return slot.take(Result.self)
    }

    /// Stores the bytes `data` under `key`.
    public func set(_ key: String, data: Data) async throws {
        try StoreKey.validate(key)
        state.withLock { $0.apply(.setData(key: key, data: data)) }
    }

    /// Stores `value` under `key`.
    public func set(_ key: String, _ value: String) async throws {
        try StoreKey.validate(key)
        state.withLock { $0.apply(.set(key: key, value: value)) }
    }

    /// Removes `key`.
    public func delete(_ key: String) async throws {
        try StoreKey.validate(key)
        state.withLock { $0.apply(.delete(key: key)) }
    }

    /// Applies every write or, when a key is invalid, none.
    public func write(_ batch: [StoreWrite]) async throws {
        try StoreKey.validate(batch)
        state.withLock { state in
            for write in batch { state.apply(write) }
        }
    }

    /// The keys that start with `prefix`, in byte order.
    ///
    /// - Complexity: O(log n + m) for m matching keys once the index is built; O(n log n) after
    ///   keys were added or removed.
    public func keys(_ prefix: String) async throws -> [String] {
        // The index is a value: the strings are made outside the lock, so a listing of 100,000
        // keys does not hold up other calls while it builds them.
        let ordered = state.withLock { $0.orderedKeys() }
        return StoreKey.range(of: prefix, after: nil, in: ordered).map(\.string)
    }

    /// A page of entries in byte order, read from the sorted index.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try page(prefix, after: after, limit: limit).map { key, value in
            StoreEntry(key: key.string, value: try value.string(key: key.string))
        }
    }

    /// A page of entries in byte order with their values as bytes, read from the sorted index.
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        page(prefix, after: after, limit: limit).map { StoreDataEntry(key: $0.key.string, data: $0.value.data) }
    }

    /// Hands `body` each entry of the page in byte order, the bytes where the store keeps them.
    ///
    /// - Important: The page is taken under the store's lock and handed over after it is released,
    ///   so `body` sees one moment of the store; it runs on the caller's executor.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        let page = page(prefix, after: after, limit: limit)
        return try EntryScan.run(limit: limit, body: body) { visit in
            for (key, value) in page {
                let goesOn = key.withUTF8 { key in value.withBytes { visit(UnsafeRawBufferPointer(key), $0) } }
                guard goesOn else { return }
            }
        }
    }

    /// Hands `body` each key of the page in byte order, from the sorted index taken under the
    /// store's lock; `body` runs after the lock is released, on the caller's executor.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        guard limit > 0 else { return .empty }
        let keys = state.withLock { state in
            Array(StoreKey.range(of: prefix, after: after, in: state.orderedKeys()).prefix(limit))
        }
        return try EntryScan.run(limit: limit, keys: body) { visit in
            for key in keys {
                guard key.withUTF8({ visit(UnsafeRawBufferPointer($0), EntryScan.noValue) }) else { return }
            }
        }
    }

    private func page(_ prefix: String, after: String?, limit: Int) -> [(key: StoreKey.Bytes, value: Value)] {
        guard limit > 0 else { return [] }
        return state.withLock { state in
            let ordered = state.orderedKeys()
            return StoreKey.range(of: prefix, after: after, in: ordered).prefix(limit).compactMap { key in
                state.values[key].map { (key, $0) }
            }
        }
    }
}
