import Sovaria

/// A store that passes every call to ``inner`` except those the conforming type defines: for a
/// test's store that logs, counts or fails some calls of a real one. `set` and `delete` reach
/// ``write(_:)`` as batches of one, so a type that defines `write` alone sees every change; the
/// reads of bytes go through `get` and `entries` (`OfflineStore`'s own defaults), so one that
/// defines `get` sees every read of a value.
///
/// ```swift
/// final class BatchCountingStore: ForwardingStore {
///     let inner: any OfflineStore
///     let batches = Mutex(0)
///     init(_ inner: any OfflineStore) { self.inner = inner }
///     func write(_ batch: [StoreWrite]) async throws {
///         batches.withLock { $0 += 1 }
///         try await inner.write(batch)
///     }
/// }
/// ```
public protocol ForwardingStore: OfflineStore {
    /// The store every call the type does not define goes to.
    var inner: any OfflineStore { get }
}

extension ForwardingStore {
    /// ``inner``'s value.
    public func get(_ key: String) async throws -> String? { try await inner.get(key) }
    /// A batch of one set, through ``write(_:)``.
    public func set(_ key: String, _ value: String) async throws { try await write([.set(key: key, value: value)]) }
    /// A batch of one delete, through ``write(_:)``.
    public func delete(_ key: String) async throws { try await write([.delete(key: key)]) }
    /// ``inner``'s keys.
    public func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
    /// ``inner``'s entries.
    public func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try await inner.entries(prefix, after: after, limit: limit)
    }
    /// The batch, to ``inner``.
    public func write(_ batch: [StoreWrite]) async throws { try await inner.write(batch) }
    /// ``inner``'s compaction.
    public func compact() async throws { try await inner.compact() }
    /// ``inner``'s capabilities.
    public var capabilities: StoreCapabilities { inner.capabilities }
}
