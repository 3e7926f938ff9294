/// A small key/value store that keeps an offline-first app's data: the query cache, the queue
/// of writes made offline, the writes the server refused and the metadata of downloaded files.
///
/// Everything in Sovaria above the engines is written once against this protocol, so any store,
/// yours included, runs all of it. Only ``get(_:)``, ``set(_:_:)``, ``delete(_:)`` and
/// ``keys(_:)`` are required; batches, ordered paging and compaction have default
/// implementations built on those four, which native engines replace.
///
/// - Important: Contracts every store keeps (`SovariaTestKit` checks each one):
///   - Keys are byte strings: two keys are equal when their UTF-8 bytes are equal, and they are
///     ordered by those bytes (memcmp). Precomposed `"é"` and `"e\u{301}"` are two keys.
///   - Keys have 1 to ``StoreKey/maxUTF8Count`` (511) UTF-8 bytes on every engine; any other key
///     throws ``OfflineStoreError`` with code ``OfflineStoreError/Code/invalidKey`` and changes
///     nothing. Values are any string: `""` (not `nil`) and strings containing `"\0"` included.
///   - ``get(_:)`` of a missing key returns `nil`; ``delete(_:)`` of a missing key succeeds.
///   - A store whose ``capabilities`` contain ``StoreCapabilities/atomicBatch`` applies a batch
///     all or nothing; every store validates every key of a batch before writing any.
///   - Any number of tasks may call a store at once.
///
/// ```swift
/// let store: any OfflineStore = MemoryOfflineStore()
/// try await store.set("app:notes:0001", #"{"op":"insert"}"#)
/// let queued = try await store.keys("app:notes:")   // ["app:notes:0001"]
/// ```
public protocol OfflineStore: AnyObject, Sendable {
    /// The value stored under `key`, or `nil` when there is none.
    func get(_ key: String) async throws -> String?

    /// Calls `body` with the UTF-8 bytes of the value stored under `key`, and returns what it
    /// returns; `nil` (without calling it) when there is none. The zero-copy form of ``get(_:)``:
    /// native engines hand `body` the bytes where they lie (LMDB's map, SQLite's row), with no
    /// `String` made.
    ///
    /// - Important: The bytes are valid only while `body` runs: copy what you keep. They are the
    ///   stored bytes as they are; where ``get(_:)`` checks that a value is UTF-8 (and throws
    ///   `.corrupt`), a native `withValue` may leave that to `body` (a JSON decoder checks it).
    ///   Keys are validated as for ``get(_:)``.
    func withValue<Result>(_ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result) async throws -> Result?

    /// Stores `value` under `key`, replacing any value it had.
    func set(_ key: String, _ value: String) async throws

    /// Removes `key` and its value; removing a missing key is not an error.
    func delete(_ key: String) async throws

    /// The keys that start with `prefix` (byte prefix), ascending by their UTF-8 bytes.
    func keys(_ prefix: String) async throws -> [String]

    /// Applies `batch` in order.
    ///
    /// - Important: All keys are validated before anything is written. When ``capabilities``
    ///   contain ``StoreCapabilities/atomicBatch`` the batch is applied all or nothing, and no
    ///   reader sees part of it.
    func write(_ batch: [StoreWrite]) async throws

    /// Up to `limit` entries whose keys start with `prefix` and sort after `after` (byte order),
    /// ascending by key. Pass the last key of one page as `after` to read the next page.
    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry]

    /// Gives the space freed by deletes back to the operating system, keeping every entry.
    func compact() async throws

    /// What this store guarantees beyond the base contract; whether it is persistent included
    /// (``isPersistent`` reads it from here).
    var capabilities: StoreCapabilities { get }
}

extension OfflineStore {
    /// Reads the value with ``get(_:)`` and calls `body` with its UTF-8 bytes.
    public func withValue<Result>(
        _ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) async throws -> Result? {
        guard var value = try await get(key) else { return nil }
        return try value.withUTF8 { try body(UnsafeRawBufferPointer($0)) }
    }

    /// Validates every key, then applies the writes one at a time (not atomic).
    public func write(_ batch: [StoreWrite]) async throws {
        try StoreKey.validate(batch)
        for write in batch {
            switch write {
            case .set(let key, let value): try await set(key, value)
            case .delete(let key): try await delete(key)
            }
        }
    }

    /// Reads ``keys(_:)`` and then each value; keys deleted in between are left out.
    ///
    /// - Complexity: O(n log n) in the number of keys under `prefix`, for every page. Native
    ///   engines replace this with a cursor.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        guard limit > 0 else { return [] }
        var candidates = try await keys(prefix).map(StoreKey.Bytes.init)
        candidates.sort()
        if let after {
            let afterBytes = StoreKey.Bytes(after)
            candidates.removeAll { $0 <= afterBytes }
        }
        var page: [StoreEntry] = []
        for key in candidates {
            guard page.count < limit else { break }
            if let value = try await get(key.string) {
                page.append(StoreEntry(key: key.string, value: value))
            }
        }
        return page
    }

    /// Does nothing: a store without its own compaction has nothing to give back.
    public func compact() async throws {}

    /// No guarantees beyond the base contract.
    public var capabilities: StoreCapabilities { [] }

    /// Whether entries survive the end of the process: ``capabilities`` contains
    /// ``StoreCapabilities/persistent``, the one place a store says so.
    public var isPersistent: Bool { capabilities.contains(.persistent) }
}
