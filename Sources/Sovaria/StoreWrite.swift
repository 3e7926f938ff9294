/// One write of a batch passed to ``OfflineStore/write(_:)``.
public enum StoreWrite: Sendable, Hashable {
    /// Stores `value` under `key`.
    case set(key: String, value: String)
    /// Removes `key`; a missing key is not an error.
    case delete(key: String)

    /// The key this write touches.
    public var key: String {
        switch self {
        case .set(let key, _), .delete(let key): key
        }
    }
}
