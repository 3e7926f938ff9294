import Foundation
import Sovaria

/// How the conformance suite makes the stores it checks.
///
/// `open` receives a folder the suite created, empty and used by no other store; it must return
/// a store that keeps its data there (a memory store ignores it). To check that data survives,
/// the suite drops every reference to a store and calls `open` again with the same folder.
///
/// ```swift
/// let factory = StoreFactory("sqlite") { folder in
///     try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("db.sqlite"))
/// }
/// ```
public struct StoreFactory: Sendable, CustomStringConvertible {
    /// A name for reports, e.g. `"sqlite"` or `"encrypted(lmdb)"`.
    public let name: String
    /// Opens the store kept in a folder.
    public let open: @Sendable (_ folder: URL) async throws -> any OfflineStore
    /// Whether the stores must be persistent (`nil`: whatever they report). A persistent store
    /// that silently fell back to memory then fails instead of skipping the reopen check.
    public let persistent: Bool?

    /// Creates a factory named `name` that opens stores with `open`.
    public init(
        _ name: String, persistent: Bool? = nil,
        open: @escaping @Sendable (_ folder: URL) async throws -> any OfflineStore
    ) {
        self.name = name
        self.persistent = persistent
        self.open = open
    }

    /// The factory's name.
    public var description: String { name }
}
