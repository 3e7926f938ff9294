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

    /// Each indexed column's answers (one lookup a column for a changed row).
    private var columns: [String: Column] = [:]
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
        if columns[filter.column]?.everyAnswer.isEmpty == true { columns[filter.column] = nil }
    }

    /// Runs `body` on `name`'s column, made if missing, in place.
    private mutating func modify(_ name: String, _ body: (inout Column) -> Void) {
        body(&columns[name, default: Column()])
    }

    /// Calls `body` with each answer `row` may match: those whose indexed filter its value can
    /// pass, and the unindexed ones; an answer may come more than once (no set is built: the
    /// caller, which gathers answers from other indexes too, drops repeats once).
    func forEachCandidate(for row: JSONObject, _ body: (Answer) -> Void) {
        unindexed.forEach(body)
        for (name, column) in columns {
            switch row[name] {
            case .string(let text)? where column.nonText == 0:
                column.byText[text]?.forEach(body)
            case .number(let text)?:
                guard let integer = PostgRESTComparison.plainInteger(text) else {
                    column.everyAnswer.forEach(body)
                    continue
                }
                column.byInteger[integer]?.forEach(body)
                column.notInteger.forEach(body)
            default:
                column.everyAnswer.forEach(body)
            }
        }
    }
}
