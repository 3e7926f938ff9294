import Foundation

/// A key and its value as bytes, as returned by ``OfflineStore/dataEntries(_:after:limit:)``.
public struct StoreDataEntry: Sendable, Hashable {
    /// The entry's key.
    public let key: String
    /// The entry's value: the bytes stored, whether they were written as a string or as bytes.
    public let data: Data

    /// Creates an entry.
    public init(key: String, data: Data) {
        self.key = key
        self.data = data
    }
}
