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
    /// The longest key, in UTF-8 bytes, the stores take: `StoreKey.maxUTF8Count` (511), as
    /// every engine, by default. A view that adds a prefix to every key, such as
    /// `AccountScopedStore`, takes fewer; the suite then checks keys of exactly this many bytes
    /// work and one byte more throws `.invalidKey`.
    public let maxKeyUTF8Count: Int

    /// Creates a factory named `name` that opens stores with `open`.
    public init(
        _ name: String, persistent: Bool? = nil, maxKeyUTF8Count: Int = StoreKey.maxUTF8Count,
        open: @escaping @Sendable (_ folder: URL) async throws -> any OfflineStore
    ) {
        precondition(
            (4...StoreKey.maxUTF8Count).contains(maxKeyUTF8Count),
            "A store takes keys of at least 4 and at most \(StoreKey.maxUTF8Count) UTF-8 bytes")
        self.name = name
        self.persistent = persistent
        self.maxKeyUTF8Count = maxKeyUTF8Count
        self.open = open
    }

    /// The factory's name.
    public var description: String { name }
}
