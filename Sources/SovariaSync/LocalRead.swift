import Foundation
import SovariaCache
import SovariaQueue

/// A local-first answer from ``SovariaOffline/read(_:policy:maxAge:)`` and
/// ``SovariaOffline/observe(_:policy:maxAge:)``: the cached server answer with the table's
/// pending writes applied.
public struct LocalRead: Sendable, Hashable {
    /// The answer to show: the server's answer with the pending writes applied, or `nil` when
    /// nothing is known (nothing cached, no pending write answers the read).
    public var body: String?
    /// The server's answer underneath, as cached (never changed by local writes).
    public var response: CachedResponse?
    /// Where the server's answer came from (`.none` when nothing is cached).
    public var source: CacheRead.Source
    /// Whether a refresh runs behind the answer (stale-while-revalidate).
    public var isRefreshing: Bool
    /// Why the answer may differ from the server's once the writes sync, in the order met;
    /// empty when exact.
    public var inexactReasons: [InexactReason]
    /// The rows that pending writes touched (draw them as "waiting to sync").
    public var pendingRows: [PendingRow]
    /// Whether pending writes changed the answer (rows added, changed or removed).
    public var changedByPendingWrites = false
    /// The rows of the answer whose local writes conflict with the server's (the row changed
    /// since it was read): draw them as "needs your attention". The conflicting writes are not
    /// applied to the answer; ``SovariaOffline/conflicts()`` has them with the server's rows.
    public var conflictedRows: [ConflictedRow] = []
    /// The server's answer instead of rows, when it will refuse the read once the pending writes
    /// sync (a read of one row as an object whose rows are not one): ``body`` is then `nil`. A
    /// live query delivers it as it is; ``SovariaOffline/read(_:policy:maxAge:)`` throws it.
    public var refusal: DataResponse?
    /// The count of the rows the read matches, for a read that asks for one (PostgREST's
    /// `Prefer: count=exact`): the server's (its `Content-Range` total) moved by the writes. For
    /// a read that is not a page, the rows of its exact ``body``; for a page (a limit, an offset,
    /// a range), the server's plus the rows the writes bring into its filters, over every page,
    /// minus those they take out (``OverlayAnswer/rowCountChange``). When that is not known, the
    /// server's, and the answer is inexact (``InexactReason/countNotRecomputed``). `nil` when the
    /// read asks for no count or none is known.
    public var rowCount: Int?

    /// Whether the answer is what the server will answer once the pending writes have synced.
    public var isExact: Bool { inexactReasons.isEmpty }
    /// Whether pending writes changed the answer, a delete included (Firestore's
    /// `hasPendingWrites`).
    public var hasPendingWrites: Bool { changedByPendingWrites || !pendingRows.isEmpty }

    /// The body decoded as `type` with `decoder` (for PostgREST, an array of rows).
    ///
    /// - Returns: `nil` when the answer has no body.
    public func decode<Value: Decodable>(_ type: Value.Type, using decoder: JSONDecoder) throws -> Value? {
        guard let body else { return nil }
        return try decoder.decode(type, from: Data(body.utf8))
    }
}

/// A row of a ``LocalRead`` that a conflict holds.
public struct ConflictedRow: Sendable, Hashable {
    /// The row's key as a filter writes it (`n1`, `7`).
    public var key: String
    /// The ids of the conflicts on it (``SovariaOffline/conflicts()``), oldest first.
    public var conflictIDs: [String]

    /// A conflicted row.
    public init(key: String, conflictIDs: [String]) {
        self.key = key
        self.conflictIDs = conflictIDs
    }
}

/// A ``LocalRead`` with its body decoded, from ``SovariaOffline/read(_:as:policy:maxAge:)``.
public struct TypedRead<Value: Sendable>: Sendable {
    /// The decoded body, or `nil` when the answer has none.
    public var value: Value?
    /// The answer it was decoded from: exactness, pending rows, source.
    public var read: LocalRead
}

extension TypedRead: Equatable where Value: Equatable {}
