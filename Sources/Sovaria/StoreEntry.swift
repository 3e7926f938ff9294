/// A key and its value, as returned by ``OfflineStore/entries(_:after:limit:)``.
public struct StoreEntry: Sendable, Hashable {
    /// The entry's key.
    public let key: String
    /// The entry's value.
    public let value: String

    /// Creates an entry.
    public init(key: String, value: String) {
        self.key = key
        self.value = value
    }
}
