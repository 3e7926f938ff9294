import Sovaria
import SovariaQueue

/// The rows that unresolved conflicts hold: writes to them wait in the queue until the app
/// resolves or drops the conflict. Built from the rejected list (``RejectionReason/conflict``
/// entries) at open and again after each change of the list.
struct ConflictIndex: Sendable {
    /// Table → the keys of its rows in conflict (as the write's filter names them, compared by
    /// their bytes) → conflict ids.
    private(set) var rows: [String: [StoreKey.Bytes: [String]]] = [:]
    /// Tables with a conflict whose row the controller cannot name: every write to them waits.
    private(set) var wholeTables: Set<String> = []
    /// The ids of the conflicts waiting for the app.
    private(set) var ids: Set<String> = []

    /// How many conflicts wait for the app.
    var count: Int { ids.count }

    var isEmpty: Bool { count == 0 }

    init() {}

    /// The conflicts among `rejected` (newest first, as the rejected list reads), each row
    /// named by its table's `keyColumn`.
    init(_ rejected: [RejectedWrite], keyColumn: (String?) -> String, api: any DataAPI) {
        for entry in rejected.reversed() where entry.reason == .conflict {
            let table = api.table(of: entry.write.request)
            add(entry.write.request, id: entry.id, keyColumn: keyColumn(table), api: api)
        }
    }

    /// Adds the conflict `id` of `request`.
    mutating func add(_ request: DataRequest, id: String, keyColumn: String, api: any DataAPI) {
        ids.insert(id)
        guard let table = api.table(of: request) else { return }
        if let key = api.equalValue(of: keyColumn, in: request.path) {
            rows[table, default: [:]][StoreKey.Bytes(key), default: []].append(id)
        } else {
            wholeTables.insert(table)
        }
    }

    /// Whether `request` must wait for a conflict because it may touch a row in conflict: it names
    /// one by key; it is an update, delete or upsert whose filter names no row, on a table with a
    /// conflict; or it is a function call (``DataAPI/callsFunction(_:)``, which may change any
    /// table) while any conflict waits. An insert that names no key makes a new row: it goes.
    func holds(_ request: DataRequest, keyColumn: String, api: any DataAPI) -> Bool {
        guard !isEmpty else { return false }
        guard let table = api.table(of: request) else { return api.callsFunction(request) }
        if wholeTables.contains(table) { return true }
        guard let keys = rows[table], !keys.isEmpty else { return false }
        guard let key = Self.key(of: request, keyColumn: keyColumn, api: api) else {
            let upsert = api.mergesDuplicates(request)
            return request.method.uppercased() != "POST" || upsert
        }
        return keys[StoreKey.Bytes(key)] != nil
    }

    /// The keys of `table`'s rows in conflict.
    func keys(of table: String) -> [StoreKey.Bytes: [String]] { rows[table] ?? [:] }

    /// The row a write names: the key filter of an update or delete, the key field of an inserted
    /// object; `nil` when it names none (or inserts several rows).
    static func key(of request: DataRequest, keyColumn: String, api: any DataAPI) -> String? {
        if let key = api.equalValue(of: keyColumn, in: request.path) { return key }
        guard request.method.uppercased() == "POST", let body = request.body,
            let row = RowJSON.rows("[" + body + "]")?.first
        else { return nil }
        return RowJSON.filterText(row[keyColumn])
    }
}
