import SovariaQueue

/// The rows that unresolved conflicts hold: writes to them wait in the queue until the app
/// resolves or drops the conflict. Built from the rejected list (``RejectionReason/conflict``
/// entries) at open and again after each change of the list.
struct ConflictIndex: Sendable {
    /// Table → the keys of its rows in conflict (as the write's filter names them) → conflict ids.
    private(set) var rows: [String: [String: [String]]] = [:]
    /// Tables with a conflict whose row the controller cannot name: every write to them waits.
    private(set) var wholeTables: Set<String> = []
    /// How many conflicts wait for the app.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    init() {}

    init(_ rejected: [RejectedWrite], rules: [String: ConflictRule]) {
        for entry in rejected where entry.reason == .conflict {
            count += 1
            guard let table = entry.write.request.table else { continue }
            let keyColumn = rules[table]?.keyColumn ?? "id"
            if let key = RowFilters.equalValue(of: keyColumn, in: entry.write.request.path) {
                rows[table, default: [:]][key, default: []].append(entry.id)
            } else {
                wholeTables.insert(table)
            }
        }
    }

    /// Whether `request` must wait for a conflict: it names a row in conflict, or may touch one
    /// (a filter that names no row on a table with a conflict, or a function call that may change
    /// any table, while any conflict waits).
    func holds(_ request: DataRequest, keyColumn: String) -> Bool {
        guard !isEmpty else { return false }
        guard let table = request.table else { return true }
        if wholeTables.contains(table) { return true }
        guard let keys = rows[table], !keys.isEmpty else { return false }
        guard let key = Self.key(of: request, keyColumn: keyColumn) else { return true }
        return keys[key] != nil
    }

    /// The keys of `table`'s rows in conflict.
    func keys(of table: String) -> [String: [String]] { rows[table] ?? [:] }

    /// The row a write names: the key filter of an update or delete, the key field of an inserted
    /// object; `nil` when it names none (or inserts several rows).
    static func key(of request: DataRequest, keyColumn: String) -> String? {
        if let key = RowFilters.equalValue(of: keyColumn, in: request.path) { return key }
        guard request.method.uppercased() == "POST", let body = request.body,
            let row = RowJSON.rows("[" + body + "]")?.first
        else { return nil }
        return RowJSON.filterText(row[keyColumn])
    }
}
