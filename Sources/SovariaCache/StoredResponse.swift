import Foundation
import Sovaria

/// One cached response as a store holds it, read without opening a ``QueryCache``: for tools
/// that look into a store, such as `sovaria inspect`.
///
/// The server time and the body's size come from the store key alone, so they are known even
/// for an encrypted store read without its key; the response needs the entry's plain value.
///
/// Not public because it reads the store's key layout, which is not part of the API; `package`
/// for the `sovaria` command.
package struct StoredResponse: Sendable, Hashable {
    /// When the server produced the response, as the key records it (whole milliseconds).
    package let serverTime: Date
    /// The size of the response's body in UTF-8 bytes, as the key records it.
    package let sizeBytes: Int
    /// The cached response, when a plain value was given and it is a cache record.
    package let response: CachedResponse?

    /// The response a query-cache store key names, or `nil` for any other key.
    ///
    /// - Parameters:
    ///   - key: A store key; only keys under the query cache's prefix give a response.
    ///   - value: The entry's value, to decode the response from; `nil` (or an encrypted value)
    ///     leaves ``response`` `nil`.
    package init?(key: String, value: String? = nil) {
        guard let parsed = CacheKeys.parseResponseKey(key) else { return nil }
        serverTime = CacheRecord.date(parsed.serverTimeMillis)
        sizeBytes = parsed.sizeBytes
        response = value.flatMap(CacheRecord.decode)
    }

    /// The prefix every response key of the query cache's current layout starts with: a store's
    /// responses are ordered by their query's hash under it, not by time.
    package static let keyPrefix = CacheKeys.responsePrefix
}
