import Foundation
import SovariaQueue
import SovariaSync

extension PostgRESTOverlay {
    /// For each answer, the changes that can alter it (`OverlayEvaluator`'s contract): a change
    /// of a row the answer holds (by primary key), or an upsert of a row it does not hold whose
    /// new values match the read's filters (or may: a filter the overlay cannot decide counts as a
    /// match). Each change's row is parsed once for every answer.
    ///
    /// Every change counts for a read whose answer is not a list of rows, a page past an `offset`
    /// (a row before it moves the page), an answer that does not show the primary key, or one
    /// whose read the overlay leaves to the server.
    ///
    /// - Complexity: O(answers + rows they hold) to group them, then per change a lookup of its
    ///   key and a filter evaluation for each answer its row may match: those whose first `eq`
    ///   filter its value passes, and those with none (`EqualityIndex`). One parse of each
    ///   change's row, and of each answer whose body is not the one the last page parsed (kept in
    ///   `ParsedAnswers`, up to 8 MiB of bodies).
    public func changesThatCanAlter(
        _ answers: [(read: DataRequest, cachedBody: String)], among changes: [RowChange]
    ) -> [[Int]] {
        let rows: [JSONObject?] = changes.map { change in
            guard case .upsert(let text) = change.operation, case .object(let row)? = try? JSONParser.parse(text)
            else { return nil }
            return row
        }
        // Each answer parsed (or as the last page left it); those that cannot tell what they hold
        // take every change.
        var everyChange: [Int] = []
        var parsed: [(index: Int, answer: OverlayCachedAnswer)] = []
        for (index, answer) in answers.enumerated() {
            guard api.answerShape(of: answer.read) == .rows else {
                everyChange.append(index)
                continue
            }
            let cached = parsedAnswers.answer(to: answer.read, body: answer.cachedBody) {
                cachedAnswer(of: answer.read, cachedBody: answer.cachedBody, related: [])
            }
            guard cached.settled == nil, (cached.query.offset ?? 0) == 0,
                cached.cachedColumns.map({ $0.contains(cached.table.primaryKey) }) ?? true
            else {
                everyChange.append(index)
                continue
            }
            parsed.append((index, cached))
        }
        // The answers holding each key, by primary key column; the answers by one equality filter.
        var holders: [String: [String: [Int]]] = [:]
        var filters = EqualityIndex()
        for (index, cached) in parsed {
            for key in cached.positions.keys {
                holders[cached.table.primaryKey, default: [:]][key, default: []].append(index)
            }
            filters.add(index, filters: cached.query.filters, nonTextColumns: cached.comparison.nonTextColumns)
        }
        var parsedByIndex = [OverlayCachedAnswer?](repeating: nil, count: answers.count)
        for (index, cached) in parsed { parsedByIndex[index] = cached }
        var found = [[Int]](repeating: [], count: answers.count)
        for index in everyChange { found[index] = Array(changes.indices) }
        for (changeIndex, change) in changes.enumerated() {
            var altered = Set<Int>()
            guard let row = rows[changeIndex] else {
                if change.operation != .delete {
                    // An upsert whose row cannot be read counts for every answer.
                    altered = Set(parsed.map(\.index))
                } else {
                    // A delete alters the answers that hold its key.
                    for (_, byKey) in holders {
                        for key in Self.keyTexts(of: change.key) { altered.formUnion(byKey[key] ?? []) }
                    }
                }
                for index in altered.sorted() { found[index].append(changeIndex) }
                continue
            }
            for (primaryKey, byKey) in holders {
                if let key = row[primaryKey] { altered.formUnion(byKey[OverlayRows.keyText(key)] ?? []) }
            }
            // Not held: an upsert alters an answer only if its row matches the read (a filter the
            // overlay cannot decide counts); the equality filters pass over the answers it cannot.
            let asRow = OverlayRows.Row(values: row, cachedIndex: nil, ordinal: 0)
            for index in filters.candidates(for: row) where !altered.contains(index) {
                switch parsedByIndex[index]?.readTruth(on: asRow) {
                case .no?, .null?: break
                case .yes?, .unknown?, nil: altered.insert(index)
                }
            }
            for index in altered.sorted() { found[index].append(changeIndex) }
        }
        return found
    }

    /// Forgets the answers kept for the next page (`ParsedAnswers`), on memory pressure.
    public func shedKeptAnswers() {
        parsedAnswers.removeAll()
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
    private var byText: [String: [String: [Int]]] = [:]
    /// Column → the operand read as an integer → those answers.
    private var byInteger: [String: [Int64: [Int]]] = [:]
    /// Column → the answers whose operand is no integer literal (a number may still equal it).
    private var notInteger: [String: [Int]] = [:]
    /// Column → every answer indexed on it.
    private var everyAnswer: [String: [Int]] = [:]
    /// Column → whether it is a string column that is not text (the comparison's `nonTextColumns`).
    private var nonText: [String: Bool] = [:]
    /// The answers with no filter indexed: every row is checked against them.
    private var unindexed: [Int] = []

    /// Indexes `answer` by the first of its `filters` that is a plain `eq`.
    mutating func add(_ answer: Int, filters: [PostgRESTQuery.Condition], nonTextColumns: Set<String>) {
        guard
            let filter = filters.first(where: { $0.op == .eq && !$0.negated && $0.quantifier == nil })
        else {
            unindexed.append(answer)
            return
        }
        let column = filter.column
        byText[column, default: [:]][filter.operand, default: []].append(answer)
        if let integer = NumericLiteral(filter.operand)?.integer {
            byInteger[column, default: [:]][integer, default: []].append(answer)
        } else {
            notInteger[column, default: []].append(answer)
        }
        everyAnswer[column, default: []].append(answer)
        nonText[column] = (nonText[column] ?? false) || nonTextColumns.contains(column)
    }

    /// The answers `row` may match: those whose indexed filter its value can pass, and the
    /// unindexed ones.
    func candidates(for row: JSONObject) -> [Int] {
        var found = unindexed
        for (column, answers) in everyAnswer {
            switch row[column] {
            case .string(let text)? where nonText[column] != true:
                found += byText[column]?[text] ?? []
            case .number(let text)?:
                guard let integer = PostgRESTComparison.plainInteger(text) else {
                    found += answers
                    continue
                }
                found += (byInteger[column]?[integer] ?? []) + (notInteger[column] ?? [])
            default:
                found += answers
            }
        }
        return found
    }
}
