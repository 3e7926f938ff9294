import Foundation
import SovariaPlumbing

/// A small key/value store that keeps an offline-first app's data: the query cache, the queue
/// of writes made offline, the writes the server refused and the metadata of downloaded files.
///
/// Everything in Sovaria above the engines is written once against this protocol, so any store,
/// yours included, runs all of it. Only ``get(_:)``, ``set(_:_:)``, ``delete(_:)`` and
/// ``keys(_:)`` are required; byte values, batches, ordered paging and compaction have default
/// implementations built on those four, which native engines replace.
///
/// - Important: Contracts every store keeps (`SovariaTestKit` checks each one):
///   - Keys are byte strings: two keys are equal when their UTF-8 bytes are equal, and they are
///     ordered by those bytes (memcmp). Precomposed `"é"` and `"e\u{301}"` are two keys.
///   - Keys have 1 to ``StoreKey/maxUTF8Count`` (511) UTF-8 bytes on every engine; any other key
///     throws ``OfflineStoreError`` with code ``OfflineStoreError/Code/invalidKey`` and changes
///     nothing. Values are any string: `""` (not `nil`) and strings containing `"\0"` included.
///   - Values are bytes: a string is stored as its UTF-8 bytes, and ``data(_:)`` reads any value
///     as the bytes stored. A store whose ``capabilities`` contain
///     ``StoreCapabilities/byteValues`` takes any bytes in ``set(_:data:)`` (empty, NUL, not
///     UTF-8), at least ``StoreValue/maxGuaranteedByteCount`` of them; ``get(_:)`` of a value
///     that is not UTF-8 throws ``OfflineStoreError/Code/notUTF8``, never a repaired string.
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

    /// The bytes stored under `key`, whether they were written as a string or as bytes; `nil`
    /// when there is none.
    func data(_ key: String) async throws -> Data?

    /// Calls `body` with the UTF-8 bytes of the value stored under `key`, and returns what it
    /// returns; `nil` (without calling it) when there is none. The zero-copy form of ``get(_:)``:
    /// native engines hand `body` the bytes where they lie (LMDB's map, SQLite's row), with no
    /// `String` made.
    ///
    /// - Important: The bytes are valid only while `body` runs: copy what you keep. They are the
    ///   stored bytes as they are, UTF-8 or not, as ``data(_:)`` returns them. Keys are validated
    ///   as for ``get(_:)``.
    func withValue<Result>(_ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result) async throws -> Result?

    /// Stores `value` under `key`, replacing any value it had.
    func set(_ key: String, _ value: String) async throws

    /// Stores the bytes `data` under `key`, replacing any value it had.
    ///
    /// - Important: A store with ``StoreCapabilities/byteValues`` stores any bytes as they are. A
    ///   store without it keeps text: it stores `data` when it is valid UTF-8 and otherwise throws
    ///   ``OfflineStoreError/Code/invalidValue`` and changes nothing.
    func set(_ key: String, data: Data) async throws

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

    /// ``entries(_:after:limit:)`` with each value as the bytes stored, UTF-8 or not.
    func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry]

    /// Calls `body` with the key and value bytes of up to `limit` entries whose keys start with
    /// `prefix` and sort after `after`, ascending by key, until `body` returns `false`: the
    /// zero-copy form of ``dataEntries(_:after:limit:)``, paged the same way (pass the page's
    /// ``StoreScanPage/lastKey`` as `after`). Native engines hand `body` the bytes where they lie
    /// (LMDB's map, LevelDB's slices, SQLite's row), with no `String` or `Data` made per entry.
    ///
    /// - Important: The bytes are valid only while `body` runs: copy what you keep. Values are the
    ///   stored bytes as they are, UTF-8 or not; keys are their UTF-8 bytes. `body` must not call
    ///   the store (native engines may hold a read transaction or a lock while it runs). An error
    ///   `body` throws ends the scan and is rethrown as it is.
    func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage

    /// Calls `body` with the UTF-8 bytes of up to `limit` keys that start with `prefix` and sort
    /// after `after`, ascending, until `body` returns `false`: ``keys(_:)`` paged and borrowed,
    /// for what is built from key names alone (an index), with no `String` per key and no value
    /// read.
    ///
    /// - Important: As ``withEntries(_:after:limit:_:)``: the bytes are valid only while `body`
    ///   runs, `body` must not call the store, and its error ends the scan.
    func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage

    /// Gives the space freed by deletes back to the operating system, keeping every entry.
    func compact() async throws

    /// What this store guarantees beyond the base contract; whether it is persistent included
    /// (``isPersistent`` reads it from here).
    var capabilities: StoreCapabilities { get }
}

extension OfflineStore {
    /// Reads the value with ``get(_:)``: its UTF-8 bytes. Stores with
    /// ``StoreCapabilities/byteValues`` replace this.
    public func data(_ key: String) async throws -> Data? {
        try await get(key).map { Data($0.utf8) }
    }

    /// Reads the value with ``data(_:)`` and calls `body` with its bytes.
    public func withValue<Result>(
        _ key: String, _ body: (UnsafeRawBufferPointer) throws -> Result
    ) async throws -> Result? {
        guard let value = try await data(key) else { return nil }
        return try value.withUnsafeBytes(body)
    }

    /// Stores `data` with ``set(_:_:)`` when it is valid UTF-8; otherwise throws
    /// ``OfflineStoreError/Code/invalidValue`` (a store of text only). Stores with
    /// ``StoreCapabilities/byteValues`` replace this.
    public func set(_ key: String, data: Data) async throws {
        try StoreKey.validate(key)
        try await set(key, StoreValue.text(of: data, key: key))
    }

    /// Validates every key and every value, then applies the writes one at a time (not atomic):
    /// byte values go through ``set(_:data:)``.
    public func write(_ batch: [StoreWrite]) async throws {
        try StoreKey.validate(batch)
        let byteValues = capabilities.contains(.byteValues)
        if !byteValues {
            for case .setData(let key, let data) in batch { _ = try StoreValue.text(of: data, key: key) }
        }
        for write in batch {
            switch write {
            case .set(let key, let value): try await set(key, value)
            case .setData(let key, let data): try await set(key, data: data)
            case .delete(let key): try await delete(key)
            }
        }
    }

    /// Reads ``keys(_:)`` and then each value with ``data(_:)``; keys deleted in between are left
    /// out. Native engines replace this with a cursor.
    public func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
        var page: [StoreDataEntry] = []
        for key in try await candidateKeys(prefix, after: after, limit: limit) {
            guard page.count < limit else { break }
            if let data = try await data(key.string) { page.append(StoreDataEntry(key: key.string, data: data)) }
        }
        return page
    }

    /// Reads the page with ``dataEntries(_:after:limit:)`` and hands `body` each entry's bytes:
    /// what a store of your own gets without writing a scan. Native engines replace it.
    public func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        let page = try await dataEntries(prefix, after: after, limit: limit)
        return try EntryScan.run(limit: limit, body: body) { visit in
            for entry in page {
                let goesOn = entry.key.withUTF8Bytes { key in
                    entry.data.withUnsafeBytes { value in visit(UnsafeRawBufferPointer(key), value) }
                }
                guard goesOn else { return }
            }
        }
    }

    /// Reads the keys with ``keys(_:)`` and hands `body` those after `after`, in byte order. Native
    /// engines replace it with a cursor.
    ///
    /// - Complexity: O(n log n) in the number of keys under `prefix`, for every page.
    public func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        let keys = try await candidateKeys(prefix, after: after, limit: limit)
        return try EntryScan.run(limit: limit, keys: body) { visit in
            for key in keys {
                guard key.withUTF8({ visit(UnsafeRawBufferPointer($0), EntryScan.noValue) }) else { return }
            }
        }
    }

    /// Calls `body` with every key that starts with `prefix`, in byte order, a page of `pageSize`
    /// at a time through ``withKeys(_:after:limit:_:)``, until `body` returns `false`; returns how
    /// many keys `body` was called with.
    ///
    /// - Important: Each page is read on its own, as in ``forEachEntry(_:pageSize:_:)``. On a store
    ///   without a native ``withKeys(_:after:limit:_:)`` each page lists the whole prefix: read it
    ///   in one page there (`limit: .max`).
    @discardableResult
    public func forEachKey(
        _ prefix: String, pageSize: Int = 1_000, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> Int {
        precondition(pageSize > 0, "A scan reads at least one key a page")
        return try await StoreScanPage.countAll { after in
            try await withKeys(prefix, after: after, limit: pageSize, body)
        }
    }

    /// Calls `body` with every entry whose key starts with `prefix`, in byte order, a page of
    /// `pageSize` at a time through ``withEntries(_:after:limit:_:)``, until `body` returns
    /// `false`; returns how many entries `body` was called with.
    ///
    /// - Important: Each page is read on its own: a write between two pages is seen or not,
    ///   according to where its key falls. The bytes are valid only while `body` runs.
    @discardableResult
    public func forEachEntry(
        _ prefix: String, pageSize: Int = 1_000, _ body: StoreEntryVisitor
    ) async throws -> Int {
        precondition(pageSize > 0, "A scan reads at least one entry a page")
        return try await StoreScanPage.countAll { after in
            try await withEntries(prefix, after: after, limit: pageSize, body)
        }
    }

    /// Reads ``keys(_:)`` and then each value; keys deleted in between are left out.
    ///
    /// - Complexity: O(n log n) in the number of keys under `prefix`, for every page. Native
    ///   engines replace this with a cursor.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        var page: [StoreEntry] = []
        for key in try await candidateKeys(prefix, after: after, limit: limit) {
            guard page.count < limit else { break }
            if let value = try await get(key.string) {
                page.append(StoreEntry(key: key.string, value: value))
            }
        }
        return page
    }

    /// The keys under `prefix` after `after`, in byte order; none when `limit` is not positive.
    private func candidateKeys(_ prefix: String, after: String?, limit: Int) async throws -> [StoreKey.Bytes] {
        guard limit > 0 else { return [] }
        var candidates = try await keys(prefix).map(StoreKey.Bytes.init)
        candidates.sort()
        if let after {
            let afterBytes = StoreKey.Bytes(after)
            candidates.removeAll { $0 <= afterBytes }
        }
        return candidates
    }

    /// Does nothing: a store without its own compaction has nothing to give back.
    public func compact() async throws {}

    /// No guarantees beyond the base contract.
    public var capabilities: StoreCapabilities { [] }

    /// Whether entries survive the end of the process: ``capabilities`` contains
    /// ``StoreCapabilities/persistent``, the one place a store says so.
    public var isPersistent: Bool { capabilities.contains(.persistent) }
}
