import Foundation
import Sovaria

/// One cached list as a store holds it, read without opening a ``QueryCache``: for tools that
/// look into a store, such as `sovaria inspect`.
///
/// The server time and the body's size come from the store key alone, so they are known even
/// for an encrypted store read without its key; the response needs the entry's plain value.
public struct StoredList: Sendable, Hashable {
    /// When the server produced the list, as the key records it (whole milliseconds).
    public let serverTime: Date
    /// The size of the list's body in UTF-8 bytes, as the key records it.
    public let sizeBytes: Int
    /// The cached response, when a plain value was given and it is a cache record.
    public let response: CachedResponse?

    /// The list a query-cache store key names (of the current layout or of the first, which an
    /// open migrates), or `nil` for any other key.
    ///
    /// - Parameters:
    ///   - key: A store key; only keys under the query cache's list prefix give a list.
    ///   - value: The entry's value, to decode the response from; `nil` (or an encrypted value)
    ///     leaves ``response`` `nil`.
    public init?(key: String, value: String? = nil) {
        guard let parsed = CacheKeys.parseListKey(key) ?? CacheKeys.parseLegacyListKey(key) else {
            return nil
        }
        serverTime = CacheRecord.date(parsed.serverTimeMillis)
        sizeBytes = parsed.sizeBytes
        response = value.flatMap(CacheRecord.decode)
    }

    /// The prefix every list key of the query cache's current layout starts with: a store's
    /// lists are ordered by their query's hash under it, not by time. (Lists of the first
    /// layout, under `sov:cache:l:`, are moved here by the next open.)
    public static let keyPrefix = CacheKeys.listPrefix
}
