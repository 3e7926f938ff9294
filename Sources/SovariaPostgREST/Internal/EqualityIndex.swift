import SovariaQueue

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
