import Foundation
import SovariaPlumbing
import SovariaSync

/// One answer: the read's query evaluated over the rows after the writes (``OverlayRows``).
/// The rows do not change; the doubts the read meets join their reasons, in the order met.
struct OverlayReadEvaluation {
    /// The read over its cached answer.
    let cached: OverlayCachedAnswer
    /// The rows after the writes.
    let rows: [OverlayRows.Row]
    /// The rows the writes touched since the last answer (``OverlayRows/touched``).
    let touched: [Int]
    /// Whether any write touched, added or removed a row.
    let changedRows: Bool
    /// Whether a pending write changed the rows.
    let changedByPending: Bool
    /// How many rows the writes added to those the read matches (``OverlayRows/rowCountChange``).
    let rowCountChange: Int?
    /// The writes' reasons, then the read's.
    var reasons: [InexactReason]
    /// The rows the answer's body shows, each with its values as written and where its text
    /// lies in the body; `nil` where the body is not rows of the answer's columns alone (a
    /// `select` with aliases, casts or paths, a row without a column shown). Set by ``project(_:)``
    /// (`OverlayReadEvaluation+Columns.swift`) when ``keepsWrittenRows``.
    var writtenRows: [OverlayCachedAnswer.WrittenRow]?
    /// Whether ``project(_:)`` keeps the rows it writes: only a caller that keeps the answer
    /// parsed needs them.
    var keepsWrittenRows = false

    /// The evaluation of the read over `written`.
    init(_ written: OverlayRows) {
        cached = written.cached
        rows = written.rows
        touched = written.touched
        changedByPending = written.changedByPending
        rowCountChange = written.rowCountChange
        reasons = written.reasons
        changedRows = written.changedRows
    }

    var query: PostgRESTQuery { cached.query }

    /// The rows an exact answer shows, in its order (by index in `rows`), and the kinds of value
    /// its order columns hold: the next answer, after writes that touched a few rows, moves
    /// those rows alone (``updatedAnswer(from:)``).
    struct ShownRows {
        var order: [Int]
        var kinds: [String: OverlayCachedAnswer.OrderKind]
    }

    /// The answer of the rows after the writes, and the rows it shows when a later answer can
    /// be derived from them (``ShownRows``).
    static func answer(_ written: OverlayRows) -> (answer: OverlayAnswer, shown: ShownRows?) {
        let (answer, shown, _) = answerAndRows(written, keepingRows: false)
        return (answer, shown)
    }

    /// ``answer(_:)``, and (`keepingRows`) the rows its body shows as the body holds them
    /// (``writtenRows``): what parsing the body again would read, without the parse.
    static func answerAndRows(
        _ written: OverlayRows, keepingRows: Bool
    ) -> (answer: OverlayAnswer, shown: ShownRows?, rows: [OverlayCachedAnswer.WrittenRow]?) {
        var evaluation = OverlayReadEvaluation(written)
        evaluation.keepsWrittenRows = keepingRows
        var answer: OverlayAnswer
        var shown: ShownRows?
        if !evaluation.changedRows && evaluation.cached.hasCache {
            answer = OverlayAnswer(
                body: evaluation.cached.cachedBody, inexactReasons: evaluation.reasons,
                rowCountChange: evaluation.rowCountChange)
        } else if !evaluation.cached.hasCache && !evaluation.cached.answersFromRelated
            && !evaluation.rows.contains(where: { !$0.isOutside && !$0.isDeleted })
        {
            answer = OverlayAnswer(
                body: nil, inexactReasons: evaluation.reasons, rowCountChange: evaluation.rowCountChange)
        } else {
            (answer, shown) = evaluation.evaluateRead()
        }
        // A counted page past the rows is PostgREST's 416, not an empty list.
        if evaluation.cached.countsRows, (evaluation.query.offset ?? 0) > 0, answer.isExact,
            answer.body.map({ $0.utf8.filter { $0 > 0x20 }.elementsEqual("[]".utf8) }) != false
        {
            answer.inexactReasons.append(.countedPageMayBeRefused)
            evaluation.reasons.append(.countedPageMayBeRefused)
        }
        // Rows other answers hold may settle what this one could not, the count of a page's rows
        // included.
        let isPage = evaluation.query.limit != nil || evaluation.query.offset != nil
        let countIsUnknown = evaluation.cached.countsRows && isPage && evaluation.rowCountChange == nil
        answer.wantsRelatedAnswers =
            evaluation.cached.relatedAreEmpty && (!evaluation.reasons.isEmpty || countIsUnknown)
        return (answer, shown, evaluation.writtenRows)
    }

    // MARK: - The read

    /// The read over every row; also the rows it shows, when a later answer can start from them:
    /// an exact answer of a read without `limit` or `offset`, whose order (if any) the cached
    /// rows follow, with no related answers.
    private mutating func evaluateRead() -> (answer: OverlayAnswer, shown: ShownRows?) {
        // The rows shown, by index in `rows`: the rows themselves are never copied.
        var result: [Int] = []
        result.reserveCapacity(rows.count)
        /// Whether a row past the cached page, held without a column the read filters on, may match.
        var mayFillPage = false
        for index in rows.indices where !rows[index].isDeleted {
            // A cached row no write touched passed the server's own filters.
            if rows[index].cachedIndex != nil, rows[index].changed.isEmpty, !rows[index].mayBeDeleted {
                result.append(index)
                continue
            }
            let row = rows[index]
            if row.isOutside, row.changed.isEmpty, !row.mayBeDeleted, !cached.answersFromRelated {
                // Left out by the server and untouched: it fails the filters, or lies past a
                // full page, where it may now fill a gap. One another answer holds without a
                // column the read filters on may or may not match: it may fill the gap.
                if let limit = query.limit, cached.cachedCount >= limit {
                    switch cached.readTruth(on: row) {
                    case .yes: result.append(index)
                    case .unknown: mayFillPage = true
                    case .no, .null: break
                    }
                }
                continue
            }
            switch cached.readTruth(on: row) {
            case .yes where row.mayBeDeleted, .unknown where row.mayBeDeleted:
                note(.rowMayBeDeleted)
                result.append(index)
            case .yes:
                if row.mayBeSkipped {
                    note(.insertMayBeSkipped)
                }
                result.append(index)
            case .unknown:
                note(cached.unknownFilterReason(on: row))
                result.append(index)
            case .no, .null: break
            }
        }
        let kinds = order(&result)
        applyPage(to: &result, mayFillPage: mayFillPage)
        let answer = answer(showing: result)
        guard reasons.isEmpty, query.limit == nil, query.offset == nil, cached.relatedAreEmpty, let kinds else {
            return (answer, nil)
        }
        return (answer, ShownRows(order: result, kinds: kinds))
    }

    /// The answer showing the rows at `shown` (indices in `rows`), in that order.
    private mutating func answer(showing shown: [Int]) -> OverlayAnswer {
        OverlayAnswer(
            body: project(shown), inexactReasons: reasons,
            pendingRows: shown.filter { !rows[$0].pendingIDs.isEmpty }.map {
                PendingRow(key: rows[$0].values[cached.table.primaryKey]?.text, writeIDs: rows[$0].pendingIDs)
            }, changedByPendingWrites: changedByPending, rowCountChange: rowCountChange)
    }

    /// The answer after writes that touched only the rows in ``touched``, derived from the rows
    /// the last answer showed: each touched row is taken out, evaluated as ``evaluateRead()``
    /// evaluates a written row, and put back in its place, by binary search. O(t log n)
    /// comparisons for t touched rows, then the body written again (untouched rows are copies of
    /// their cached text). The same answer ``evaluateRead()`` gives; `nil` when it cannot tell
    /// that way: a reason met (an inexact answer takes the full read, so its reasons come in the
    /// same order), or a row that does not keep to what the order needs.
    func updatedAnswer(from shown: ShownRows) -> (answer: OverlayAnswer, shown: ShownRows)? {
        guard reasons.isEmpty else { return nil }
        let moved = Set(touched)
        var order = shown.order.filter { !moved.contains($0) }
        var kinds = shown.kinds
        for index in moved.sorted() {
            let row = rows[index]
            guard !row.isDeleted else { continue }
            guard !row.mayBeDeleted, !row.mayBeSkipped, !row.isOutside else { return nil }
            if row.cachedIndex == nil || !row.changed.isEmpty {
                switch cached.readTruth(on: row) {
                case .yes: break
                case .no, .null: continue
                case .unknown: return nil
                }
            }
            var (low, high) = (0, order.count)
            if query.order.isEmpty {
                // Rows in the order they came in, as the full read leaves them.
                while low < high {
                    let middle = (low + high) / 2
                    if order[middle] < index { low = middle + 1 } else { high = middle }
                }
            } else {
                for term in query.order {
                    guard let value = row.values[term.column],
                        let kind = cached.orderKind(of: value, column: term.column)
                    else { return nil }
                    guard let kind else { continue }
                    if let known = kinds[term.column], known != kind { return nil }
                    kinds[term.column] = kind
                }
                while low < high {
                    let middle = (low + high) / 2
                    if cached.precedes(rows[order[middle]], row) { low = middle + 1 } else { high = middle }
                }
            }
            order.insert(index, at: low)
        }
        var evaluation = self
        let answer = evaluation.answer(showing: order)
        guard evaluation.reasons.isEmpty else { return nil }
        return (answer, ShownRows(order: order, kinds: kinds))
    }

    // MARK: - Order

    /// Sorts by the read's `order` when a write may have moved a row; cached rows otherwise
    /// keep the server's order. Returns the kinds of value the order columns hold when every
    /// row keeps to one per column and the rows are in order with ties by ordinal (what a later
    /// answer can keep by moving rows alone), `nil` when it sorted every row.
    private mutating func order(_ result: inout [Int]) -> [String: OverlayCachedAnswer.OrderKind]? {
        let orderColumns = cached.orderColumns
        func moved(_ index: Int) -> Bool {
            rows[index].cachedIndex == nil || !rows[index].changed.isDisjoint(with: orderColumns)
        }
        guard !query.order.isEmpty else { return [:] }
        guard cached.mergesMovedRows, cached.cachedRowsFollowOrder else {
            if result.contains(where: moved) { sortAll(&result) }
            return nil
        }
        guard result.contains(where: moved) else { return cached.orderKinds }
        if let (merged, kinds) = merged(result, moved: moved) {
            result = merged
            return kinds
        }
        sortAll(&result)
        return nil
    }

    /// Sorts every row by the read's order, ties by ordinal; an unknown comparison makes the
    /// answer inexact.
    private mutating func sortAll(_ result: inout [Int]) {
        var unknown = false
        result.sort { a, b in
            switch cached.compareByOrder(rows[a], rows[b]) {
            case .orderedAscending?: return true
            case .orderedDescending?: return false
            case .orderedSame?: return a < b
            case nil:
                unknown = true
                return a < b
            }
        }
        if unknown {
            note(.orderUnknown)
        }
    }

    /// `result` in order with only the moved rows sorted, each merged into the cached rows (in
    /// order already, ``cachedRowsFollowOrder``) by binary search: O(k log n) comparisons for k
    /// moved rows. The same order the full sort gives, which is unique: with every row holding
    /// one kind of value per order column no comparison is unknown, and ties go by ordinal.
    /// `nil` when a moved row breaks that (a missing column, another kind): then sort all.
    private func merged(
        _ result: [Int], moved isMoved: (Int) -> Bool
    ) -> ([Int], [String: OverlayCachedAnswer.OrderKind])? {
        var staying: [Int] = []
        var moved: [Int] = []
        staying.reserveCapacity(result.count)
        var kinds = cached.orderKinds
        for index in result {
            guard isMoved(index) else {
                staying.append(index)
                continue
            }
            for term in query.order {
                guard let value = rows[index].values[term.column],
                    let kind = cached.orderKind(of: value, column: term.column)
                else { return nil }
                guard let kind else { continue }
                if let known = kinds[term.column], known != kind { return nil }
                kinds[term.column] = kind
            }
            moved.append(index)
        }
        moved.sort { cached.precedes(rows[$0], rows[$1]) }
        var merged: [Int] = []
        merged.reserveCapacity(result.count)
        var next = 0
        for index in moved {
            // The first staying row that does not precede the moved one.
            var (low, high) = (next, staying.count)
            while low < high {
                let middle = (low + high) / 2
                if cached.precedes(rows[staying[middle]], rows[index]) { low = middle + 1 } else { high = middle }
            }
            merged.append(contentsOf: staying[next..<low])
            merged.append(index)
            next = low
        }
        merged.append(contentsOf: staying[next...])
        return (merged, kinds)
    }

    // MARK: - Page

    /// `limit` and `offset`: the cached rows were one page; a page that was full and lost rows
    /// may take rows past it that the cache never saw.
    private mutating func applyPage(to result: inout [Int], mayFillPage: Bool) {
        if cached.answersFromRelated {
            applyPageOverEveryRow(to: &result)
            return
        }
        guard let limit = query.limit else { return }
        if query.order.isEmpty, rows.count > limit || cached.cachedCount >= limit {
            note(.limitWithoutOrder)
        } else if cached.hasCache, cached.cachedCount >= limit, !cached.holdsEveryRow || mayFillPage {
            if let edge = cached.pageEdge {
                let within = result.filter { index in
                    if rows[index].cachedIndex != nil, rows[index].changed.isDisjoint(with: cached.orderColumns) {
                        return true
                    }
                    guard let order = cached.compareByOrder(rows[index], edge) else { return false }
                    return order != .orderedDescending
                }
                if within.count < limit {
                    note(.pageMayTakeRowsPastIt(limit: limit))
                }
            }
        }
        if result.count > limit { result.removeLast(result.count - limit) }
    }

    /// `offset` and `limit` over every row of the table (``OverlayCachedAnswer/answersFromRelated``):
    /// exact when the order is total over the rows the page cuts, PostgreSQL's choice otherwise
    /// (no order, or two rows the order ties across the page's edge).
    private mutating func applyPageOverEveryRow(to result: inout [Int]) {
        let offset = query.offset ?? 0
        let limit = query.limit
        guard offset > 0 || limit.map({ $0 < result.count }) == true else { return }
        // A page of no rows, or of every row, is the same in any order.
        let pageIsEmpty = limit == 0 || offset >= result.count
        let pageIsEveryRow = offset == 0 && limit.map { $0 >= result.count } != false
        if pageIsEmpty || pageIsEveryRow {
            // Nothing depends on which rows PostgreSQL picks.
        } else if query.order.isEmpty {
            note(.limitWithoutOrder)
        } else {
            // A tie across an edge of the page: which row is in it is PostgreSQL's choice.
            for edge in [offset, limit.map { offset + $0 }].compactMap({ $0 }) where edge > 0 && edge < result.count {
                if cached.compareByOrder(rows[result[edge - 1]], rows[result[edge]]) != .orderedAscending {
                    note(.limitWithoutOrder)
                }
            }
        }
        result.removeFirst(min(offset, result.count))
        if let limit, result.count > limit { result.removeLast(result.count - limit) }
    }

    mutating func note(_ reason: InexactReason) {
        if !reasons.contains(reason) { reasons.append(reason) }
    }
}
