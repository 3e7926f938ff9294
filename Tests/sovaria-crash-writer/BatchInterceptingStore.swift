import Sovaria

/// A store that passes every call to ``inner`` but `write`, which the conforming type defines:
/// `set` and `delete` reach it as batches of one. The crash workloads' killing stores are these.
protocol BatchInterceptingStore: OfflineStore {
    /// The store every call but `write` goes to.
    var inner: any OfflineStore { get }
}

extension BatchInterceptingStore {
    func get(_ key: String) async throws -> String? { try await inner.get(key) }
    func set(_ key: String, _ value: String) async throws { try await write([.set(key: key, value: value)]) }
    func delete(_ key: String) async throws { try await write([.delete(key: key)]) }
    func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try await inner.entries(prefix, after: after, limit: limit)
    }
    func compact() async throws { try await inner.compact() }
    var capabilities: StoreCapabilities { inner.capabilities }
}
