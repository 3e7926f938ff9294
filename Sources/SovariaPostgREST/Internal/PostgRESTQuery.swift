import Foundation

/// A PostgREST query string taken apart: the `select` list, the horizontal filters, `order`,
/// `limit` and `offset`. Whatever the overlay does not understand is kept as a reason, so the
/// answer can say why it is not exact instead of guessing.
struct PostgRESTQuery: Sendable {
    /// `nil` for `*` (every column).
    var columns: [String]?
    var filters: [Condition] = []
    var order: [OrderTerm] = []
    var limit: Int?
    var offset: Int?
    /// Parts the overlay cannot evaluate (an embedded resource, `or=`, an unknown operator…).
    var unsupported: [String] = []

    /// One `column=[not.]operator.operand` filter.
    struct Condition: Sendable, Hashable {
        enum Operator: String, Sendable {
            case eq, neq, gt, gte, lt, lte, like, ilike, `in`, `is`
        }
        var column: String
        var negated: Bool
        var op: Operator
        var operand: String
        /// The filter as written after `column=`, to recognise the same filter in two requests.
        var condition: String
    }

    /// One `order` term: `column[.asc|.desc][.nullsfirst|.nullslast]`.
    struct OrderTerm: Sendable, Hashable {
        var column: String
        var descending: Bool
        /// PostgreSQL's default: nulls last ascending, first descending.
        var nullsFirst: Bool
    }

    /// The query of `path` (after `?`), percent-decoded as PostgREST does.
    init(path: String) {
        guard let mark = path.firstIndex(of: "?") else { return }
        for item in path[path.index(after: mark)...].split(separator: "&", omittingEmptySubsequences: true) {
            let pair = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = Self.decode(pair[0])
            let value = pair.count > 1 ? Self.decode(pair[1]) : ""
            take(key, value)
        }
    }

    /// `+` is a space, then `%XX` escapes, as a query string is read.
    static func decode(_ text: Substring) -> String {
        // Most names and values have neither: no Foundation round trip for them.
        guard text.utf8.contains(where: { $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: "%") }) else {
            return String(text)
        }
        let spaced = text.replacingOccurrences(of: "+", with: " ")
        return spaced.removingPercentEncoding ?? spaced
    }

    private mutating func take(_ key: String, _ value: String) {
        switch key {
        case "select":
            // PostgREST reads an empty `select` as `*` (its QuerySpec: "empty root select gives
            // all columns"); an empty item between commas is its parse error (400).
            let items = value.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            if value.isEmpty {
                columns = nil
            } else if items.contains("") {
                unsupported.append("select=\(value) (an empty column)")
            } else if items.contains("*") {
                if items.count > 1 { unsupported.append("select=\(value)") }
                columns = nil
            } else if items.allSatisfy(Self.isPlainColumn) {
                columns = items
            } else {
                unsupported.append("select=\(value) (aliases, casts, JSON paths and embedded resources)")
            }
        case "order":
            // `order=` or an empty term is PostgREST's parse error, not "no order".
            let terms = value.split(separator: ",", omittingEmptySubsequences: false)
            guard !terms.contains(where: \.isEmpty) else {
                unsupported.append("order=\(value)")
                return
            }
            for term in terms {
                let parts = term.split(separator: ".").map(String.init)
                guard let column = parts.first, Self.isPlainColumn(column) else {
                    unsupported.append("order=\(value)")
                    return
                }
                var descending = false
                var nullsFirst: Bool?
                for modifier in parts.dropFirst() {
                    switch modifier {
                    case "asc": descending = false
                    case "desc": descending = true
                    case "nullsfirst": nullsFirst = true
                    case "nullslast": nullsFirst = false
                    default:
                        unsupported.append("order=\(value)")
                        return
                    }
                }
                order.append(OrderTerm(column: column, descending: descending, nullsFirst: nullsFirst ?? descending))
            }
        case "limit", "offset":
            guard let number = Int(value), number >= 0 else {
                unsupported.append("\(key)=\(value)")
                return
            }
            if key == "limit" { limit = number } else { offset = number }
        case "columns", "on_conflict":
            unsupported.append("\(key)=\(value)")
        default:
            // An empty operand (`title=eq.`) is a comparison with '' for text and PostgreSQL's
            // error for other types: the overlay does not know the column's type.
            guard Self.isPlainColumn(key), let condition = Self.condition(key, value),
                !condition.operand.isEmpty
            else {
                unsupported.append("\(key)=\(value)")
                return
            }
            filters.append(condition)
        }
    }

    /// A column name without alias, cast, JSON path or embedding.
    static func isPlainColumn(_ name: String) -> Bool {
        !name.isEmpty && !name.utf8.contains(where: { notInAPlainColumn.contains($0) })
            && name != "or" && name != "and" && name != "not"
    }

    /// The bytes of aliases, casts, JSON paths and embedding: `:()->!*`.
    private static let notInAPlainColumn = Set(":()->!*".utf8)

    static func condition(_ column: String, _ text: String) -> Condition? {
        var rest = Substring(text)
        var negated = false
        if rest.utf8.starts(with: "not.".utf8) {
            negated = true
            rest = rest.dropFirst(4)
        }
        guard let dot = rest.firstIndex(of: "."), let op = Condition.Operator(rawValue: String(rest[..<dot])) else {
            return nil
        }
        return Condition(
            column: column, negated: negated, op: op, operand: String(rest[rest.index(after: dot)...]), condition: text)
    }

    /// Every column the filters and the order name.
    var filterColumns: Set<String> { Set(filters.map(\.column)) }
    var orderColumns: Set<String> { Set(order.map(\.column)) }
}

extension PostgRESTQuery.Condition {
    /// The same filter as `eq` of one operand.
    func with(operand: String) -> PostgRESTQuery.Condition {
        PostgRESTQuery.Condition(column: column, negated: false, op: .eq, operand: operand, condition: "eq." + operand)
    }

    /// The operand of `in.(…)` as a list: comma-separated, each item optionally double-quoted
    /// (with `\` escaping), as PostgREST reads it; `nil` when it is not a list.
    var listItems: [String]? {
        guard operand.first == "(", operand.last == ")", operand.count >= 2 else { return nil }
        var items: [String] = []
        var current = ""
        var quoted = false
        var wasQuoted = false
        var escaped = false
        for character in operand.dropFirst().dropLast() {
            if escaped {
                current.append(character)
                escaped = false
            } else if quoted {
                if character == "\\" {
                    escaped = true
                } else if character == "\"" {
                    quoted = false
                } else {
                    current.append(character)
                }
            } else if character == "\"" {
                quoted = true
                wasQuoted = true
            } else if character == "," {
                items.append(wasQuoted ? current : current.trimmingCharacters(in: .whitespaces))
                current = ""
                wasQuoted = false
            } else {
                current.append(character)
            }
        }
        guard !quoted else { return nil }
        if !current.isEmpty || wasQuoted || !items.isEmpty {
            items.append(wasQuoted ? current : current.trimmingCharacters(in: .whitespaces))
        }
        return items
    }
}
