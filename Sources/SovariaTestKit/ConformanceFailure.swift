/// A contract of `OfflineStore` that a store broke, as found by ``OfflineStoreConformance``.
public struct ConformanceFailure: Error, Sendable, CustomStringConvertible {
    /// The check that failed.
    public let check: String
    /// The store's factory name.
    public let store: String
    /// What was expected and what happened.
    public let message: String

    /// `"store: check: message"`.
    public var description: String { "\(store): \(check): \(message)" }
}
