import Foundation
import SovariaPlumbing
import SovariaQueue
import SovariaSync

/// The rows of a cached answer after the writes applied so far, in order: what a session
/// advances, one write at a time. Every doubt becomes a reason, in the order met.
struct OverlayRows {
    /// The read over its cached answer, which the writes apply to.
    let cached: OverlayCachedAnswer

    /// A row as the overlay knows it.
    struct Row: Sendable {
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

    var rows: [Row]
    /// Where each row is in `rows`, by primary key (``keyText(_:)``): writes by key find their row
    /// without a scan.
    var positions: [String: Int]
    var reasons: [InexactReason]
    /// Whether any write touched, added or removed a row.
    var changedRows = false
    /// Whether a pending (not yet synced) write did.
    var changedByPending = false
    /// Keys of cached rows that pending deletes removed.
    var deletedKeys: [JSONValue] = []
    /// The rows writes touched, added or removed since this was last emptied (by index, in the
    /// order met, repeats kept): what an answer derived from the last one re-evaluates.
    var touched: [Int] = []
    /// How many rows the writes so far added to the rows the read's filters match, over every
    /// page (``OverlayAnswer/rowCountChange``); `nil` once a write is not decided for them, and
    /// for a read that asks for no count (it is not computed).
    var rowCountChange: Int?

    /// Changes' rows already parsed, by position (``TableReach/pageRows``).
    var pageRows: TableReach.PageRows = [:]

    /// The rows of `cached` before any write.
    init(_ cached: OverlayCachedAnswer) {
        self.cached = cached
        rows = cached.rows
        positions = cached.positions
        reasons = cached.reasons
        rowCountChange = cached.countsRows ? 0 : nil
    }

    private var table: PostgRESTOverlay.Table { cached.table }
    private var query: PostgRESTQuery { cached.query }

    // MARK: - Writes

    mutating func apply(_ write: OverlayWrite) {
        if cached.answersFromRelated, !write.isPending {
            // A synced write is applied over the read's own answer, fetched before it; the other
            // answers may have been fetched (or moved by the change feed) after it, and later
            // changes to its rows would be undone.
            note(.nothingCached)
            rowCountChange = nil
            return
        }
        if let offset = query.offset, offset > 0 {
            note(.readHasOffset)
        }
        switch write.effect {
        case .request(let request): apply(request, by: write)
        case .change(let change): apply(change, by: write)
        }
    }

    /// A change the feed brought: the row's new state upserted by its key, as a `POST` with
    /// `resolution=merge-duplicates` of the row would, or the row of its key deleted, as a
    /// `DELETE ?<primary key>=eq.<key>` would; without a request built or parsed.
    private mutating func apply(_ change: RowChange, by write: OverlayWrite) {
        // A change of another table's row cannot touch this one's (unlike a request, which may
        // call a function or fire a trigger).
        guard cached.api.tableOfChange(change.table) == cached.readTable else { return }
        switch change.operation {
        case .upsert(let text):
            var row = pageRows[change.position].flatMap { $0.text.hasSameUTF8Bytes(as: text) ? $0.row : nil }
            if row == nil, case .object(let object)? = try? JSONParser.parse(text) { row = object }
            guard let row else {
                note(.insertBodyNotObjects)
                rowCountChange = nil
                return
            }
            insert(typed(row), resolution: .mergeDuplicates, by: write)
        case .delete:
            let byKey = PostgRESTQuery.Condition(
                column: table.primaryKey, negated: false, op: .eq, operand: change.key, condition: "eq." + change.key)
            delete(where: [byKey], by: write)
        }
    }

    /// A write in PostgREST's dialect.
    private mutating func apply(_ request: DataRequest, by write: OverlayWrite) {
        let method = request.method.uppercased()
        guard cached.api.table(of: request) == cached.readTable else {
            note(.writeOutsideTable(method: method, path: request.path))
            rowCountChange = nil
            return
        }
        let writeQuery = PostgRESTQuery(path: request.path)
        if writeQuery.limit != nil || writeQuery.offset != nil || !writeQuery.order.isEmpty {
            note(.writeWithLimitOrOrder(method: method))
            rowCountChange = nil
            return
        }
        guard writeQuery.unsupported.isEmpty, writeQuery.logic.isEmpty else {
            rowCountChange = nil
            let features = writeQuery.unsupported.map { reason in
                if case .unsupportedReadFeature(let feature) = reason { feature } else { reason.description }
            }
            note(.unsupportedWriteFeature(method: method, features: features.isEmpty ? ["or=/and="] : features))
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
                rowCountChange = nil
                return
            }
            if objects.count > 1, Set(objects.map { Set($0.keys) }).count > 1 {
                note(.bulkInsertColumnsDiffer)
                rowCountChange = nil  // the server's nulls, not the defaults, decide which rows match
            }
            for object in objects {
                insert(typed(object), resolution: Self.resolution(of: request), by: write)
            }
        case "PATCH":
            guard case .object(let changes)? = body else {
                note(.updateBodyNotObject)
                rowCountChange = nil
                return
            }
            patch(where: writeQuery.filters, with: typed(changes), by: write)
        case "DELETE":
            delete(where: writeQuery.filters, by: write)
        default:
            note(.methodNotEvaluated(method))
            rowCountChange = nil
        }
    }

    enum Resolution { case none, mergeDuplicates, ignoreDuplicates }

    static func resolution(of request: DataRequest) -> Resolution {
        guard var prefer = request.header("Prefer") else { return .none }
        // Over the bytes by hand: a change feed's page asks this of every write for every cached
        // answer, and Foundation's trim, then `split` over the UTF-8 view, cost most of that.
        return prefer.withUTF8 { bytes in
            var start = 0
            while start < bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != UInt8(ascii: ",") { end += 1 }
                var low = start
                var high = end
                while low < high, bytes[low] == UInt8(ascii: " ") || bytes[low] == UInt8(ascii: "\t") { low += 1 }
                while high > low, bytes[high - 1] == UInt8(ascii: " ") || bytes[high - 1] == UInt8(ascii: "\t") {
                    high -= 1
                }
                let token = UnsafeBufferPointer(rebasing: bytes[low..<high])
                if token.elementsEqual(mergeDuplicates) { return .mergeDuplicates }
                if token.elementsEqual(ignoreDuplicates) { return .ignoreDuplicates }
                start = end + 1
            }
            return .none
        }
    }

    private static let mergeDuplicates = Array("resolution=merge-duplicates".utf8)
    private static let ignoreDuplicates = Array("resolution=ignore-duplicates".utf8)

    mutating func insert(_ typed: TypedChanges, resolution: Resolution, by write: OverlayWrite) {
        let object = typed.values
        let key = object[table.primaryKey]
        if resolution != .none, cached.cachedCount > 0, cached.cachedColumns?.contains(table.primaryKey) == false {
            note(.upsertTargetUnknown(primaryKey: table.primaryKey))
            rowCountChange = nil
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
        var row = Row(values: object, cachedIndex: nil, ordinal: rows.count, changed: Set(object.keys))
        if write.isPending { row.pendingIDs = [write.id] }
        switch cached.holdsEveryRow ? .none : resolution {
        case .none:
            // A new row: the table's defaults fill what it does not set. (A key the server holds
            // outside the cache is refused, and the write leaves the answer when it is.)
            for (column, value) in cached.defaults where !row.values.has(column) { row.values[column] = value }
        case .mergeDuplicates:
            // The server may hold the key outside the cache: columns the upsert does not set are
            // then the server's, so they stay unknown (but for those the same in every row).
            for (column, value) in cached.sameInEveryRow where !row.values.has(column) { row.values[column] = value }
        case .ignoreDuplicates:
            row.mayBeSkipped = true
        }
        for column in typed.unsure { row.values[column] = nil }
        add(row)
        countMove(from: newRowMatched(resolution: resolution), to: countedMatch(rows.count - 1))
        changedRows = true
        if write.isPending { changedByPending = true }
    }

    mutating func merge(_ typed: TypedChanges, into index: Int, by write: OverlayWrite) {
        touched.append(index)
        let matched = countedMatch(index)
        let changes = typed.values
        let oldKey = rows[index].values[table.primaryKey]
        for column in changes.keys {
            guard let value = changes[column] else { continue }
            // A column of a cached row set to the value the server sent in it, byte for byte, is
            // not changed: the row keeps its place in the order, its cached text and the server's
            // word on the read's filters. Not where other answers lent values (a column this one
            // does not select, a row it left out): those are not the server's word for this read.
            if cached.relatedAreEmpty, rows[index].cachedIndex != nil, let held = rows[index].values[column],
                held.isIdentical(to: value)
            {
                continue
            }
            rows[index].values[column] = value
            rows[index].changed.insert(column)
        }
        if let newKey = changes[table.primaryKey], let oldKey, !newKey.isEquivalent(to: oldKey) {
            // The row moves to a new key: writes after this one find it there.
            positions[Self.keyText(oldKey)] = nil
            if positions[Self.keyText(newKey)] != nil {
                note(.keyTakenByAnotherRow)
                rowCountChange = nil
            }
            positions[Self.keyText(newKey)] = index
        }
        if write.isPending, rows[index].pendingIDs.last != write.id { rows[index].pendingIDs.append(write.id) }
        countMove(from: matched, to: countedMatch(index))
        if !typed.unsure.isEmpty { forget(typed.unsure, in: index) }
        changedRows = true
        if write.isPending { changedByPending = true }
    }

    /// After a write whose filter could not be evaluated on a row: the columns it sets are no
    /// longer known there, so later filters and the read cannot take the old values for sure.
    mutating func forget(_ columns: [String], in index: Int) {
        touched.append(index)
        let matched = countedMatch(index)
        for column in columns {
            rows[index].values[column] = nil
            rows[index].changed.insert(column)
        }
        countMove(from: matched, to: countedMatch(index))
        changedRows = true
    }

    mutating func patch(
        where filters: [PostgRESTQuery.Condition], with typed: TypedChanges, by write: OverlayWrite
    ) {
        let changes = typed.values
        let (filterColumns, orderColumns) = (cached.filterColumns, cached.orderColumns)
        // A change to columns the read neither shows, filters nor orders on cannot change it.
        let visible = query.columns.map { Set($0).union(filterColumns).union(orderColumns) }
        let isVisible = visible.map { !$0.isDisjoint(with: changes.keys) } ?? true
        // Rows the answer left out do not match the read (or lie past a full page): setting a
        // column the read filters (or orders) on could bring them in.
        var entering = filterColumns
        if let limit = query.limit, cached.cachedCount >= limit { entering.formUnion(orderColumns) }
        let mayEnter = !entering.isDisjoint(with: changes.keys)
        for index in candidates(for: filters) {
            switch cached.truth(of: filters, on: rows[index]) {
            case .yes: merge(typed, into: index, by: write)
            case .unknown where isVisible && (!rows[index].isOutside || mayEnter):
                note(.updateFilterUnknown)
                forget(changes.keys, in: index)
            case .unknown: forget(changes.keys, in: index)
            case .no, .null: break
            }
        }
        guard isVisible, !cached.holdsEveryRow, !reachesOnlyKnownRows(filters) else { return }
        // A row not held may enter the rows the read matches, or leave them (over every page).
        if !filterColumns.isDisjoint(with: changes.keys) { rowCountChange = nil }
        let moved = entering.intersection(changes.keys).sorted()
        if !moved.isEmpty {
            note(.updateMayBringRowsIn(columns: moved))
        }
    }

    mutating func delete(where filters: [PostgRESTQuery.Condition], by write: OverlayWrite) {
        for index in candidates(for: filters) {
            let row = rows[index]
            switch cached.truth(of: filters, on: row) {
            case .yes:
                touched.append(index)
                changedRows = true
                if write.isPending { changedByPending = true }
                countMove(from: countedMatch(index), to: false)
                rows[index].isDeleted = true
                if let key = row.values[table.primaryKey] {
                    deletedKeys.append(key)
                    positions[Self.keyText(key)] = nil
                }
            case .unknown where !row.isOutside || query.limit.map({ cached.cachedCount >= $0 }) == true:
                // (An outside row matters only as one that could fill a full page.)
                note(.deleteFilterUnknown)
                markMayBeDeleted(index)
            case .unknown:
                markMayBeDeleted(index)
            case .no, .null: break
            }
        }
        // A row not held that matches the read may be one the delete removes.
        if !cached.holdsEveryMatchingRow, !reachesOnlyKnownRows(filters) { rowCountChange = nil }
    }

    /// Marks the row at `index` as one a pending delete may have removed.
    private mutating func markMayBeDeleted(_ index: Int) {
        let matched = countedMatch(index)
        rows[index].mayBeDeleted = true
        touched.append(index)
        countMove(from: matched, to: countedMatch(index))
    }

    /// The rows `filters` can match: those a key filter names, when every row has its key;
    /// otherwise every row not deleted.
    func candidates(for filters: [PostgRESTQuery.Condition]) -> [Int] {
        if cached.cachedColumns?.contains(table.primaryKey) != false, !table.nonTextColumns.contains(table.primaryKey),
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

    /// Adds a row a write inserted.
    mutating func add(_ row: Row) {
        assert(row.ordinal == rows.count, "a row's ordinal is its index")
        touched.append(rows.count)
        if let key = row.values[table.primaryKey] { positions[Self.keyText(key)] = rows.count }
        rows.append(row)
    }

    func position(of key: JSONValue) -> Int? {
        positions[Self.keyText(key)].flatMap { rows[$0].isDeleted ? nil : $0 }
    }

    /// A key as a dictionary key: text and numbers (by value) apart, and texts told apart by
    /// their bytes (``bytesAsKey(_:)``).
    static func keyText(_ key: JSONValue) -> String {
        switch key {
        case .string(let text): "s:" + bytesAsKey(text)
        case .number: "n:" + (key.numericValue?.description ?? key.text)
        default: "o:" + bytesAsKey(key.text)
        }
    }

    /// `text` with every byte past ASCII, and `%`, written `%XX`: a `String` dictionary key
    /// merges canonically equivalent texts (`é` composed and decomposed, two keys PostgreSQL
    /// tells apart), an ASCII one compares byte for byte. ASCII text without `%` is itself.
    static func bytesAsKey(_ text: String) -> String {
        let percent = UInt8(ascii: "%")
        guard text.utf8.contains(where: { $0 >= 0x80 || $0 == percent }) else { return text }
        let digits = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count * 3)
        for byte in text.utf8 {
            if byte < 0x80, byte != percent {
                out.append(byte)
            } else {
                out += [percent, digits[Int(byte >> 4)], digits[Int(byte & 0xF)]]
            }
        }
        return String(decoding: out, as: UTF8.self)
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
                || deletedKeys.contains { cached.comparison.evaluate(byKey.with(operand: operand), on: $0) == .yes }
        }
    }

    mutating func note(_ reason: InexactReason) {
        if !reasons.contains(reason) { reasons.append(reason) }
    }

    // MARK: - Column types

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
    mutating func typed(_ object: JSONObject) -> TypedChanges {
        var typed = TypedChanges(values: object)
        for column in object.keys where !table.nonTextColumns.contains(column) {
            guard case .string(let text)? = object[column] else { continue }
            switch cached.serverKinds[column] {
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
}
