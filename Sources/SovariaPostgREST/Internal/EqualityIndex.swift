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
    /// Column → operand → the answers filtered by `column=eq.operand`.
    private var byText: [String: [String: Set<Answer>]] = [:]
    /// Column → the operand read as an integer → those answers.
    private var byInteger: [String: [Int64: Set<Answer>]] = [:]
    /// Column → the answers whose operand is no integer literal (a number may still equal it).
    private var notInteger: [String: Set<Answer>] = [:]
    /// Column → every answer indexed on it.
    private var everyAnswer: [String: Set<Answer>] = [:]
    /// Column → how many of its answers name it among the comparison's `nonTextColumns` (string
    /// columns that are not text: their strings are not compared as text).
    private var nonText: [String: Int] = [:]
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
    mutating func remove(_ answer: Answer, filters: [PostgRESTQuery.Condition], nonTextColumns: Set<String>) {
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

    /// Calls `body` with each answer `row` may match: those whose indexed filter its value can
    /// pass, and the unindexed ones; an answer may come more than once (no set is built: the
    /// caller, which gathers answers from other indexes too, drops repeats once).
    func forEachCandidate(for row: JSONObject, _ body: (Answer) -> Void) {
        unindexed.forEach(body)
        for (column, answers) in everyAnswer {
            switch row[column] {
            case .string(let text)? where nonText[column] == nil:
                byText[column]?[text]?.forEach(body)
            case .number(let text)?:
                guard let integer = PostgRESTComparison.plainInteger(text) else {
                    answers.forEach(body)
                    continue
                }
                byInteger[column]?[integer]?.forEach(body)
                notInteger[column]?.forEach(body)
            default:
                answers.forEach(body)
            }
        }
    }
}
