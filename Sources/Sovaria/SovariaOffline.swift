/// The offline controller: queue, cache, flush and sync. For now it holds ``migrate(from:to:prefix:batchSize:)``;
/// the controller itself arrives in a later release.
public final class SovariaOffline: Sendable {
    private init() {}

    /// The prefix of every key the engine writes.
    public static let keyPrefix = "sov:"

    /// Copies the offline entries (keys starting with `"sov:" + prefix`) of `source` into
    /// `target`, keeping every key `target` already has, and returns how many it copied.
    ///
    /// Use it when an app moves its offline data from one store to another (for example from
    /// ``MemoryOfflineStore`` to a persistent one, from one engine to another, or to an
    /// encrypted store with a new key). Entries are read in pages of `batchSize` with
    /// ``OfflineStore/entries(_:after:limit:)`` and written with ``OfflineStore/write(_:)``, so
    /// memory stays flat however many entries there are.
    ///
    /// ```swift
    /// let copied = try await SovariaOffline.migrate(from: fileStore, to: sqliteStore)
    /// ```
    ///
    /// - Important: Not atomic as a whole: each page is one batch. Running it again after a
    ///   failure is safe, since keys already copied are kept and not counted twice.
    public static func migrate(
        from source: any OfflineStore,
        to target: any OfflineStore,
        prefix: String = "",
        batchSize: Int = 1_000
    ) async throws -> Int {
        let fullPrefix = keyPrefix + prefix
        let pageSize = max(1, batchSize)
        var copied = 0
        var after: String?
        while true {
            let page = try await source.entries(fullPrefix, after: after, limit: pageSize)
            guard let last = page.last else { break }
            var writes: [StoreWrite] = []
            writes.reserveCapacity(page.count)
            for entry in page where try await target.get(entry.key) == nil {
                writes.append(.set(key: entry.key, value: entry.value))
            }
            try await target.write(writes)
            copied += writes.count
            after = last.key
            if page.count < pageSize { break }
        }
        return copied
    }
}
