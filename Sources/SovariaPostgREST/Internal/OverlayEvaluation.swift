import Foundation
import SovariaQueue
import SovariaSync

/// One overlay: the cached rows, the writes applied to them in order, then the read's query.
/// Every doubt becomes a reason, in the order met; an answer without reasons is exact.
struct OverlayEvaluation {
    let query: PostgRESTQuery
    let table: PostgRESTOverlay.Table
    let comparison: PostgRESTComparison
    let defaults: [String: JSONValue]
    let sameInEveryRow: [String: JSONValue]

    /// A row as the overlay knows it.
    struct Row {
        var values: JSONObject
        /// Its place in the cached answer, or `nil` for a row written offline or known from
        /// another answer.
        var cachedIndex: Int?
        /// A row the server has that this read's answer left out (it fails the read's filters or
        /// lies past its page), known from another cached answer of the table.
        var isOutside = false
        /// Removed by a pending delete.
        var isDeleted = false
        /// The order rows came in: the cached answer's, then inserts'; also its index in `rows`.
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
        /// Where the row's text lies in the cached body, for a cached row whose text says exactly
        /// its values (no repeated key): an untouched row is written as that text.
        var cachedRange: Range<Int>?
    }

    var rows: [Row] = []
    /// Where each row is in `rows`, by primary key (``keyText(_:)``): writes by key find their row
    /// without a scan.
    var positions: [String: Int] = [:]
    var reasons: [InexactReason] = []
    var hasCache = false
    var cachedCount = 0
    /// Whether any write touched, added or removed a row.
    var changedRows = false
    /// Whether a pending (not yet synced) write did.
    var changedByPending = false
    /// Whether the rows held (the cached answer's and those other answers add) are every row of
    /// the table the user sees: a row not held does not exist.
    var holdsEveryRow = false
    /// The last cached row as the server sent it: the edge of a full page.
    var pageEdge: Row?
    /// The columns of the cached rows, in the server's order (`nil` with no cached row).
    var cachedColumns: [String]?
    /// Keys of cached rows that pending deletes removed.
    var deletedKeys: [JSONValue] = []
    var nextOrdinal = 0
    /// What kind of value the server answers each column with, where known (``learnKinds(from:)``).
    var serverKinds: [String: ServerKind] = [:]
    /// The last columns seen of which every one has a kind in ``serverKinds``.
    var columnsWithKinds: [String] = []
    /// For each of the read's order terms, whether its column's order is not its text's.
    let orderIsNotText: [Bool]

    /// The table the read reads.
    let readTable: String?
    /// The server's cached answer, as it came.
    var cachedBody: String?
    /// Whether the evaluation had no related answers (it may want them).
    var relatedAreEmpty = true
    /// Whether the cached rows are in the read's order by ``compareByOrder(_:_:)``, every row
    /// holding every order column with one kind of value per column: rows a write moves can then
    /// be merged into them instead of sorting every row.
    var cachedRowsFollowOrder = false
    /// The rows writes touched, added or removed since this was last emptied (by index, in the
    /// order met, repeats kept): what an answer derived from the last one re-evaluates.
    var touched: [Int] = []
    /// Whether rows a write moved are merged into the cached order (when it allows) rather than
    /// every row sorted; tests turn it off to compare both.
    var mergesMovedRows = true
    /// The kind of value each order column holds in the cached rows, where one is not `null`.
    var orderKinds: [String: OrderKind] = [:]
    /// The columns the read orders by.
    let orderColumns: Set<String>
    /// The adapter that names the table of each write.
    let api: PostgREST
    /// The columns the read filters on.
    let filterColumns: Set<String>

    /// A kind of value whose values always compare with each other.
    enum OrderKind { case number, boolean, string }

    init(
        query: PostgRESTQuery, api: PostgREST, readTable: String?, table: PostgRESTOverlay.Table,
        comparison: PostgRESTComparison
    ) {
        self.query = query
        self.api = api
        self.readTable = readTable
        self.table = table
        self.comparison = comparison
        orderColumns = query.orderColumns
        filterColumns = query.filterColumns
        orderIsNotText = query.order.map { comparison.nonTextColumns.contains($0.column) }
        defaults = table.defaults.compactMapValues { try? JSONParser.parse($0) }
        sameInEveryRow = table.sameInEveryRow.compactMapValues { try? JSONParser.parse($0) }
        var declared = JSONObject()
        for (column, value) in defaults.merging(sameInEveryRow, uniquingKeysWith: { first, _ in first }) {
            declared[column] = value
        }
        learnKinds(from: declared)
    }

    /// The whole evaluation: ``load(cachedBody:related:)``, every write, ``answered()``.
    mutating func answer(cachedBody: String?, writes: [OverlayWrite], related: [RelatedAnswer]) -> OverlayAnswer {
        if let early = load(cachedBody: cachedBody, related: related) { return early }
        for write in writes { apply(write) }
        return answered()
    }

    /// Reads the cached answer and the related ones: the state writes apply to. Returns the
    /// answer when it is settled before any write (the read uses a feature the overlay does not
    /// evaluate, or the cached answer is not rows).
    mutating func load(cachedBody: String?, related: [RelatedAnswer]) -> OverlayAnswer? {
        self.cachedBody = cachedBody
        relatedAreEmpty = related.isEmpty
        for part in query.unsupported { note(.unsupportedReadFeature(part)) }
        guard query.unsupported.isEmpty else { return OverlayAnswer(body: cachedBody, inexactReasons: reasons) }
        if let cachedBody {
            guard let elements = try? JSONParser.elements(of: cachedBody) else {
                note(.cachedAnswerNotRows)
                return OverlayAnswer(body: cachedBody, inexactReasons: reasons)
            }
            for element in elements {
                guard case .object(let object) = element.value else {
                    note(.cachedAnswerNotRows)
                    return OverlayAnswer(body: cachedBody, inexactReasons: reasons)
                }
                var row = Row(values: object, cachedIndex: rows.count, ordinal: rows.count)
                if !element.repeatsKeys { row.cachedRange = element.range }
                add(row)
            }
            hasCache = true
            cachedCount = rows.count
            nextOrdinal = rows.count
            pageEdge = rows.last
            cachedColumns = rows.first?.values.keys
            if let kinds = cachedOrderKinds() {
                cachedRowsFollowOrder = true
                orderKinds = kinds
            }
        } else {
            note(.nothingCached)
        }
        holdsEveryRow = holdsWholeTable
        for answer in related { learn(from: answer) }
        touched = []
        return nil
    }

    /// The answer of the state the writes applied so far left; the state itself does not change,
    /// so more writes can follow.
    func answered() -> OverlayAnswer { answeredShowing().answer }

    /// ``answered()``, and the rows it shows when a later answer can be derived from them
    /// (``ShownRows``).
    func answeredShowing() -> (answer: OverlayAnswer, shown: ShownRows?) {
        var evaluation = self
        var answer: OverlayAnswer
        var shown: ShownRows?
        if !evaluation.changedRows && evaluation.hasCache {
            answer = OverlayAnswer(body: cachedBody, inexactReasons: evaluation.reasons)
        } else if !evaluation.hasCache && !evaluation.rows.contains(where: { !$0.isOutside && !$0.isDeleted }) {
            answer = OverlayAnswer(body: nil, inexactReasons: evaluation.reasons)
        } else {
            (answer, shown) = evaluation.evaluateRead()
        }
        // Rows other answers hold may settle what this one could not.
        answer.wantsRelatedAnswers = relatedAreEmpty && !evaluation.reasons.isEmpty
        return (answer, shown)
    }

    /// Takes the rows of another cached answer of the table: a row this answer lacks becomes an
    /// outside row, and columns this answer does not select fill in (for the filters of writes).
    /// An answer without filters, offset or a full page holds every row of the table.
    mutating func learn(from related: RelatedAnswer) {
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
    var holdsWholeTable: Bool {
        hasCache && query.filters.isEmpty && (query.offset ?? 0) == 0 && query.limit.map { cachedCount < $0 } != false
    }

    mutating func apply(_ write: OverlayWrite) {
        if let offset = query.offset, offset > 0 {
            note(.readHasOffset)
        }
        let request = write.request
        let method = request.method.uppercased()
        guard api.table(of: request) == readTable else {
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
            if objects.count > 1, Set(objects.map { Set($0.keys) }).count > 1 {
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

    enum Resolution { case none, mergeDuplicates, ignoreDuplicates }

    static func resolution(of request: DataRequest) -> Resolution {
        guard let prefer = request.header("Prefer"), prefer.contains("resolution=") else { return .none }
        let tokens = prefer.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if tokens.contains("resolution=merge-duplicates") { return .mergeDuplicates }
        if tokens.contains("resolution=ignore-duplicates") { return .ignoreDuplicates }
        return .none
    }

    mutating func insert(_ typed: TypedChanges, resolution: Resolution, by write: OverlayWrite) {
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

    mutating func merge(_ typed: TypedChanges, into index: Int, by write: OverlayWrite) {
        touched.append(index)
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
    mutating func forget(_ columns: [String], in index: Int) {
        touched.append(index)
        for column in columns {
            rows[index].values[column] = nil
            rows[index].changed.insert(column)
        }
        changedRows = true
    }

    mutating func patch(
        where filters: [PostgRESTQuery.Condition], with typed: TypedChanges, by write: OverlayWrite
    ) {
        let changes = typed.values
        // A change to columns the read neither shows, filters nor orders on cannot change it.
        let visible = query.columns.map { Set($0).union(filterColumns).union(orderColumns) }
        let isVisible = visible.map { !$0.isDisjoint(with: changes.keys) } ?? true
        // Rows the answer left out do not match the read (or lie past a full page): setting a
        // column the read filters (or orders) on could bring them in.
        var entering = filterColumns
        if let limit = query.limit, cachedCount >= limit { entering.formUnion(orderColumns) }
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

    mutating func delete(where filters: [PostgRESTQuery.Condition], by write: OverlayWrite) {
        for index in candidates(for: filters) {
            let row = rows[index]
            switch truth(of: filters, on: row) {
            case .yes:
                touched.append(index)
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
                touched.append(index)
            case .unknown:
                rows[index].mayBeDeleted = true
                touched.append(index)
            case .no, .null: break
            }
        }
    }

    /// The rows `filters` can match: those a key filter names, when every row has its key;
    /// otherwise every row not deleted.
    func candidates(for filters: [PostgRESTQuery.Condition]) -> [Int] {
        if cachedColumns?.contains(table.primaryKey) != false, !table.nonTextColumns.contains(table.primaryKey),
            let (_, keys) = keyFilter(in: filters)
        {
            let found = keys.map(positions(ofOperand:))
            if found.count == 1, let only = found[0], only.count <= 1 {
                return only.filter { !rows[$0].isDeleted }  // one key: no set to build
            }
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
    func positions(ofOperand operand: String) -> [Int]? {
        var found: [Int] = []
        if let index = positions["s:" + operand] { found.append(index) }
        if let number = PostgRESTComparison.decimal(operand) {
            guard PostgRESTComparison.isWholeNumber(operand) else { return nil }
            if let index = positions["n:" + number.description] { found.append(index) }
        }
        return found
    }

    mutating func add(_ row: Row) {
        assert(row.ordinal == rows.count, "a row's ordinal is its index")
        touched.append(rows.count)
        if let key = row.values[table.primaryKey] { positions[Self.keyText(key)] = rows.count }
        if row.cachedIndex != nil || row.isOutside { learnKinds(from: row.values) }
        rows.append(row)
    }

    func position(of key: JSONValue) -> Int? {
        positions[Self.keyText(key)].flatMap { rows[$0].isDeleted ? nil : $0 }
    }

    /// A key as a dictionary key: text and numbers (by value) apart.
    static func keyText(_ key: JSONValue) -> String {
        switch key {
        case .string(let text): "s:" + text
        case .number: "n:" + (key.numericValue?.description ?? key.text)
        default: "o:" + key.text
        }
    }

    /// The first filter that selects rows by primary key (`eq` or `in`, not negated), and the
    /// key operands it names.
    func keyFilter(
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
    func reachesOnlyKnownRows(_ filters: [PostgRESTQuery.Condition]) -> Bool {
        guard let (byKey, keys) = keyFilter(in: filters) else { return false }
        return keys.allSatisfy { operand in
            positions(ofOperand: operand).map { !$0.isEmpty } == true
                || deletedKeys.contains { comparison.evaluate(byKey.with(operand: operand), on: $0) == .yes }
        }
    }
}
