import Foundation
import SovariaPlumbing
import SovariaQueue
import SovariaSync
import Synchronization

/// The last ``OverlayCachedAnswer/positionsID`` given.
private let positionsIDs = Atomic<UInt64>(0)

/// A read over its cached answer, parsed once: the read's query and its table's rules, the
/// cached rows and those the table's other cached answers add, and what they tell (the kind of
/// value each column holds, whether the rows are every row the user sees, whether they follow
/// the read's order). Read-only once made: a session keeps one and starts every
/// ``OverlayRows`` from it.
final class OverlayCachedAnswer: Sendable {
    let query: PostgRESTQuery
    let table: PostgRESTOverlay.Table
    let comparison: PostgRESTComparison
    /// The adapter that names the table of each write.
    let api: PostgREST
    /// The table the read reads.
    let readTable: String?
    let defaults: [String: JSONValue]
    let sameInEveryRow: [String: JSONValue]
    /// The columns the read orders by.
    let orderColumns: Set<String>
    /// The columns the read filters on.
    let filterColumns: Set<String>
    /// For each of the read's order terms, whether its column's order is not its text's.
    let orderIsNotText: [Bool]
    /// Whether rows a write moved are merged into the cached order (when it allows) rather than
    /// every row sorted. Default: `true`; tests make answers without it to compare both.
    let mergesMovedRows: Bool

    /// The server's cached answer, as it came.
    let cachedBody: String?
    /// The bytes of the related answers' bodies.
    let relatedBytes: Int
    /// The answer when it is settled before any write applies (the read uses a feature the
    /// overlay does not evaluate, or the cached answer is not rows); `nil` otherwise.
    let settled: OverlayAnswer?
    /// The rows before any write: the cached answer's, in its order, then those other answers
    /// add (outside rows).
    let rows: [OverlayRows.Row]
    /// Where each row is in `rows`, by primary key (``OverlayRows/keyText(_:)``).
    let positions: [String: Int]
    /// The same number for two answers of one read whose ``positions`` are the same because one
    /// took the other's (made with `sameKeysAndOrderAs:`, or by ``init(rewriting:body:rows:)``):
    /// `TableReach` then compares no keys.
    let positionsID: UInt64
    /// The reasons met reading the cached answer.
    let reasons: [InexactReason]
    let hasCache: Bool
    let cachedCount: Int
    /// The last cached row as the server sent it: the edge of a full page.
    let pageEdge: OverlayRows.Row?
    /// The columns of the cached rows, in the server's order (`nil` with no cached row).
    let cachedColumns: [String]?
    /// Whether the rows held (the cached answer's and those other answers add) are every row of
    /// the table the user sees: a row not held does not exist.
    let holdsEveryRow: Bool
    /// Whether the rows held are every row the read's filters match, over every page: every row
    /// of the table (``holdsEveryRow``), or a cached answer that no page cuts (no `offset`, and
    /// fewer rows than its `limit`). A row not held then does not match.
    let holdsEveryMatchingRow: Bool
    /// Whether the read asks for a count (`Prefer: count=…`): PostgREST refuses such a page that
    /// starts past its rows (416).
    let countsRows: Bool
    /// Whether the evaluation had no related answers (it may want them).
    let relatedAreEmpty: Bool
    /// Whether nothing is cached for the read but a related answer holds every row of the table:
    /// the read is then evaluated over those rows as PostgreSQL evaluates it over the table
    /// (filters, order, `offset`, `limit`, columns).
    let answersFromRelated: Bool
    /// Whether the cached rows are in the read's order by ``compareByOrder(_:_:)``, every row
    /// holding every order column with one kind of value per column: rows a write moves can then
    /// be merged into them instead of sorting every row.
    let cachedRowsFollowOrder: Bool
    /// The kind of value each order column holds in the cached rows, where one is not `null`.
    let orderKinds: [String: OrderKind]
    /// What kind of value the server answers each column with, where a row it sent (or a
    /// default) shows one.
    let serverKinds: [String: ServerKind]
    /// What a page's in-place rewrite asks of each of the columns shown, kept from the rewrite
    /// that made this parse (`nil`: not learned yet).
    let columnFacts: [ColumnFacts]?
    /// The columns shown as a rewrite writes them before their values (`"name":`), kept from
    /// the rewrite that made this parse (`nil`: not written yet).
    let shownNames: ShownNames?

    /// A kind of value whose values always compare with each other.
    enum OrderKind { case number, boolean, string }

    /// The kind of JSON value the server answers a column with.
    enum ServerKind {
        case number, boolean, string

        /// The kind of `value`; `nil` for `null`, an array or an object, which tell none.
        init?(_ value: JSONValue) {
            switch value {
            case .number: self = .number
            case .bool: self = .boolean
            case .string: self = .string
            case .null, .array, .object: return nil
            }
        }
    }

    /// A row of an answer's body as the overlay wrote it: its values in the order written, and
    /// where its text lies in the body.
    struct WrittenRow {
        var values: JSONObject
        var range: Range<Int>
        /// Its index among the rows the writes left (``OverlayRows/rows``).
        var source: Int
    }

    /// `query` (of the read of `readTable`, under `table`'s rules) over `cachedBody`, with the
    /// rows of `related` answers (the table's other cached answers) for what it leaves out.
    /// `writtenRows`: the rows of `cachedBody` as the overlay wrote it (``WrittenRow``), read
    /// instead of parsing the body: what the parse would read. `sameKeysAndOrderAs`: an answer
    /// of the same read and table whose rows hold the same keys, at the same places, with the
    /// same values in the order's columns: its rows' places by key and their order stand, and
    /// are not worked out again.
    init(
        query: PostgRESTQuery, api: PostgREST, readTable: String?, table: PostgRESTOverlay.Table,
        comparison: PostgRESTComparison, cachedBody: String?, related: [RelatedAnswer], countsRows: Bool = false,
        mergesMovedRows: Bool = true, writtenRows: [WrittenRow]? = nil,
        sameKeysAndOrderAs previous: OverlayCachedAnswer? = nil
    ) {
        self.countsRows = countsRows
        self.query = query
        self.api = api
        self.readTable = readTable
        self.table = table
        self.comparison = comparison
        self.mergesMovedRows = mergesMovedRows
        self.cachedBody = cachedBody
        // The same read as `previous` (when given): what its query and table make, taken.
        orderColumns = previous?.orderColumns ?? query.orderColumns
        filterColumns = previous?.filterColumns ?? query.filterColumns
        orderIsNotText = previous?.orderIsNotText ?? query.order.map { comparison.nonTextColumns.contains($0.column) }
        defaults = previous?.defaults ?? table.defaults.compactMapValues { try? JSONParser.parse($0) }
        sameInEveryRow = previous?.sameInEveryRow ?? table.sameInEveryRow.compactMapValues { try? JSONParser.parse($0) }
        relatedAreEmpty = related.isEmpty
        relatedBytes = related.reduce(0) { $0 + $1.body.utf8.count }

        var loader = Loader(primaryKey: table.primaryKey)
        var declared = JSONObject()
        for (column, value) in defaults.merging(sameInEveryRow, uniquingKeysWith: { first, _ in first }) {
            declared[column] = value
        }
        loader.learnKinds(from: declared)
        var settled: OverlayAnswer?
        var hasCache = false
        var positionsFrom: UInt64?  // the positionsID of the answer whose positions these are
        for reason in query.unsupported { loader.note(reason) }
        if let tableColumns = table.columns.map(Set.init) {
            // A name that is no column of the table: a computed column (a function of the row).
            let named = query.filterColumns.union(query.orderColumns).union(query.columns ?? [])
            for column in named.sorted() where !tableColumns.contains(column) {
                loader.note(.computedColumn(column))
            }
        }
        if !loader.reasons.isEmpty {
            settled = OverlayAnswer(body: cachedBody, inexactReasons: loader.reasons)
        } else if cachedBody != nil, let writtenRows {
            loader.reserveCapacity(writtenRows.count, withPositions: previous == nil)
            for written in writtenRows {
                var row = OverlayRows.Row(
                    values: written.values, cachedIndex: loader.rows.count, ordinal: loader.rows.count)
                row.cachedRange = written.range
                if previous == nil { loader.add(row) } else { loader.append(row) }
            }
            if let previous { (loader.positions, positionsFrom) = (previous.positions, previous.positionsID) }
            hasCache = true
        } else if let cachedBody {
            if let elements = try? JSONParser.elements(of: cachedBody) {
                loader.reserveCapacity(elements.count, withPositions: true)
                for element in elements {
                    guard case .object(let object) = element.value else {
                        loader.note(.cachedAnswerNotRows)
                        settled = OverlayAnswer(body: cachedBody, inexactReasons: loader.reasons)
                        break
                    }
                    var row = OverlayRows.Row(
                        values: object, cachedIndex: loader.rows.count, ordinal: loader.rows.count)
                    if !element.repeatsKeys { row.cachedRange = element.range }
                    loader.add(row)
                }
                hasCache = settled == nil
            } else {
                loader.note(.cachedAnswerNotRows)
                settled = OverlayAnswer(body: cachedBody, inexactReasons: loader.reasons)
            }
        }
        var fromRelated = false
        if cachedBody == nil, settled == nil {
            for answer in related
            where loader.learn(
                from: answer, sameInEveryRow: sameInEveryRow, cachedColumns: nil, keepsRowsWithoutKey: true)
            {
                fromRelated = true
            }
            if !fromRelated { loader.note(.nothingCached) }
        }
        answersFromRelated = fromRelated
        self.settled = settled
        self.hasCache = hasCache
        let cachedCount = hasCache ? loader.rows.count : 0
        self.cachedCount = cachedCount
        pageEdge = hasCache ? loader.rows.last : nil
        cachedColumns = hasCache ? loader.rows.first?.values.keys : nil
        var kinds: [String: OrderKind]?
        var holdsEvery = fromRelated
        if settled == nil, hasCache {
            if let previous, writtenRows != nil {
                kinds = previous.cachedRowsFollowOrder ? previous.orderKinds : nil
            } else {
                kinds = Self.cachedOrderKinds(
                    of: loader.rows, query: query, comparison: comparison, orderIsNotText: orderIsNotText)
            }
            holdsEvery =
                query.filters.isEmpty && query.logic.isEmpty && (query.offset ?? 0) == 0
                && query.limit.map { loader.rows.count < $0 } != false
            for answer in related {
                if loader.learn(from: answer, sameInEveryRow: sameInEveryRow, cachedColumns: cachedColumns) {
                    holdsEvery = true
                }
            }
        }
        cachedRowsFollowOrder = kinds != nil
        orderKinds = kinds ?? [:]
        holdsEveryRow = holdsEvery
        holdsEveryMatchingRow =
            holdsEvery || (hasCache && (query.offset ?? 0) == 0 && query.limit.map { cachedCount < $0 } != false)
        rows = loader.rows
        positions = loader.positions
        positionsID = positionsFrom ?? Self.newPositionsID()
        reasons = loader.reasons
        serverKinds = loader.serverKinds
        columnFacts = nil
        shownNames = nil
    }

    /// `previous` over `body`, whose `rows` are previous's at the same places with the same
    /// keys, the same values in the order's and the filters' columns and the same kind of value
    /// in each column (``answerInPlace(writes:pageRows:)`` rewrote some in place): what the
    /// initializer above makes of those rows, with nothing worked out again.
    init(
        rewriting previous: OverlayCachedAnswer, body: String, rows: [OverlayRows.Row],
        columnFacts: [ColumnFacts]? = nil, shownNames: ShownNames? = nil
    ) {
        assert(
            previous.settled == nil && previous.hasCache && previous.relatedAreEmpty
                && rows.count == previous.rows.count)
        (query, table, comparison, api, readTable) =
            (previous.query, previous.table, previous.comparison, previous.api, previous.readTable)
        (defaults, sameInEveryRow) = (previous.defaults, previous.sameInEveryRow)
        (orderColumns, filterColumns, orderIsNotText) =
            (previous.orderColumns, previous.filterColumns, previous.orderIsNotText)
        (mergesMovedRows, countsRows) = (previous.mergesMovedRows, previous.countsRows)
        (cachedBody, relatedBytes, settled, relatedAreEmpty, answersFromRelated) = (body, 0, nil, true, false)
        self.rows = rows
        (positions, positionsID, reasons) = (previous.positions, previous.positionsID, previous.reasons)
        (hasCache, cachedCount, pageEdge, cachedColumns) = (true, rows.count, rows.last, rows.first?.values.keys)
        (holdsEveryRow, holdsEveryMatchingRow) = (previous.holdsEveryRow, previous.holdsEveryMatchingRow)
        (cachedRowsFollowOrder, orderKinds) = (previous.cachedRowsFollowOrder, previous.orderKinds)
        serverKinds = previous.serverKinds
        self.columnFacts = columnFacts ?? previous.columnFacts
        self.shownNames = shownNames ?? previous.shownNames
    }

    /// A number no other ``positionsID`` has.
    private static func newPositionsID() -> UInt64 {
        positionsIDs.add(1, ordering: .relaxed).newValue
    }

    /// The answer with `writes` (oldest first) applied, evaluated afresh; a change whose row is
    /// among `pageRows` (by position, from the same text) is applied without parsing it again.
    func answer(writes: [OverlayWrite], pageRows: TableReach.PageRows = [:]) -> OverlayAnswer {
        if let settled { return settled }
        return OverlayReadEvaluation.answer(rows(after: writes, pageRows: pageRows)).answer
    }

    /// The rows after `writes` (oldest first), a change whose row is among `pageRows` applied
    /// without parsing it again.
    private func rows(after writes: [OverlayWrite], pageRows: TableReach.PageRows) -> OverlayRows {
        var written = OverlayRows(self)
        written.pageRows = pageRows
        for write in writes { written.apply(write) }
        return written
    }

    /// ``answer(writes:pageRows:)``, and the same read over the answer's body, made from the rows
    /// the evaluation wrote instead of a parse of the body, where the answer is exact rows of its
    /// columns and this one has no related answers (`nil` otherwise): a change feed's page keeps
    /// it, and the next page finds the body it wrote parsed.
    func answerAndParse(
        writes: [OverlayWrite], pageRows: TableReach.PageRows = [:]
    ) -> (answer: OverlayAnswer, parse: OverlayCachedAnswer?) {
        if let settled { return (settled, nil) }
        if let inPlace = answerInPlace(writes: writes, pageRows: pageRows) {
            // Every debug build (the tests) holds the shortcut to the evaluation it stands for.
            assert(
                Self.same(inPlace, evaluatedAnswerAndParse(writes: writes, pageRows: pageRows)),
                "the rows rewritten in place differ from the evaluation's")
            return inPlace
        }
        return evaluatedAnswerAndParse(writes: writes, pageRows: pageRows)
    }

    /// ``answerAndParse(writes:pageRows:)`` by evaluating the read over the rows the writes leave.
    func evaluatedAnswerAndParse(
        writes: [OverlayWrite], pageRows: TableReach.PageRows
    ) -> (answer: OverlayAnswer, parse: OverlayCachedAnswer?) {
        if let settled { return (settled, nil) }
        let written = rows(after: writes, pageRows: pageRows)
        let (answer, _, wrote) = OverlayReadEvaluation.answerAndRows(written, keepingRows: true)
        guard let wrote, let body = answer.body, answer.isExact, !answer.wantsRelatedAnswers, relatedAreEmpty,
            !answer.changedByPendingWrites, cachedBody.map({ body.hasSameUTF8Bytes(as: $0) }) != true
        else { return (answer, nil) }
        // The common page: each row where it was, with its key and the order's values as they
        // were (a change of other columns).
        let keyAndOrder = orderColumns.union([table.primaryKey])
        let sameKeysAndOrder =
            wrote.count == rows.count && rows.count == cachedCount
            && wrote.indices.allSatisfy { place in
                let row = written.rows[wrote[place].source]
                return row.cachedIndex == place && row.changed.isDisjoint(with: keyAndOrder)
            }
        let parse = OverlayCachedAnswer(
            query: query, api: api, readTable: readTable, table: table, comparison: comparison, cachedBody: body,
            related: [], countsRows: countsRows, mergesMovedRows: mergesMovedRows, writtenRows: wrote,
            sameKeysAndOrderAs: sameKeysAndOrder ? self : nil)
        return (answer, parse)
    }

    /// The rows, their positions by key, the reasons and the column kinds as the cached answer
    /// and the related ones are read.
    private struct Loader {
        let primaryKey: String
        var rows: [OverlayRows.Row] = []
        var positions: [String: Int] = [:]
        var reasons: [InexactReason] = []
        var serverKinds: [String: ServerKind] = [:]
        /// The last columns seen of which every one has a kind in ``serverKinds``.
        var columnsWithKinds: [String] = []

        init(primaryKey: String) { self.primaryKey = primaryKey }

        /// Room for `rows` rows, and their places by key when `withPositions` (grown one row at a
        /// time, an answer's table of places was rehashed at each doubling).
        mutating func reserveCapacity(_ rows: Int, withPositions: Bool) {
            self.rows.reserveCapacity(rows)
            if withPositions { positions.reserveCapacity(rows) }
        }

        mutating func note(_ reason: InexactReason) {
            if !reasons.contains(reason) { reasons.append(reason) }
        }

        mutating func add(_ row: OverlayRows.Row) {
            if let key = row.values[primaryKey] { positions[OverlayRows.keyText(key)] = rows.count }
            append(row)
        }

        /// ``add(_:)`` without its place by key (the caller has every place already).
        mutating func append(_ row: OverlayRows.Row) {
            assert(row.ordinal == rows.count, "a row's ordinal is its index")
            learnKinds(from: row.values)
            rows.append(row)
        }

        func position(of key: JSONValue) -> Int? {
            positions[OverlayRows.keyText(key)].flatMap { rows[$0].isDeleted ? nil : $0 }
        }

        /// Learns the kinds of the columns in `values`, a row the server sent or a declared value.
        mutating func learnKinds(from values: JSONObject) {
            // Rows of one answer share their list of columns: once each has a kind, skip the rest.
            guard values.keys != columnsWithKinds else { return }
            defer { if values.keys.allSatisfy({ serverKinds[$0] != nil }) { columnsWithKinds = values.keys } }
            if serverKinds.isEmpty { serverKinds.reserveCapacity(values.keys.count) }
            for column in values.keys where serverKinds[column] == nil {
                if let kind = values[column].flatMap(ServerKind.init) { serverKinds[column] = kind }
            }
        }

        /// Takes the rows of another cached answer of the table: a row this answer lacks becomes
        /// an outside row, and columns this answer does not select fill in (for the filters of
        /// writes). Returns whether the other answer holds every row of the table: no filters,
        /// offset or full page.
        /// `keepsRowsWithoutKey`: with nothing cached, a row without the key column (a table
        /// without a primary key) is still a row of the table.
        mutating func learn(
            from related: RelatedAnswer, sameInEveryRow: [String: JSONValue], cachedColumns: [String]?,
            keepsRowsWithoutKey: Bool = false
        ) -> Bool {
            guard cachedColumns?.contains(primaryKey) != false,
                case .array(let items)? = try? JSONParser.parse(related.body)
            else { return false }
            var other = PostgRESTQuery(path: related.read.path)
            if let range = related.read.header("Range") { other.restrict(toRangeHeader: range) }
            guard other.unsupported.isEmpty else { return false }
            var holdsKeys = true
            for item in items {
                if keepsRowsWithoutKey, case .object(let object) = item, object[primaryKey] == nil {
                    learnKinds(from: object)
                    var row = OverlayRows.Row(values: object, cachedIndex: nil, ordinal: rows.count)
                    row.isOutside = true
                    add(row)
                    continue
                }
                guard case .object(let object) = item, let key = object[primaryKey] else {
                    holdsKeys = false
                    continue
                }
                learnKinds(from: object)
                if let index = position(of: key) {
                    for column in object.keys where !rows[index].values.has(column) {
                        rows[index].values[column] = object[column]
                    }
                } else {
                    var row = OverlayRows.Row(values: object, cachedIndex: nil, ordinal: rows.count)
                    for (column, value) in sameInEveryRow where !row.values.has(column) { row.values[column] = value }
                    row.isOutside = true
                    add(row)
                }
            }
            return holdsKeys && other.filters.isEmpty && other.logic.isEmpty && (other.offset ?? 0) == 0
                && other.limit.map({ items.count < $0 }) != false
        }
    }
}
