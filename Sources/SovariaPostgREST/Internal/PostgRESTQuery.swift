import Foundation
import SovariaSync

/// A PostgREST query string taken apart: the `select` list, the horizontal filters, `order`,
/// `limit` and `offset`. Whatever the overlay does not understand is kept as a reason, so the
/// answer can say why it is not exact instead of guessing.
struct PostgRESTQuery: Sendable {
    /// `nil` for `*` (every column).
    var columns: [String]?
    /// The `select` items with an alias, a cast or a JSON path (`nil` when every item is a plain
    /// column): what each shows under which name.
    var selectItems: [SelectItem]?
    var filters: [Condition] = []
    /// The `or=` and `and=` parameters (each with `not.`), ANDed with ``filters``.
    var logic: [LogicTree] = []
    var order: [OrderTerm] = []
    var limit: Int?
    var offset: Int?
    /// Parts the overlay cannot evaluate (an embedded resource, an unknown operator…), each as
    /// its reason.
    var unsupported: [InexactReason] = []

    /// One `select` item: `[alias:]column[->key…|->>key][::cast]`.
    struct SelectItem: Sendable, Hashable {
        var name: String
        var column: String
        /// The JSON path after the column: each key (or array index) and whether it is `->>`.
        var path: [(key: String, asText: Bool)]
        var cast: String?

        static func == (a: SelectItem, b: SelectItem) -> Bool {
            a.name == b.name && a.column == b.column && a.cast == b.cast && a.path.map(\.key) == b.path.map(\.key)
                && a.path.map(\.asText) == b.path.map(\.asText)
        }
        func hash(into hasher: inout Hasher) { hasher.combine(name) }
    }

    /// An `or=`/`and=` tree: conditions and nested trees, each possibly negated.
    indirect enum LogicTree: Sendable, Hashable {
        case condition(Condition)
        case all([LogicTree], negated: Bool)
        case any([LogicTree], negated: Bool)

        /// Every column the tree filters on.
        var columns: Set<String> {
            switch self {
            case .condition(let condition): [condition.column]
            case .all(let trees, _), .any(let trees, _): trees.reduce(into: []) { $0.formUnion($1.columns) }
            }
        }
    }

    /// One `column=[not.]operator.operand` filter.
    struct Condition: Sendable, Hashable {
        enum Operator: String, Sendable {
            case eq, neq, gt, gte, lt, lte, like, ilike, `in`, `is`, isdistinct, cs, cd, ov
        }
        /// `eq(any).{…}`, `like(all).{…}`: the operator over each item of a list.
        enum Quantifier: String, Sendable, CaseIterable { case any, all }
        var column: String
        var negated: Bool
        var op: Operator
        var quantifier: Quantifier? = nil
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
        // Split at bytes, as PostgREST splits a query string (a `&` a combining mark follows is
        // still one), and without a Character walk: a read's query is taken apart at every
        // first read of it.
        let bytes = path.utf8
        guard let mark = bytes.firstIndex(of: UInt8(ascii: "?")) else { return }
        for item in bytes[bytes.index(after: mark)...].split(separator: UInt8(ascii: "&")) {
            let equals = item.firstIndex(of: UInt8(ascii: "="))
            let key = Self.decode(Substring(item[..<(equals ?? item.endIndex)]))
            let value = equals.map { Self.decode(Substring(item[item.index(after: $0)...])) } ?? ""
            take(key, value)
        }
    }

    /// The page a `Range: first-[last]` header asks for, within the query's own `offset` and
    /// `limit` (PostgREST takes the intersection of the two).
    mutating func restrict(toRangeHeader header: String) {
        let parts = header.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int(parts[0]), first >= 0 else {
            unsupported.append(.unsupportedReadFeature("Range: \(header)"))
            return
        }
        let last = parts[1].isEmpty ? nil : Int(parts[1])
        if !parts[1].isEmpty, last == nil {
            unsupported.append(.unsupportedReadFeature("Range: \(header)"))
            return
        }
        if let last, last < first {
            unsupported.append(.refusedRead("Range: \(header)"))
            return
        }
        let start = max(first, offset ?? 0)
        var end = last
        if let limit {
            let queryEnd = (offset ?? 0) + limit - 1
            end = end.map { min($0, queryEnd) } ?? queryEnd
        }
        offset = start
        limit = end.map { max($0 - start + 1, 0) }
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
            let items = Substring(value).split(atByte: UInt8(ascii: ","), omittingEmptyParts: false).map(
                Self.trimmingWhitespace)
            if value.isEmpty {
                columns = nil
            } else if items.contains("") {
                unsupported.append(.refusedRead("select=\(value) (an empty column)"))
            } else if items.contains("*") {
                if items.count > 1 { unsupported.append(.unsupportedReadFeature("select=\(value)")) }
                columns = nil
            } else if items.allSatisfy(Self.isPlainColumn) {
                columns = items
            } else if let parsed = Self.selectItems(items) {
                columns = parsed.map(\.column)
                selectItems = parsed
            } else if items.contains(where: { $0.contains("(") || $0.contains("!") }) {
                unsupported.append(.unsupportedReadFeature("select=\(value) (embedded resources)"))
            } else {
                unsupported.append(
                    .unsupportedReadFeature("select=\(value) (a cast or JSON path the overlay cannot write)"))
            }
        case "order":
            // `order=` or an empty term is PostgREST's parse error, not "no order".
            let terms = Substring(value).split(atByte: UInt8(ascii: ","), omittingEmptyParts: false)
            guard !terms.contains(where: \.isEmpty) else {
                unsupported.append(.refusedRead("order=\(value)"))
                return
            }
            for term in terms {
                let parts = term.split(atByte: UInt8(ascii: "."), omittingEmptyParts: true).map(String.init)
                guard let column = parts.first, Self.isPlainColumn(column) else {
                    unsupported.append(.unsupportedReadFeature("order=\(value)"))
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
                        unsupported.append(.refusedRead("order=\(value)"))
                        return
                    }
                }
                order.append(OrderTerm(column: column, descending: descending, nullsFirst: nullsFirst ?? descending))
            }
        case "limit", "offset":
            guard let number = Int(value) else {
                unsupported.append(.refusedRead("\(key)=\(value)"))
                return
            }
            // PostgREST refuses a negative limit (416) and reads a negative offset as none.
            if key == "limit" {
                if number < 0 { unsupported.append(.refusedRead("\(key)=\(value)")) } else { limit = number }
            } else {
                offset = max(number, 0)
            }
        case "columns", "on_conflict":
            unsupported.append(.unsupportedReadFeature("\(key)=\(value)"))
        case "or", "and", "not.or", "not.and":
            guard let tree = LogicTreeParser.parse(key, value) else {
                unsupported.append(.refusedRead("\(key)=\(value)"))
                return
            }
            switch Self.serverOnlyReason(of: tree) {
            case let reason?: unsupported.append(reason)
            case nil: logic.append(tree)
            }
        default:
            // An empty operand (`title=eq.`) is a comparison with '' for text and PostgreSQL's
            // error for other types: the overlay does not know the column's type.
            guard Self.isPlainColumn(key) else {
                unsupported.append(.unsupportedReadFeature("\(key)=\(value)"))
                return
            }
            if let reason = Self.serverOnlyReason(key, value) {
                unsupported.append(reason)
                return
            }
            guard let condition = Self.condition(key, value) else {
                // No operator PostgREST knows (`id=0`, `id=foo.1`): its parse error (400).
                unsupported.append(.refusedRead("\(key)=\(value)"))
                return
            }
            if condition.op == .is,
                !["null", "not_null", "true", "false", "unknown"].contains(condition.operand.lowercased())
            {
                unsupported.append(.refusedRead("\(key)=\(value)"))  // PostgREST's 400
                return
            }
            guard !condition.operand.isEmpty else {
                unsupported.append(.unsupportedReadFeature("\(key)=\(value)"))
                return
            }
            filters.append(condition)
        }
    }

    /// The reason a filter only PostgreSQL can evaluate is left to it: full-text search, a
    /// regular expression, a range type's own operators; `nil` for any other.
    static func serverOnlyReason(_ column: String, _ condition: String) -> InexactReason? {
        var rest = Substring(condition)
        if rest.startsWithBytes(of: "not.") { rest = rest.droppingFirstBytes(4) }
        let op = rest[..<(rest.utf8.firstIndex { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "(") } ?? rest.endIndex)]
        switch op {
        case "fts", "plfts", "phfts", "wfts": return .fullTextSearch(column: column)
        case "match", "imatch": return .regularExpression(column: column)
        case "sl", "sr", "nxl", "nxr", "adj": return .rangeOperator(column: column)
        default: return nil
        }
    }

    static func serverOnlyReason(of tree: LogicTree) -> InexactReason? {
        switch tree {
        case .condition(let condition): return serverOnlyReason(condition.column, condition.condition)
        case .all(let trees, _), .any(let trees, _):
            for tree in trees { if let reason = serverOnlyReason(of: tree) { return reason } }
            return nil
        }
    }

    /// The items of a `select` with aliases, casts and JSON paths, each `[alias:]column[path][::cast]`;
    /// `nil` when one is anything else (an embedded resource, a spread, an empty name).
    static func selectItems(_ items: [String]) -> [SelectItem]? {
        var result: [SelectItem] = []
        for item in items {
            var text = Substring(item)
            var alias: String?
            // `alias:column`, not the `::` of a cast.
            if let colon = text.firstIndex(ofByte: UInt8(ascii: ":")),
                text.after(byteAt: colon).utf8.first != UInt8(ascii: ":")
            {
                alias = String(text[..<colon])
                text = text.after(byteAt: colon)
            }
            var cast: String?
            if let range = text.range(ofBytes: "::") {
                cast = String(text[range.upperBound...]).trimmingCharacters(in: .whitespaces)
                text = text[..<range.lowerBound]
            }
            var path: [(key: String, asText: Bool)] = []
            var column = text
            if let arrow = text.range(ofBytes: "->") {
                column = text[..<arrow.lowerBound]
                var rest = text[arrow.lowerBound...]
                while !rest.isEmpty {
                    let asText = rest.startsWithBytes(of: "->>")
                    guard rest.startsWithBytes(of: "->") else { return nil }
                    rest = rest.droppingFirstBytes(asText ? 3 : 2)
                    let end = rest.range(ofBytes: "->")?.lowerBound ?? rest.endIndex
                    let key = String(rest[..<end])
                    guard !key.isEmpty, !(path.last?.asText ?? false) else { return nil }
                    path.append((key, asText))
                    rest = rest[end...]
                }
            }
            let name = String(column)
            guard isPlainColumn(name), alias.map(isPlainColumn) != false, cast.map({ !$0.isEmpty }) != false else {
                return nil
            }
            // PostgREST names a JSON path's value by its last key.
            result.append(SelectItem(name: alias ?? path.last?.key ?? name, column: name, path: path, cast: cast))
        }
        return result
    }

    /// A column name without alias, cast, JSON path or embedding: none of the bytes of aliases,
    /// casts and embedding, `:()!*`, and no `->` (a `-` alone is a name's, `field-with_sep`).
    static func isPlainColumn(_ name: String) -> Bool {
        guard !name.isEmpty, name != "or", name != "and", name != "not" else { return false }
        // Byte by byte: a read's query is taken apart at every first read of it, and Foundation's
        // `contains` cost more than the rest of the parse.
        var afterDash = false
        for byte in name.utf8 {
            switch byte {
            case UInt8(ascii: ":"), UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: "!"), UInt8(ascii: "*"):
                return false
            case UInt8(ascii: ">") where afterDash: return false
            default: afterDash = byte == UInt8(ascii: "-")
            }
        }
        return true
    }

    /// `text` without the whitespace at its ends, as Foundation's `trimmingCharacters(in:
    /// .whitespaces)` takes it (tabs and Unicode's space separators), asked of Foundation only
    /// where an end is not a plain ASCII byte.
    static func trimmingWhitespace(_ text: Substring) -> String {
        func plain(_ byte: UInt8?) -> Bool {
            byte.map { $0 < 0x80 && $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: "\t") } ?? true
        }
        guard plain(text.utf8.first), plain(text.utf8.last) else { return text.trimmingCharacters(in: .whitespaces) }
        return String(text)
    }

    static func condition(_ column: String, _ text: String) -> Condition? {
        var rest = Substring(text)
        var negated = false
        if rest.startsWithBytes(of: "not.") {
            negated = true
            rest = rest.droppingFirstBytes(4)
        }
        guard let dot = rest.firstIndex(ofByte: UInt8(ascii: ".")) else { return nil }
        var name = rest[..<dot]
        var quantifier: Condition.Quantifier?
        // A modifier ends in `)`: no other name is matched against each (a filter is parsed at every
        // first read of its query).
        if name.utf8.last == UInt8(ascii: ")"),
            let modifier = Condition.Quantifier.allCases.first(where: { name.endsWithBytes(of: "(\($0.rawValue))") })
        {
            quantifier = modifier
            name = name.droppingLastBytes(modifier.rawValue.utf8.count + 2)
        }
        guard let op = Condition.Operator(rawValue: String(name)) else { return nil }
        if quantifier != nil {
            // PostgREST takes the modifiers on these operators only.
            guard [.eq, .neq, .gt, .gte, .lt, .lte, .like, .ilike].contains(op) else { return nil }
        }
        return Condition(
            column: column, negated: negated, op: op, quantifier: quantifier,
            operand: String(rest.after(byteAt: dot)), condition: text)
    }

    /// Every column the filters and the order name.
    var filterColumns: Set<String> { logic.reduce(into: Set(filters.map(\.column))) { $0.formUnion($1.columns) } }
    var orderColumns: Set<String> { Set(order.map(\.column)) }
}

extension PostgRESTQuery.Condition {
    /// The same filter as `eq` of one operand.
    func with(operand: String) -> PostgRESTQuery.Condition {
        PostgRESTQuery.Condition(column: column, negated: false, op: .eq, operand: operand, condition: "eq." + operand)
    }

    /// The operand of `in.(…)` as a list: comma-separated, each item optionally double-quoted
    /// (with `\` escaping), as PostgREST reads it; `nil` when it is not a list. Read by code
    /// points, as PostgREST reads it: a `,` or `"` a combining mark follows is still one.
    var listItems: [String]? {
        let scalars = operand.unicodeScalars
        guard scalars.first == "(", scalars.last == ")", scalars.count >= 2 else { return nil }
        var items: [String] = []
        var current = String.UnicodeScalarView()
        var quoted = false
        var wasQuoted = false
        var escaped = false
        func item() -> String {
            wasQuoted ? String(current) : String(current).trimmingCharacters(in: .whitespaces)
        }
        for scalar in scalars.dropFirst().dropLast() {
            if escaped {
                current.append(scalar)
                escaped = false
            } else if quoted {
                if scalar == "\\" {
                    escaped = true
                } else if scalar == "\"" {
                    quoted = false
                } else {
                    current.append(scalar)
                }
            } else if scalar == "\"" {
                quoted = true
                wasQuoted = true
            } else if scalar == "," {
                items.append(item())
                current = String.UnicodeScalarView()
                wasQuoted = false
            } else {
                current.append(scalar)
            }
        }
        guard !quoted else { return nil }
        if !current.isEmpty || wasQuoted || !items.isEmpty { items.append(item()) }
        return items
    }
}
