/// Why a write is in the ``WriteQueue``'s rejected list.
public enum RejectionReason: String, Sendable, Hashable, Codable {
    /// The server refused the write (a 4xx other than 401, 408 and 429): sending it again as it
    /// is would fail again.
    case refused
    /// The server took the write, but its filter matched no row: an update or delete of a row
    /// that is gone. Nothing changed on the server.
    case noMatchingRow
    /// The row changed on the server since the app read it (its version column moved on): the
    /// write was not applied, and waits for the app to resolve it, beside the server's row
    /// (``RejectedWrite/serverRow``). Later writes to the same row wait with it.
    case conflict
    /// The row changed on the server since the app read it, and the table's policy lets the
    /// server win: the write was dropped and is kept here for display, beside the server's row.
    case serverWon
}

/// What to do with a queued update or delete whose filter matches no row on the server.
public enum NoMatchPolicy: String, Sendable, Hashable, Codable {
    /// Move it to the rejected list with ``RejectionReason/noMatchingRow``: the app is told the
    /// edit did not apply (the default).
    case reject
    /// Count it as synced: for idempotent writes, such as deleting a row that may be gone already.
    case ignoreNoMatch
}
