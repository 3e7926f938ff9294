import SovariaQueue

/// How a controller checks one table's queued updates and deletes against the server's rows:
/// the key and version columns, and what happens when a write no longer applies.
///
/// Every update and delete is sent asking for the rows it changed (PostgREST's
/// `Prefer: return=representation`), so one that changed nothing is never counted as synced.
/// A table with a ``versionColumn`` also gets optimistic concurrency: a write records the version
/// of the row the app read and is sent with it in its filter (`id=eq.n1&version=eq.7`).
///
/// ```swift
/// var configuration = SovariaOffline.Configuration(api: PostgREST())
/// configuration.conflictRules["notes"] = ConflictRule(versionColumn: "version", onConflict: .reject)
/// ```
public struct ConflictRule: Sendable, Hashable {
    /// The primary key column that names a row in a filter (`id=eq.n1`). Default: the table's
    /// key as the controller's overlay states it (`PostgRESTOverlay.Table.primaryKey`), else
    /// `"id"`; setting it overrides the overlay's.
    public var keyColumn: String {
        get { givenKeyColumn ?? "id" }
        set { givenKeyColumn = newValue }
    }
    /// The key column this rule was given (`nil`: the table's key as the overlay states it).
    var givenKeyColumn: String?
    /// The column the server changes on every update of a row (an integer a trigger increments,
    /// or an `updated_at` it sets). `nil` turns version checks off. Default: `nil`.
    public var versionColumn: String?
    /// What happens when a version-checked write finds the row changed. Default:
    /// ``ConflictPolicy/reject``.
    public var onConflict: ConflictPolicy
    /// What happens when an update or delete matches no row; a write's own
    /// `DataRequest.noMatchPolicy` wins over it. Default: `NoMatchPolicy.reject`.
    public var onNoMatch: NoMatchPolicy

    /// A rule; the defaults check for rows that are gone and nothing else. `keyColumn`: `nil`
    /// takes the table's key from the controller's overlay, else `"id"`.
    public init(
        keyColumn: String? = nil, versionColumn: String? = nil, onConflict: ConflictPolicy = .reject,
        onNoMatch: NoMatchPolicy = .reject
    ) {
        givenKeyColumn = keyColumn
        self.versionColumn = versionColumn
        self.onConflict = onConflict
        self.onNoMatch = onNoMatch
    }
}

/// What a controller does with a write whose row changed on the server since the app read it.
public enum ConflictPolicy: Sendable, Hashable {
    /// Keep the local write and the server's row side by side in the rejected list
    /// (`RejectionReason.conflict`) until the app calls ``SovariaOffline/resolve(_:with:)`` or
    /// drops it; later writes to the same row wait with it.
    case reject
    /// Drop the local write, keeping it in the rejected list for display
    /// (`RejectionReason.serverWon`) beside the server's row.
    case serverWins
    /// Send the write again without the version in its filter: the last writer wins.
    case clientWins
}
