import Foundation
import Sovaria

/// Reads one store in pages of `pageSize` under `prefix`, and the entries of another store in the
/// same key range alongside (migrate's "which keys does the target have", verify's comparison).
enum StoreRange {
    /// The entries of `store` under `prefix` whose keys sort after `after` and up to `last`
    /// (byte order), keyed by their bytes, each value as the bytes stored (UTF-8 or not).
    static func entries(
        of store: any OfflineStore, prefix: String, after: String?, through last: String, pageSize: Int
    ) async throws -> [StoreKey.Bytes: Data] {
        let lastBytes = StoreKey.Bytes(last)
        var found: [StoreKey.Bytes: Data] = [:]
        var cursor = after
        while true {
            let page = try await store.dataEntries(prefix, after: cursor, limit: pageSize)
            for entry in page {
                let key = StoreKey.Bytes(entry.key)
                if key > lastBytes { return found }
                found[key] = entry.data
            }
            guard page.count == pageSize, let next = page.last?.key else { return found }
            cursor = next
        }
    }

    /// How many entries, and how many bytes of keys and values, `store` holds under `prefix` after
    /// `after` (the work left to a migrate, for its progress and its full-disk hint).
    static func remaining(
        in store: any OfflineStore, prefix: String, after: String?, pageSize: Int
    ) async throws -> (entries: Int, bytes: Int) {
        var total = (entries: 0, bytes: 0)
        var cursor = after
        while true {
            try Task.checkCancellation()
            let page = try await store.dataEntries(prefix, after: cursor, limit: pageSize)
            total.entries += page.count
            total.bytes += page.reduce(0) { $0 + $1.key.utf8.count + $1.data.count }
            guard page.count == pageSize, let last = page.last?.key else { return total }
            cursor = last
        }
    }
}
