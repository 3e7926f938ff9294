import SovariaQueue
import SovariaSync

/// What the cached answers of one table can be reached by, kept between a change feed's pages:
/// for each answer (by its id, at one version) the keys of the rows it holds and its read's
/// first `eq` filter, indexed both ways, so a page finds the answers a change can alter without
/// meeting every answer: a lookup of the change's key, and a filter evaluation for each answer
/// whose `eq` its new value passes (and each with none).
///
/// An answer is added when it is first met or met at a new version, and removed when it is gone
/// from the table's answers or replaced; nothing is rebuilt for the answers that stayed.
struct TableReach {
    /// What one answer can be reached by.
    struct Entry {
        /// The answer's version when it was parsed (`nil`: none, never taken as known).
        var version: UInt64?
        /// The parsed answer, or `nil` when every change counts for it (it cannot tell what it
        /// holds: not rows, a page past an offset, rows without their key, a settled read).
        var parsed: OverlayCachedAnswer?
        /// The UTF-8 bytes of the body it was parsed from.
        var bytes: Int
        /// Its place among the answers of the call that met it last.
        var slot = 0
    }

    private(set) var entries: [String: Entry] = [:]
    /// Primary key column → key text → the answers holding that row.
    private var holders: [String: [String: Set<String>]] = [:]
    private var filters = EqualityIndex()
    /// The answers every change counts for.
    private var everyChange: Set<String> = []
    /// The body bytes of the entries kept.
    private(set) var bytes = 0

    /// Whether `id` is known at `version`; if so, its entry takes `slot` (one lookup).
    mutating func meet(_ id: String, at version: UInt64?, slot: Int) -> Bool {
        guard let version, let index = entries.index(forKey: id), entries.values[index].version == version else {
            return false
        }
        entries.values[index].slot = slot
        return true
    }

    /// Keeps `entry` as `id`'s, replacing what it had.
    mutating func set(_ id: String, _ entry: Entry) {
        if let old = entries[id], let was = old.parsed, let parsed = entry.parsed,
            was.table.primaryKey == parsed.table.primaryKey, was.query.filters == parsed.query.filters,
            was.comparison.nonTextColumns == parsed.comparison.nonTextColumns
        {
            // A new version of the same read: its filter stays indexed; only the rows it holds move.
            let primaryKey = parsed.table.primaryKey
            for key in was.positions.keys where parsed.positions[key] == nil {
                holders[primaryKey]?[key]?.remove(id)
                if holders[primaryKey]?[key]?.isEmpty == true { holders[primaryKey]?[key] = nil }
            }
            for key in parsed.positions.keys where was.positions[key] == nil {
                holders[primaryKey, default: [:]][key, default: []].insert(id)
            }
            entries[id] = entry
            bytes += entry.bytes - old.bytes
            return
        }
        remove(id)
        entries[id] = entry
        bytes += entry.bytes
        guard let parsed = entry.parsed else {
            everyChange.insert(id)
            return
        }
        for key in parsed.positions.keys {
            holders[parsed.table.primaryKey, default: [:]][key, default: []].insert(id)
        }
        filters.add(id, filters: parsed.query.filters, nonTextColumns: parsed.comparison.nonTextColumns)
    }

    /// Forgets `id`.
    mutating func remove(_ id: String) {
        guard let entry = entries.removeValue(forKey: id) else { return }
        bytes -= entry.bytes
        guard let parsed = entry.parsed else {
            everyChange.remove(id)
            return
        }
        let primaryKey = parsed.table.primaryKey
        for key in parsed.positions.keys {
            holders[primaryKey]?[key]?.remove(id)
            if holders[primaryKey]?[key]?.isEmpty == true { holders[primaryKey]?[key] = nil }
        }
        filters.remove(id, filters: parsed.query.filters, nonTextColumns: parsed.comparison.nonTextColumns)
    }

    /// The answers `change` can alter, among those kept: every-change answers, holders of its
    /// key, and answers it does not hold whose read its new row may match (`row`, parsed once by
    /// the caller; `nil` for a delete or a row that cannot be read).
    func answers(alteredBy change: RowChange, row: JSONObject?) -> Set<String> {
        var altered = everyChange
        guard let row else {
            if change.operation != .delete {
                // An upsert whose row cannot be read counts for every answer.
                return altered.union(entries.keys)
            }
            // A delete alters the answers that hold its key.
            for (_, byKey) in holders {
                for key in Self.keyTexts(of: change.key) { altered.formUnion(byKey[key] ?? []) }
            }
            return altered
        }
        for (primaryKey, byKey) in holders {
            if let key = row[primaryKey] { altered.formUnion(byKey[OverlayRows.keyText(key)] ?? []) }
        }
        // Not held: an upsert alters an answer only if its row matches the read (a filter the
        // overlay cannot decide counts); the equality filters pass over the answers it cannot.
        let asRow = OverlayRows.Row(values: row, cachedIndex: nil, ordinal: 0)
        for id in filters.candidates(for: row) where !altered.contains(id) {
            switch entries[id]?.parsed?.readTruth(on: asRow) {
            case .no?, .null?: break
            case .yes?, .unknown?, nil: altered.insert(id)
            }
        }
        return altered
    }

    /// The ways a key given as text can be held: as a string, and as a number when it reads as one
    /// (`7` may be a text key or an integer one).
    private static func keyTexts(of key: String) -> [String] {
        var texts = [OverlayRows.keyText(.string(key))]
        if Double(key) != nil { texts.append(OverlayRows.keyText(.number(key))) }
        return texts
    }
}

/// Cached answers grouped by one `eq` filter each (`qty=eq.5`), so a changed row is checked only
/// against the answers whose filter its value can pass: the other answers' reads cannot match it.
/// A filter is indexed only where the overlay's own comparison is equality of text (a string in
/// a text column) or of integers (a plain integer against an integer literal); every other value
/// of the column makes each answer indexed on it a candidate, as do answers with no such filter.
struct EqualityIndex {
    /// Column → operand → the answers filtered by `column=eq.operand`.
    private var byText: [String: [String: Set<String>]] = [:]
    /// Column → the operand read as an integer → those answers.
    private var byInteger: [String: [Int64: Set<String>]] = [:]
    /// Column → the answers whose operand is no integer literal (a number may still equal it).
    private var notInteger: [String: Set<String>] = [:]
    /// Column → every answer indexed on it.
    private var everyAnswer: [String: Set<String>] = [:]
    /// Column → how many of its answers name it among the comparison's `nonTextColumns` (string
    /// columns that are not text: their strings are not compared as text).
    private var nonText: [String: Int] = [:]
    /// The answers with no filter indexed: every row is checked against them.
    private var unindexed: Set<String> = []

    /// The filter `filters` are indexed by: the first plain `eq`.
    private static func indexed(_ filters: [PostgRESTQuery.Condition]) -> PostgRESTQuery.Condition? {
        filters.first { $0.op == .eq && !$0.negated && $0.quantifier == nil }
    }

    /// Indexes `answer` by the first of its `filters` that is a plain `eq`.
    mutating func add(_ answer: String, filters: [PostgRESTQuery.Condition], nonTextColumns: Set<String>) {
        guard let filter = Self.indexed(filters) else {
            unindexed.insert(answer)
            return
        }
        let column = filter.column
        byText[column, default: [:]][filter.operand, default: []].insert(answer)
        if let integer = NumericLiteral(filter.operand)?.integer {
            byInteger[column, default: [:]][integer, default: []].insert(answer)
        } else {
            notInteger[column, default: []].insert(answer)
        }
        everyAnswer[column, default: []].insert(answer)
        if nonTextColumns.contains(column) { nonText[column, default: 0] += 1 }
    }

    /// Takes out `answer`, added with the same `filters` and `nonTextColumns`.
    mutating func remove(_ answer: String, filters: [PostgRESTQuery.Condition], nonTextColumns: Set<String>) {
        guard let filter = Self.indexed(filters) else {
            unindexed.remove(answer)
            return
        }
        let column = filter.column
        byText[column]?[filter.operand]?.remove(answer)
        if byText[column]?[filter.operand]?.isEmpty == true { byText[column]?[filter.operand] = nil }
        if let integer = NumericLiteral(filter.operand)?.integer {
            byInteger[column]?[integer]?.remove(answer)
            if byInteger[column]?[integer]?.isEmpty == true { byInteger[column]?[integer] = nil }
        } else {
            notInteger[column]?.remove(answer)
        }
        everyAnswer[column]?.remove(answer)
        if everyAnswer[column]?.isEmpty == true {
            (byText[column], byInteger[column], notInteger[column], everyAnswer[column]) = (nil, nil, nil, nil)
        }
        if nonTextColumns.contains(column) {
            nonText[column, default: 0] -= 1
            if nonText[column] == 0 { nonText[column] = nil }
        }
    }

    /// The answers `row` may match: those whose indexed filter its value can pass, and the
    /// unindexed ones.
    func candidates(for row: JSONObject) -> Set<String> {
        var found = unindexed
        for (column, answers) in everyAnswer {
            switch row[column] {
            case .string(let text)? where nonText[column] == nil:
                found.formUnion(byText[column]?[text] ?? [])
            case .number(let text)?:
                guard let integer = PostgRESTComparison.plainInteger(text) else {
                    found.formUnion(answers)
                    continue
                }
                found.formUnion(byInteger[column]?[integer] ?? [])
                found.formUnion(notInteger[column] ?? [])
            default:
                found.formUnion(answers)
            }
        }
        return found
    }
}
