/// The count of the rows the read matches, over every page, as the writes move it
/// (``OverlayRows/rowCountChange``): each write that touches a row adds one when the row comes to
/// match and takes one when it stops; a write whose effect on a row not held could change the
/// count, or a row whose match is not known, leaves it unknown.
extension OverlayRows {
    /// Whether the row at `index` is one of the rows the read matches now; `nil` when that is not
    /// known. A cached row matched on the server, and still does while no write set a column the
    /// read filters on.
    func matches(_ index: Int) -> Bool? {
        let row = rows[index]
        if row.isDeleted { return false }
        let truth: Truth =
            row.cachedIndex != nil && row.changed.isDisjoint(with: cached.filterColumns)
            ? .yes : cached.readTruth(on: row)
        switch truth {
        case .no, .null: return false
        case .yes: return row.mayBeDeleted ? nil : true
        case .unknown: return nil
        }
    }

    /// ``matches(_:)`` while the count is kept, `nil` once it is not: a read that asks for no count
    /// evaluates no filter for it.
    func countedMatch(_ index: Int) -> Bool? {
        rowCountChange == nil ? nil : matches(index)
    }

    /// Whether a row an insert adds under `resolution` matched before it: not for a new key (a
    /// plain insert of a key the server holds is refused, and leaves the answer when it is), nor
    /// when the rows held are every row that matches; not known for an upsert that may merge into
    /// a row the cache does not hold.
    func newRowMatched(resolution: Resolution) -> Bool? {
        switch resolution {
        case .none: false
        case _ where cached.holdsEveryRow: false
        case .mergeDuplicates where cached.holdsEveryMatchingRow: false
        case .mergeDuplicates, .ignoreDuplicates: nil
        }
    }

    /// Moves ``rowCountChange`` by a row that matched (`before`) and matches (`after`); either
    /// not known makes it unknown.
    mutating func countMove(from before: Bool?, to after: Bool?) {
        guard let change = rowCountChange else { return }
        guard let before, let after else {
            rowCountChange = nil
            return
        }
        rowCountChange = change + (after ? 1 : 0) - (before ? 1 : 0)
    }
}
