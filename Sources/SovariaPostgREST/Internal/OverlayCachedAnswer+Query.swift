import Foundation
import SovariaPlumbing
import SovariaSync

/// The read's order and filters over an answer's rows: the kinds of value the order columns
/// hold, two rows compared by the order, and a row's truth under the filters.
extension OverlayCachedAnswer {
    /// The kinds of value the order columns hold when the cached rows are in the read's order
    /// (``cachedRowsFollowOrder``): every row holds every order column, one kind of value per
    /// column, each row at or after the one before it; `nil` otherwise. O(n), once per cached
    /// answer.
    static func cachedOrderKinds(
        of rows: [OverlayRows.Row], query: PostgRESTQuery, comparison: PostgRESTComparison, orderIsNotText: [Bool]
    ) -> [String: OrderKind]? {
        guard !query.order.isEmpty else { return nil }
        var kinds: [String: OrderKind] = [:]
        for term in query.order {
            var known: OrderKind?
            for index in rows.indices {
                guard let value = rows[index].values[term.column],
                    let kind = orderKind(of: value, column: term.column, comparison: comparison)
                else { return nil }
                guard let kind else { continue }
                if let known, known != kind { return nil }
                known = kind
            }
            if let known { kinds[term.column] = known }
        }
        for index in rows.indices.dropFirst() {
            guard
                let order = compareByOrder(
                    rows[index - 1], rows[index], query: query, comparison: comparison, orderIsNotText: orderIsNotText),
                order != .orderedDescending
            else {
                return nil
            }
        }
        return kinds
    }

    /// The kind of an order column's value when two values of it always compare: `.some(nil)`
    /// for `null` (it compares with anything), `nil` for a value that may not compare (an array,
    /// an object, text under an unknown text order or in a column whose order is not its text's).
    func orderKind(of value: JSONValue, column: String) -> OrderKind?? {
        Self.orderKind(of: value, column: column, comparison: comparison)
    }

    static func orderKind(of value: JSONValue, column: String, comparison: PostgRESTComparison) -> OrderKind?? {
        switch value {
        case .null: .some(nil)
        case .bool: .boolean
        case .number: value.numericValue == nil ? nil : .number
        case .string:
            comparison.textOrderIsBytes && !comparison.nonTextColumns.contains(column) ? .string : nil
        case .array, .object: nil
        }
    }

    /// `a` against `b` by the read's order terms; `nil` when a value is missing or not comparable.
    func compareByOrder(_ a: OverlayRows.Row, _ b: OverlayRows.Row) -> ComparisonResult? {
        Self.compareByOrder(a, b, query: query, comparison: comparison, orderIsNotText: orderIsNotText)
    }

    static func compareByOrder(
        _ a: OverlayRows.Row, _ b: OverlayRows.Row, query: PostgRESTQuery, comparison: PostgRESTComparison,
        orderIsNotText: [Bool]
    ) -> ComparisonResult? {
        for (term, isNotText) in zip(query.order, orderIsNotText) {
            guard let left = a.values[term.column], let right = b.values[term.column] else { return nil }
            let order: ComparisonResult
            switch (left, right) {
            case (.null, .null): continue
            case (.null, _): order = term.nullsFirst ? .orderedAscending : .orderedDescending
            case (_, .null): order = term.nullsFirst ? .orderedDescending : .orderedAscending
            default:
                if isNotText, case .string = left, !left.isEquivalent(to: right) {
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

    /// Whether `a` comes before `b`: by the read's order, then by ordinal.
    func precedes(_ a: OverlayRows.Row, _ b: OverlayRows.Row) -> Bool {
        switch compareByOrder(a, b) {
        case .orderedAscending?: true
        case .orderedDescending?: false
        case .orderedSame?, nil: a.ordinal < b.ordinal
        }
    }

    /// Why the read's filters cannot be evaluated on `row`: a column it lacks, or a value only
    /// PostgreSQL compares.
    func unknownFilterReason(on row: OverlayRows.Row) -> InexactReason {
        var conditions = query.filters
        func collect(_ tree: PostgRESTQuery.LogicTree) {
            switch tree {
            case .condition(let condition): conditions.append(condition)
            case .all(let trees, _), .any(let trees, _): trees.forEach(collect)
            }
        }
        query.logic.forEach(collect)
        for condition in conditions {
            guard let value = row.values[condition.column] else { continue }
            guard comparison.evaluate(condition, on: value) == .unknown else { continue }
            switch value {
            case .string where comparison.nonTextColumns.contains(condition.column), .array, .object:
                return .columnTypeNotEvaluated(column: condition.column)
            default: continue
            }
        }
        return .filterOnWrittenRowUnknown
    }

    /// Whether `row` passes the read's filters and its `or=`/`and=` trees.
    func readTruth(on row: OverlayRows.Row) -> Truth {
        let filtered = truth(of: query.filters, on: row)
        guard !query.logic.isEmpty, filtered != .no else { return filtered }
        let trees = query.logic.map { truth(of: $0, on: row) }
        switch Truth.all([filtered] + trees) {
        case .null: return .no
        case let truth: return truth
        }
    }

    func truth(of tree: PostgRESTQuery.LogicTree, on row: OverlayRows.Row) -> Truth {
        switch tree {
        case .condition(let condition):
            return row.values[condition.column].map { comparison.evaluate(condition, on: $0) } ?? .unknown
        case .all(let trees, let negated):
            let truth = Truth.all(trees.map { self.truth(of: $0, on: row) })
            return negated ? truth.negated : truth
        case .any(let trees, let negated):
            let truth = Truth.any(trees.map { self.truth(of: $0, on: row) })
            return negated ? truth.negated : truth
        }
    }

    /// The AND of `filters` on `row`.
    func truth(of filters: [PostgRESTQuery.Condition], on row: OverlayRows.Row) -> Truth {
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

    func truth(of filter: PostgRESTQuery.Condition, on row: OverlayRows.Row) -> Truth {
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
}
