import Foundation
import SovariaQueue
import SovariaSync

/// One overlay: the cached rows, the writes applied to them in order, then the read's query.
/// Every doubt becomes a reason, in the order met; an answer without reasons is exact.
struct OverlayEvaluation {
    let query: PostgRESTQuery
    let table: PostgRESTOverlay.Table
    let comparison: PostgRESTComparison
    private let defaults: [String: JSONValue]
    private let sameInEveryRow: [String: JSONValue]

    /// A row as the overlay knows it.
    private struct Row {
        var values: JSONObject
        /// Its place in the cached answer, or `nil` for a row written offline or known from
        /// another answer.
        var cachedIndex: Int?
        /// A row the server has that this read's answer left out (it fails the read's filters or
        /// lies past its page), known from another cached answer of the table.
        var isOutside = false
        /// Removed by a pending delete.
        var isDeleted = false
        /// The order rows came in: the cached answer's, then inserts'.
        var ordinal: Int
        /// Columns that writes set.
        var changed: Set<String> = []
        /// The pending writes that touched it.
        var pendingIDs: [String] = []
        /// An `ignore-duplicates` insert of a key the cache did not hold: the server skips it if
        /// it holds the key.
        var mayBeSkipped = false
        /// A pending DELETE whose filter could not be evaluated on it may have removed it.
        var mayBeDeleted = false
    }

    private var rows: [Row] = []
    /// Where each row is in `rows`, by primary key (``keyText(_:)``): writes by key find their row
    /// without a scan.
    private var positions: [String: Int] = [:]
    private var reasons: [InexactReason] = []
    private var hasCache = false
    private var cachedCount = 0
    /// Whether any write touched, added or removed a row.
    private var changedRows = false
    /// Whether a pending (not yet synced) write did.
    private var changedByPending = false
    /// Whether the rows held (the cached answer's and those other answers add) are every row of
    /// the table the user sees: a row not held does not exist.
    private var holdsEveryRow = false
    /// The last cached row as the server sent it: the edge of a full page.
    private var pageEdge: Row?
    /// The columns of the cached rows, in the server's order (`nil` with no cached row).
    private var cachedColumns: [String]?
    /// Keys of cached rows that pending deletes removed.
    private var deletedKeys: [JSONValue] = []
    private var nextOrdinal = 0
    /// What kind of value the server answers each column with, where known (``learnKinds(from:)``).
    private var serverKinds: [String: ServerKind] = [:]

    /// The table the read reads.
    let readTable: String?

    init(
        query: PostgRESTQuery, readTable: String?, table: PostgRESTOverlay.Table, comparison: PostgRESTComparison
    ) {
        self.query = query
        self.readTable = readTable
        self.table = table
        self.comparison = comparison
        defaults = table.defaults.compactMapValues { try? JSONParser.parse($0) }
        sameInEveryRow = table.sameInEveryRow.compactMapValues { try? JSONParser.parse($0) }
        var declared = JSONObject()
        for (column, value) in defaults.merging(sameInEveryRow, uniquingKeysWith: { first, _ in first }) {
            declared[column] = value
        }
        learnKinds(from: declared)
    }

    mutating func answer(cachedBody: String?, writes: [OverlayWrite], related: [RelatedAnswer]) -> OverlayAnswer {
        for part in query.unsupported { note(.unsupportedReadFeature(part)) }
        guard query.unsupported.isEmpty else { return OverlayAnswer(body: cachedBody, inexactReasons: reasons) }
        if let cachedBody {
            guard case .array(let items)? = try? JSONParser.parse(cachedBody) else {
                note(.cachedAnswerNotRows)
                return OverlayAnswer(body: cachedBody, inexactReasons: reasons)
            }
            for item in items {
                guard case .object(let object) = item else {
                    note(.cachedAnswerNotRows)
                    return OverlayAnswer(body: cachedBody, inexactReasons: reasons)
                }
                add(Row(values: object, cachedIndex: rows.count, ordinal: rows.count))
            }
            hasCache = true
            cachedCount = rows.count
            nextOrdinal = rows.count
            pageEdge = rows.last
            cachedColumns = rows.first?.values.keys
        } else {
            note(.nothingCached)
        }
        holdsEveryRow = holdsWholeTable
        for answer in related { learn(from: answer) }
        for write in writes { apply(write) }
        var answer: OverlayAnswer
        if !changedRows && hasCache {
            answer = OverlayAnswer(body: cachedBody, inexactReasons: reasons)
        } else if !hasCache && !rows.contains(where: { !$0.isOutside && !$0.isDeleted }) {
            answer = OverlayAnswer(body: nil, inexactReasons: reasons)
        } else {
            answer = evaluateRead()
        }
        // Rows other answers hold may settle what this one could not.
        answer.wantsRelatedAnswers = related.isEmpty && !reasons.isEmpty
        return answer
    }

    /// Takes the rows of another cached answer of the table: a row this answer lacks becomes an
    /// outside row, and columns this answer does not select fill in (for the filters of writes).
    /// An answer without filters, offset or a full page holds every row of the table.
    private mutating func learn(from related: RelatedAnswer) {
        guard hasCache, cachedColumns?.contains(table.primaryKey) != false,
            case .array(let items)? = try? JSONParser.parse(related.body)
        else { return }
        let other = PostgRESTQuery(path: related.read.path)
        guard other.unsupported.isEmpty else { return }
        var holdsKeys = true
        for item in items {
            guard case .object(let object) = item, let key = object[table.primaryKey] else {
                holdsKeys = false
                continue
            }
            learnKinds(from: object)
            if let index = position(of: key) {
                for column in object.keys where !rows[index].values.has(column) {
                    rows[index].values[column] = object[column]
                }
            } else {
                var row = Row(values: object, cachedIndex: nil, ordinal: nextOrdinal)
                for (column, value) in sameInEveryRow where !row.values.has(column) { row.values[column] = value }
                row.isOutside = true
                nextOrdinal += 1
                add(row)
            }
        }
        if holdsKeys, other.filters.isEmpty, (other.offset ?? 0) == 0, other.limit.map({ items.count < $0 }) != false {
            holdsEveryRow = true
        }
    }

    // MARK: - Writes

    /// Whether the cached answer holds every row of the table the user sees: no filter, no
    /// offset, and fewer rows than a limit. A key it lacks is then a key the server lacks.
    private var holdsWholeTable: Bool {
        hasCache && query.filters.isEmpty && (query.offset ?? 0) == 0 && query.limit.map { cachedCount < $0 } != false
    }

    private mutating func apply(_ write: OverlayWrite) {
        if let offset = query.offset, offset > 0 {
            note(.readHasOffset)
        }
        let request = write.request
        let method = request.method.uppercased()
        guard request.table == readTable else {
            note(.writeOutsideTable(method: method, path: request.path))
            return
        }
        let writeQuery = PostgRESTQuery(path: request.path)
        if writeQuery.limit != nil || writeQuery.offset != nil || !writeQuery.order.isEmpty {
            note(.writeWithLimitOrOrder(method: method))
            return
        }
        guard writeQuery.unsupported.isEmpty else {
            note(.unsupportedWriteFeature(method: method, features: writeQuery.unsupported))
            return
        }
        let body = request.body.flatMap { try? JSONParser.parse($0) }
        switch method {
        case "POST":
            var objects: [JSONObject] = []
            switch body {
            case .object(let object)?: objects = [object]
            case .array(let items)?:
                objects = items.compactMap { if case .object(let object) = $0 { object } else { nil } }
                if objects.count != items.count { objects = [] }
            default: break
            }
            guard !objects.isEmpty else {
                note(.insertBodyNotObjects)
                return
            }
            if Set(objects.map { Set($0.keys) }).count > 1 {
                note(.bulkInsertColumnsDiffer)
            }
            for object in objects {
                insert(typed(object), resolution: Self.resolution(of: request), by: write)
            }
        case "PATCH":
            guard case .object(let changes)? = body else {
                note(.updateBodyNotObject)
                return
            }
            patch(where: writeQuery.filters, with: typed(changes), by: write)
        case "DELETE":
            delete(where: writeQuery.filters, by: write)
        default:
            note(.methodNotEvaluated(method))
        }
    }

    private enum Resolution { case none, mergeDuplicates, ignoreDuplicates }

    private static func resolution(of request: DataRequest) -> Resolution {
        let prefer = request.headers.first { $0.key.lowercased() == "prefer" }?.value ?? ""
        let tokens = prefer.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if tokens.contains("resolution=merge-duplicates") { return .mergeDuplicates }
        if tokens.contains("resolution=ignore-duplicates") { return .ignoreDuplicates }
        return .none
    }

    private mutating func insert(_ typed: TypedChanges, resolution: Resolution, by write: OverlayWrite) {
        let object = typed.values
        let key = object[table.primaryKey]
        if resolution != .none, cachedCount > 0, cachedColumns?.contains(table.primaryKey) == false {
            note(.upsertTargetUnknown(primaryKey: table.primaryKey))
        }
        if let key, let index = position(of: key) {
            switch resolution {
            case .mergeDuplicates: merge(typed, into: index, by: write)
            case .ignoreDuplicates: break
            case .none: note(.insertKeyTaken(primaryKey: table.primaryKey, key: key.text))
            }
            return
        }
        if key == nil { note(.insertWithoutKey(primaryKey: table.primaryKey)) }
        var row = Row(values: object, cachedIndex: nil, ordinal: nextOrdinal, changed: Set(object.keys))
        nextOrdinal += 1
        if write.isPending { row.pendingIDs = [write.id] }
        switch holdsEveryRow ? .none : resolution {
        case .none:
            // A new row: the table's defaults fill what it does not set. (A key the server holds
            // outside the cache is refused, and the write leaves the answer when it is.)
            for (column, value) in defaults where !row.values.has(column) { row.values[column] = value }
        case .mergeDuplicates:
            // The server may hold the key outside the cache: columns the upsert does not set are
            // then the server's, so they stay unknown (but for those the same in every row).
            for (column, value) in sameInEveryRow where !row.values.has(column) { row.values[column] = value }
        case .ignoreDuplicates:
            row.mayBeSkipped = true
        }
        for column in typed.unsure { row.values[column] = nil }
        add(row)
        changedRows = true
        if write.isPending { changedByPending = true }
    }

    private mutating func merge(_ typed: TypedChanges, into index: Int, by write: OverlayWrite) {
        let changes = typed.values
        let oldKey = rows[index].values[table.primaryKey]
        for column in changes.keys {
            rows[index].values[column] = changes[column]
            rows[index].changed.insert(column)
        }
        if let newKey = changes[table.primaryKey], let oldKey, !newKey.isEquivalent(to: oldKey) {
            // The row moves to a new key: writes after this one find it there.
            positions[Self.keyText(oldKey)] = nil
            if positions[Self.keyText(newKey)] != nil {
                note(.keyTakenByAnotherRow)
            }
            positions[Self.keyText(newKey)] = index
        }
        if write.isPending, rows[index].pendingIDs.last != write.id { rows[index].pendingIDs.append(write.id) }
        forget(typed.unsure, in: index)
        changedRows = true
        if write.isPending { changedByPending = true }
    }

    /// After a write whose filter could not be evaluated on a row: the columns it sets are no
    /// longer known there, so later filters and the read cannot take the old values for sure.
    private mutating func forget(_ columns: [String], in index: Int) {
        for column in columns {
            rows[index].values[column] = nil
            rows[index].changed.insert(column)
        }
        changedRows = true
    }

    private mutating func patch(
        where filters: [PostgRESTQuery.Condition], with typed: TypedChanges, by write: OverlayWrite
    ) {
        let changes = typed.values
        // A change to columns the read neither shows, filters nor orders on cannot change it.
        let visible = query.columns.map { Set($0).union(query.filterColumns).union(query.orderColumns) }
        let isVisible = visible.map { !$0.isDisjoint(with: changes.keys) } ?? true
        // Rows the answer left out do not match the read (or lie past a full page): setting a
        // column the read filters (or orders) on could bring them in.
        var entering = query.filterColumns
        if let limit = query.limit, cachedCount >= limit { entering.formUnion(query.orderColumns) }
        let mayEnter = !entering.isDisjoint(with: changes.keys)
        for index in candidates(for: filters) {
            switch truth(of: filters, on: rows[index]) {
            case .yes: merge(typed, into: index, by: write)
            case .unknown where isVisible && (!rows[index].isOutside || mayEnter):
                note(.updateFilterUnknown)
                forget(changes.keys, in: index)
            case .unknown: forget(changes.keys, in: index)
            case .no, .null: break
            }
        }
        guard isVisible, !holdsEveryRow, !reachesOnlyKnownRows(filters) else { return }
        let moved = entering.intersection(changes.keys).sorted()
        if !moved.isEmpty {
            note(.updateMayBringRowsIn(columns: moved))
        }
    }

    private mutating func delete(where filters: [PostgRESTQuery.Condition], by write: OverlayWrite) {
        for index in candidates(for: filters) {
            let row = rows[index]
            switch truth(of: filters, on: row) {
            case .yes:
                changedRows = true
                if write.isPending { changedByPending = true }
                rows[index].isDeleted = true
                if let key = row.values[table.primaryKey] {
                    deletedKeys.append(key)
                    positions[Self.keyText(key)] = nil
                }
            case .unknown where !row.isOutside || query.limit.map({ cachedCount >= $0 }) == true:
                // (An outside row matters only as one that could fill a full page.)
                note(.deleteFilterUnknown)
                rows[index].mayBeDeleted = true
            case .unknown: rows[index].mayBeDeleted = true
            case .no, .null: break
            }
        }
    }

    /// The rows `filters` can match: those a key filter names, when every row has its key;
    /// otherwise every row not deleted.
    private func candidates(for filters: [PostgRESTQuery.Condition]) -> [Int] {
        if cachedColumns?.contains(table.primaryKey) != false, !table.nonTextColumns.contains(table.primaryKey),
            let (_, keys) = keyFilter(in: filters)
        {
            let found = keys.map(positions(ofOperand:))
            // An operand whose rows are not sure (`1e0`): every row is a candidate, and its
            // filter's truth says which are unknown.
            if found.allSatisfy({ $0 != nil }) {
                return Set(found.flatMap { $0 ?? [] }).sorted().filter { !rows[$0].isDeleted }
            }
        }
        return rows.indices.filter { !rows[$0].isDeleted }
    }

    /// The rows whose key a filter operand names: as text, or as a whole number however spelled
    /// (`01` is 1, as PostgreSQL reads it); `nil` when that is not sure: a number with a fraction
    /// or an exponent, which an integer key refuses and a `numeric` one reads as a number.
    private func positions(ofOperand operand: String) -> [Int]? {
        var found: [Int] = []
        if let index = positions["s:" + operand] { found.append(index) }
        if let number = PostgRESTComparison.decimal(operand) {
            guard PostgRESTComparison.isWholeNumber(operand) else { return nil }
            if let index = positions["n:" + number.description] { found.append(index) }
        }
        return found
    }

    private mutating func add(_ row: Row) {
        if let key = row.values[table.primaryKey] { positions[Self.keyText(key)] = rows.count }
        if row.cachedIndex != nil || row.isOutside { learnKinds(from: row.values) }
        rows.append(row)
    }

    // MARK: - Column types

    /// The kind of JSON value the server answers a column with, where a row it sent (or a
    /// default) shows one.
    private enum ServerKind { case number, boolean, string }

    /// Learns the kinds of the columns in `values`, a row the server sent or a declared value.
    private mutating func learnKinds(from values: JSONObject) {
        for column in values.keys where serverKinds[column] == nil {
            switch values[column] {
            case .number?: serverKinds[column] = .number
            case .bool?: serverKinds[column] = .boolean
            case .string?: serverKinds[column] = .string
            default: break
            }
        }
    }

    /// A write's values, read as the server will store them, and the columns whose stored value
    /// is not sure.
    struct TypedChanges {
        var values: JSONObject
        var unsure: [String] = []
    }

    /// `object`'s strings in columns the server answers with numbers or booleans, read as
    /// PostgreSQL reads them (`"10"` is 10, `" 007"` is 7, `"true"` and `"t"` are true); a string
    /// it might read otherwise or refuse (`"1.5"` in a column that may be an integer one, `"ten"`),
    /// or one that reads as a number or a boolean in a column no row shows, leaves the column
    /// unsure, and the answer inexact.
    private mutating func typed(_ object: JSONObject) -> TypedChanges {
        var typed = TypedChanges(values: object)
        for column in object.keys where !table.nonTextColumns.contains(column) {
            guard case .string(let text)? = object[column] else { continue }
            switch serverKinds[column] {
            case .string?: continue
            case nil:
                // No row says what the column holds: a string that reads as a number or a boolean
                // is that in a column of that type, and text in a text column.
                guard PostgRESTComparison.decimal(text) != nil || PostgRESTComparison.boolean(text) != nil else {
                    continue
                }
            case .number?:
                if PostgRESTComparison.isWholeNumber(text), let number = PostgRESTComparison.decimal(text) {
                    typed.values[column] = .number(number.description)
                    continue
                }
            case .boolean?:
                if let flag = PostgRESTComparison.boolean(text) {
                    typed.values[column] = .bool(flag)
                    continue
                }
            }
            typed.unsure.append(column)
            note(.stringInTypedColumn(column))
        }
        return typed
    }

    private func position(of key: JSONValue) -> Int? {
        positions[Self.keyText(key)].flatMap { rows[$0].isDeleted ? nil : $0 }
    }

    /// A key as a dictionary key: text and numbers (by value) apart.
    private static func keyText(_ key: JSONValue) -> String {
        switch key {
        case .string(let text): "s:" + text
        case .number: "n:" + (key.numericValue?.description ?? key.text)
        default: "o:" + key.text
        }
    }

    /// The first filter that selects rows by primary key (`eq` or `in`, not negated), and the
    /// key operands it names.
    private func keyFilter(
        in filters: [PostgRESTQuery.Condition]
    ) -> (filter: PostgRESTQuery.Condition, keys: [String])? {
        guard
            let byKey = filters.first(where: {
                $0.column == table.primaryKey && !$0.negated && ($0.op == .eq || $0.op == .in)
            })
        else { return nil }
        return (byKey, byKey.op == .eq ? [byKey.operand] : (byKey.listItems ?? []))
    }

    /// Whether `filters` select rows by primary key, all of which the overlay holds (or deleted).
    private func reachesOnlyKnownRows(_ filters: [PostgRESTQuery.Condition]) -> Bool {
        guard let (byKey, keys) = keyFilter(in: filters) else { return false }
        return keys.allSatisfy { operand in
            positions(ofOperand: operand).map { !$0.isEmpty } == true
                || deletedKeys.contains { comparison.evaluate(byKey.with(operand: operand), on: $0) == .yes }
        }
    }

    // MARK: - The read

    private mutating func evaluateRead() -> OverlayAnswer {
        var result: [Row] = []
        /// Whether a row past the cached page, held without a column the read filters on, may match.
        var mayFillPage = false
        for row in rows where !row.isDeleted {
            // A cached row no write touched passed the server's own filters.
            if row.cachedIndex != nil, row.changed.isEmpty, !row.mayBeDeleted {
                result.append(row)
                continue
            }
            if row.isOutside, row.changed.isEmpty, !row.mayBeDeleted {
                // Left out by the server and untouched: it fails the filters, or lies past a
                // full page, where it may now fill a gap. One another answer holds without a
                // column the read filters on may or may not match: it may fill the gap.
                if let limit = query.limit, cachedCount >= limit {
                    switch truth(of: query.filters, on: row) {
                    case .yes: result.append(row)
                    case .unknown: mayFillPage = true
                    case .no, .null: break
                    }
                }
                continue
            }
            switch truth(of: query.filters, on: row) {
            case .yes where row.mayBeDeleted, .unknown where row.mayBeDeleted:
                note(.rowMayBeDeleted)
                result.append(row)
            case .yes:
                if row.mayBeSkipped {
                    note(.insertMayBeSkipped)
                }
                result.append(row)
            case .unknown:
                note(.filterOnWrittenRowUnknown)
                result.append(row)
            case .no, .null: break
            }
        }
        order(&result)
        applyPage(to: &result, mayFillPage: mayFillPage)
        return OverlayAnswer(
            body: project(result), inexactReasons: reasons,
            pendingRows: result.filter { !$0.pendingIDs.isEmpty }.map {
                PendingRow(key: $0.values[table.primaryKey]?.text, writeIDs: $0.pendingIDs)
            }, changedByPendingWrites: changedByPending)
    }

    /// Sorts by the read's `order` when a write may have moved a row; cached rows otherwise
    /// keep the server's order.
    private mutating func order(_ result: inout [Row]) {
        let orderColumns = query.orderColumns
        let moved = result.contains { $0.cachedIndex == nil || !$0.changed.isDisjoint(with: orderColumns) }
        guard !query.order.isEmpty, moved else { return }
        var unknown = false
        result.sort { a, b in
            switch compareByOrder(a, b) {
            case .orderedAscending?: return true
            case .orderedDescending?: return false
            case .orderedSame?: return a.ordinal < b.ordinal
            case nil:
                unknown = true
                return a.ordinal < b.ordinal
            }
        }
        if unknown {
            note(.orderUnknown)
        }
    }

    /// `a` against `b` by the read's order terms; `nil` when a value is missing or not comparable.
    private func compareByOrder(_ a: Row, _ b: Row) -> ComparisonResult? {
        for term in query.order {
            guard let left = a.values[term.column], let right = b.values[term.column] else { return nil }
            let order: ComparisonResult
            switch (left, right) {
            case (.null, .null): continue
            case (.null, _): order = term.nullsFirst ? .orderedAscending : .orderedDescending
            case (_, .null): order = term.nullsFirst ? .orderedDescending : .orderedAscending
            default:
                if comparison.nonTextColumns.contains(term.column), case .string = left, !left.isEquivalent(to: right) {
                    return nil  // a timestamp's or an enum's order is not its text's
                }
                guard let compared = comparison.compare(left, right) else { return nil }
                if compared == .orderedSame { continue }
                order =
                    term.descending
                    ? (compared == .orderedAscending ? .orderedDescending : .orderedAscending) : compared
            }
            return order
        }
        return .orderedSame
    }

    /// `limit` and `offset`: the cached rows were one page; a page that was full and lost rows
    /// may take rows past it that the cache never saw.
    private mutating func applyPage(to result: inout [Row], mayFillPage: Bool) {
        guard let limit = query.limit else { return }
        if query.order.isEmpty, rows.count > limit || cachedCount >= limit {
            note(.limitWithoutOrder)
        } else if hasCache, cachedCount >= limit, !holdsEveryRow || mayFillPage {
            if let edge = pageEdge {
                let within = result.filter { row in
                    if row.cachedIndex != nil, row.changed.isDisjoint(with: query.orderColumns) { return true }
                    guard let order = compareByOrder(row, edge) else { return false }
                    return order != .orderedDescending
                }
                if within.count < limit {
                    note(.pageMayTakeRowsPastIt(limit: limit))
                }
            }
        }
        if result.count > limit { result.removeLast(result.count - limit) }
    }

    /// The rows as the read's `select` shows them, as JSON text.
    private mutating func project(_ result: [Row]) -> String {
        let columns: [String]
        if let selected = query.columns {
            columns = selected
        } else if let cachedColumns {
            columns = cachedColumns
        } else if let all = table.columns {
            columns = all
        } else {
            note(.columnsUnknown)
            var seen: [String] = []
            for row in result { for key in row.values.keys where !seen.contains(key) { seen.append(key) } }
            columns = seen
        }
        var missing: [String] = []
        var out: [JSONValue] = []
        out.reserveCapacity(result.count)
        for row in result {
            var object = JSONObject()
            for column in columns {
                if let value = row.values[column] {
                    object[column] = value
                } else if !missing.contains(column) {
                    missing.append(column)
                }
            }
            out.append(.object(object))
        }
        if !missing.isEmpty {
            note(.columnsNotSet(missing))
        }
        return JSONValue.array(out).text
    }

    // MARK: - Filters

    /// The AND of `filters` on `row`.
    private func truth(of filters: [PostgRESTQuery.Condition], on row: Row) -> Truth {
        var result = Truth.yes
        for filter in filters {
            switch truth(of: filter, on: row) {
            case .no, .null: return .no
            case .unknown: result = .unknown
            case .yes: break
            }
        }
        return result
    }

    private func truth(of filter: PostgRESTQuery.Condition, on row: Row) -> Truth {
        if let value = row.values[filter.column] { return comparison.evaluate(filter, on: value) }
        // A column the answer does not select: a cached row, unchanged in it, passed the same
        // filter of the read on the server.
        if row.cachedIndex != nil, !row.changed.contains(filter.column),
            query.filters.contains(where: { $0.column == filter.column && $0.condition == filter.condition })
        {
            return .yes
        }
        return .unknown
    }

    private mutating func note(_ reason: InexactReason) {
        if !reasons.contains(reason) { reasons.append(reason) }
    }
}
