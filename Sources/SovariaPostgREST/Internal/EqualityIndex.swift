import SovariaQueue

/// Cached answers grouped by one `eq` filter each (`qty=eq.5`), so a changed row is checked only
/// against the answers whose filter its value can pass: the other answers' reads cannot match it.
/// A filter is indexed only where the overlay's own comparison is equality of text (a string in
/// a text column) or of integers (a plain integer against an integer literal); every other value
/// of the column makes each answer indexed on it a candidate, as do answers with no such filter.
///
/// `Answer` is what names an answer: ``TableReach`` gives each a small integer, cheaper to hash
/// than its read's text.
struct EqualityIndex<Answer: Hashable> {
    /// The answers indexed on one column.
    private struct Column {
        /// Operand → the answers filtered by `column=eq.operand`.
        var byText: [String: Set<Answer>] = [:]
        /// The operand read as an integer → those answers.
        var byInteger: [Int64: Set<Answer>] = [:]
        /// The answers whose operand is no integer literal (a number may still equal it).
        var notInteger: Set<Answer> = []
        /// Every answer indexed on the column.
        var everyAnswer: Set<Answer> = []
        /// How many of its answers name it among the comparison's `nonTextColumns` (string
        /// columns that are not text: their strings are not compared as text).
        var nonText = 0
    }

    /// Each indexed column's name and answers, by place: a changed row looks up its value of
    /// each, walking the places (a walk of a dictionary copies each column it yields, a retain
    /// of each of its four tables, for every change).
    private var names: [String] = []
    private var columns: [Column] = []
    /// Each indexed column's place.
    private var places: [String: Int] = [:]
    /// The answers with no filter indexed: every row is checked against them.
    private var unindexed: Set<Answer> = []

    /// The filter `filters` are indexed by: the first plain `eq`.
    private static func indexed(_ filters: [PostgRESTQuery.Condition]) -> PostgRESTQuery.Condition? {
        filters.first { $0.op == .eq && !$0.negated && $0.quantifier == nil }
    }

    /// Indexes `answer` by the first of its `filters` that is a plain `eq`.
    mutating func add(_ answer: Answer, filters: [PostgRESTQuery.Condition], nonTextColumns: Set<String>) {
        guard let filter = Self.indexed(filters) else {
            unindexed.insert(answer)
            return
        }
        let operand = filter.operand
        let isNonText = nonTextColumns.contains(filter.column)
        let integer = NumericLiteral(operand)?.integer
        modify(filter.column) { column in
            column.byText[operand, default: []].insert(answer)
            if let integer {
                column.byInteger[integer, default: []].insert(answer)
            } else {
                column.notInteger.insert(answer)
            }
            column.everyAnswer.insert(answer)
            if isNonText { column.nonText += 1 }
        }
    }

    /// Takes out `answer`, added with the same `filters` and `nonTextColumns`.
    mutating func remove(_ answer: Answer, filters: [PostgRESTQuery.Condition], nonTextColumns: Set<String>) {
        guard let filter = Self.indexed(filters) else {
            unindexed.remove(answer)
            return
        }
        let operand = filter.operand
        let isNonText = nonTextColumns.contains(filter.column)
        let integer = NumericLiteral(operand)?.integer
        modify(filter.column) { column in
            column.byText[operand]?.remove(answer)
            if column.byText[operand]?.isEmpty == true { column.byText[operand] = nil }
            if let integer {
                column.byInteger[integer]?.remove(answer)
                if column.byInteger[integer]?.isEmpty == true { column.byInteger[integer] = nil }
            } else {
                column.notInteger.remove(answer)
            }
            column.everyAnswer.remove(answer)
            if isNonText { column.nonText -= 1 }
        }
        // An emptied column leaves its place to the last one.
        guard let place = places[filter.column], columns[place].everyAnswer.isEmpty else { return }
        places[filter.column] = nil
        let last = columns.count - 1
        if place != last {
            (names[place], columns[place]) = (names[last], columns[last])
            places[names[place]] = place
        }
        names.removeLast()
        columns.removeLast()
    }

    /// Runs `body` on `name`'s column, made if missing, in place.
    private mutating func modify(_ name: String, _ body: (inout Column) -> Void) {
        if let place = places[name] {
            body(&columns[place])
            return
        }
        places[name] = columns.count
        names.append(name)
        columns.append(Column())
        body(&columns[columns.count - 1])
    }

    /// Calls `body` with each answer `row` may match: those whose indexed filter its value can
    /// pass, and the unindexed ones; an answer may come more than once (no set is built: the
    /// caller, which gathers answers from other indexes too, drops repeats once).
    func forEachCandidate(for row: JSONObject, _ body: (Answer) -> Void) {
        unindexed.forEach(body)
        for place in columns.indices {
            switch row[names[place]] {
            case .string(let text)? where columns[place].nonText == 0:
                columns[place].byText[text]?.forEach(body)
            case .number(let text)?:
                guard let integer = PostgRESTComparison.plainInteger(text) else {
                    columns[place].everyAnswer.forEach(body)
                    continue
                }
                columns[place].byInteger[integer]?.forEach(body)
                columns[place].notInteger.forEach(body)
            default:
                columns[place].everyAnswer.forEach(body)
            }
        }
    }
}
