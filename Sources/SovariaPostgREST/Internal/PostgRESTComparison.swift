import Foundation
import SovariaPlumbing

/// SQL's three truth values, and a fourth for "the overlay cannot tell" (a column it does not
/// know, an operand PostgreSQL would refuse, text order under an unknown collation).
enum Truth: Sendable, Equatable {
    case yes, no, null, unknown

    var negated: Truth {
        switch self {
        case .yes: .no
        case .no: .yes
        case .null, .unknown: self
        }
    }

    /// SQL's AND: false wins, then "cannot tell", then null.
    static func all(_ truths: [Truth]) -> Truth {
        if truths.contains(.no) { return .no }
        if truths.contains(.unknown) { return .unknown }
        return truths.contains(.null) ? .null : .yes
    }

    /// SQL's OR: true wins, then "cannot tell", then null.
    static func any(_ truths: [Truth]) -> Truth {
        if truths.contains(.yes) { return .yes }
        if truths.contains(.unknown) { return .unknown }
        return truths.contains(.null) ? .null : .no
    }
}

/// PostgreSQL's comparisons of a column's JSON value with a filter's operand, and of two values
/// for `order`.
struct PostgRESTComparison: Sendable {
    /// Whether text is ordered by its UTF-8 bytes (the C collation) or by a collation the overlay
    /// does not know.
    let textOrderIsBytes: Bool
    /// String columns that are not text (timestamps, uuids, enums): only equal strings are sure.
    var nonTextColumns: Set<String> = []

    /// Whether `value` (`nil`: not known) passes `condition`.
    func evaluate(_ condition: PostgRESTQuery.Condition, on value: JSONValue?) -> Truth {
        guard let value else { return .unknown }
        if let quantifier = condition.quantifier {
            // `op(any).{a,b}`: the operator over each item, ORed (any) or ANDed (all), as SQL's
            // `= ANY('{a,b}')` does.
            guard let items = Self.arrayItems(condition.operand) else { return .unknown }
            var each = condition
            each.quantifier = nil
            each.negated = false
            let truths = items.map { item -> Truth in
                each.operand = item
                return evaluate(each, on: value)
            }
            let truth = quantifier == .any ? Truth.any(truths) : Truth.all(truths)
            return condition.negated ? truth.negated : truth
        }
        if case .string = value, nonTextColumns.contains(condition.column) {
            // Equal spellings are one value; anything else (another spelling, an order) is not sure.
            switch condition.op {
            case .eq, .in, .is:
                let truth = evaluateUnnegated(condition, value)
                if truth == .yes { return condition.negated ? .no : .yes }
                return condition.op == .is ? (condition.negated ? truth.negated : truth) : .unknown
            case .isdistinct:
                guard equals(value, condition.operand) == .yes else { return .unknown }
                return condition.negated ? .yes : .no
            default: return .unknown
            }
        }
        let truth = evaluateUnnegated(condition, value)
        return condition.negated ? truth.negated : truth
    }

    /// The items of a PostgreSQL array literal of scalars (`{1,2}`, `{"a,b",c}`); `nil` for a
    /// nested array, a `NULL` item or anything that is not such a literal.
    static func arrayItems(_ literal: String) -> [String]? {
        let trimmed = literal.trimmingCharacters(in: .whitespaces)
        guard trimmed.first == "{", trimmed.last == "}", trimmed.count >= 2 else { return nil }
        let inner = trimmed.dropFirst().dropLast()
        if inner.trimmingCharacters(in: .whitespaces).isEmpty { return [] }
        var items: [String] = []
        var current = ""
        var quoted = false
        var wasQuoted = false
        var escaped = false
        for character in inner {
            if escaped {
                current.append(character)
                escaped = false
            } else if character == "\\" {
                escaped = true
            } else if quoted {
                if character == "\"" { quoted = false } else { current.append(character) }
            } else if character == "\"" {
                quoted = true
                wasQuoted = true
            } else if character == "{" || character == "}" {
                return nil
            } else if character == "," {
                let item = wasQuoted ? current : current.trimmingCharacters(in: .whitespaces)
                guard wasQuoted || item.uppercased() != "NULL" else { return nil }
                items.append(item)
                current = ""
                wasQuoted = false
            } else {
                current.append(character)
            }
        }
        guard !quoted else { return nil }
        let item = wasQuoted ? current : current.trimmingCharacters(in: .whitespaces)
        guard wasQuoted || item.uppercased() != "NULL" else { return nil }
        items.append(item)
        return items
    }

    /// An array column's value against a literal's items: `=`, `@>`, `<@`, `&&` of scalars.
    private func evaluateArray(
        _ op: PostgRESTQuery.Condition.Operator, _ elements: [JSONValue], _ operand: String
    )
        -> Truth
    {
        guard let items = Self.arrayItems(operand), !elements.contains(where: { $0 == .null }) else { return .unknown }
        func member(_ element: JSONValue, of items: [String]) -> Truth { Truth.any(items.map { equals(element, $0) }) }
        switch op {
        case .eq, .neq, .isdistinct:
            let same: Truth =
                elements.count == items.count ? Truth.all(zip(elements, items).map { equals($0, $1) }) : .no
            return op == .eq ? same : same.negated
        case .cs: return Truth.all(items.map { item in Truth.any(elements.map { equals($0, item) }) })
        case .cd: return Truth.all(elements.map { member($0, of: items) })
        case .ov: return Truth.any(elements.map { member($0, of: items) })
        case .gt, .gte, .lt, .lte:
            // Element by element; equal up to the shorter one, the shorter is less.
            var order = ComparisonResult.orderedSame
            for (element, item) in zip(elements, items) {
                guard let compared = compare(element, item) else { return .unknown }
                if compared != .orderedSame {
                    order = compared
                    break
                }
            }
            if order == .orderedSame, elements.count != items.count {
                order = elements.count < items.count ? .orderedAscending : .orderedDescending
            }
            switch op {
            case .gt: return order == .orderedDescending ? .yes : .no
            case .gte: return order != .orderedAscending ? .yes : .no
            case .lt: return order == .orderedAscending ? .yes : .no
            default: return order != .orderedDescending ? .yes : .no
            }
        default: return .unknown
        }
    }

    private func evaluateUnnegated(_ condition: PostgRESTQuery.Condition, _ value: JSONValue) -> Truth {
        if condition.op == .is {
            switch (condition.operand.lowercased(), value) {
            case ("null", .null), ("unknown", .null): return .yes
            case ("null", _), ("unknown", .bool): return .no
            case ("not_null", .null): return .no
            case ("not_null", _): return .yes
            case ("true", .bool(let flag)): return flag ? .yes : .no
            case ("false", .bool(let flag)): return flag ? .no : .yes
            case ("true", .null), ("false", .null): return .no
            default: return .unknown
            }
        }
        if condition.op == .isdistinct {
            // `IS DISTINCT FROM` a value that is not null: a null is distinct, never null itself.
            if case .null = value { return .yes }
            if case .array(let elements) = value { return evaluateArray(.isdistinct, elements, condition.operand) }
            return equals(value, condition.operand).negated
        }
        if case .null = value { return .null }
        if case .array(let elements) = value {
            return evaluateArray(condition.op, elements, condition.operand)
        }
        switch condition.op {
        case .eq: return equals(value, condition.operand)
        case .neq: return equals(value, condition.operand).negated
        case .gt: return order(value, condition.operand) { $0 == .orderedDescending }
        case .gte: return order(value, condition.operand) { $0 != .orderedAscending }
        case .lt: return order(value, condition.operand) { $0 == .orderedAscending }
        case .lte: return order(value, condition.operand) { $0 != .orderedDescending }
        case .like, .ilike:
            guard case .string(let text) = value else { return .unknown }
            let pattern = condition.operand.replacingOccurrences(of: "*", with: "%")
            if condition.op == .ilike {
                // Case folding beyond ASCII depends on the database's locale.
                guard text.utf8.allSatisfy({ $0 < 0x80 }), pattern.utf8.allSatisfy({ $0 < 0x80 }) else {
                    return .unknown
                }
                return Self.like(Array(text.lowercased().unicodeScalars), Array(pattern.lowercased().unicodeScalars))
            }
            return Self.like(Array(text.unicodeScalars), Array(pattern.unicodeScalars))
        case .in:
            guard let items = condition.listItems else { return .unknown }
            var truth = Truth.no
            for item in items {
                switch equals(value, item) {
                case .yes: return .yes
                case .unknown: truth = .unknown
                default: break
                }
            }
            return truth
        case .is, .isdistinct, .cs, .cd, .ov: return .unknown
        }
    }

    /// `value = operand`, the operand read as the value's type.
    private func equals(_ value: JSONValue, _ operand: String) -> Truth {
        switch value {
        case .string(let text): return Self.compareBytes(text, operand) == .orderedSame ? .yes : .no
        case .number, .bool:
            guard let order = compare(value, operand) else { return .unknown }
            return order == .orderedSame ? .yes : .no
        default: return .unknown
        }
    }

    private func order(_ value: JSONValue, _ operand: String, _ passes: (ComparisonResult) -> Bool) -> Truth {
        guard let order = compare(value, operand) else { return .unknown }
        return passes(order) ? .yes : .no
    }

    /// `value` against the operand read as the value's type; `nil` when PostgreSQL would refuse
    /// the operand or the order is not known.
    private func compare(_ value: JSONValue, _ operand: String) -> ComparisonResult? {
        switch value {
        case .number(let text):
            // A plain operand (`5`, `-12`) read without the literal's copy of its bytes.
            if let number = Self.plainInteger(text),
                let other = Self.plainInteger(operand) ?? NumericLiteral(operand)?.integer
            {
                return number == other ? .orderedSame : (number < other ? .orderedAscending : .orderedDescending)
            }
            guard let number = value.numericValue, let other = Self.decimal(operand) else { return nil }
            // `1.5` or `1e0` against a column that may be an integer one: PostgreSQL refuses it there.
            guard Self.isWholeNumber(operand) || Self.isWrittenWithFraction(value) else { return nil }
            return Self.compare(number, other)
        case .bool(let flag):
            guard let other = Self.boolean(operand) else { return nil }
            return flag == other ? .orderedSame : (flag ? .orderedDescending : .orderedAscending)
        case .string(let text):
            guard textOrderIsBytes else { return nil }
            return Self.compareBytes(text, operand)
        default: return nil
        }
    }

    /// The order of two column values (neither null): `nil` when they are of different kinds or
    /// the text order is not known.
    func compare(_ left: JSONValue, _ right: JSONValue) -> ComparisonResult? {
        switch (left, right) {
        case (.number(let x), .number(let y)):
            if let a = Self.plainInteger(x), let b = Self.plainInteger(y) {
                return a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
            }
            guard let a = left.numericValue, let b = right.numericValue else { return nil }
            return Self.compare(a, b)
        case (.bool(let a), .bool(let b)):
            return a == b ? .orderedSame : (a ? .orderedDescending : .orderedAscending)
        case (.string(let a), .string(let b)):
            if textOrderIsBytes { return Self.compareBytes(a, b) }
            return a.hasSameUTF8Bytes(as: b) ? .orderedSame : nil
        default: return nil
        }
    }

    /// A JSON number that is an integer of at most 18 digits (exact in `Int64`, the same value as
    /// `Decimal` reads), else `nil`: the common case, compared without `Decimal`.
    static func plainInteger(_ text: String) -> Int64? {
        // One pass: 18 digits never overflow.
        var digits = 0
        var value: Int64 = 0
        var negative = false
        for (index, byte) in text.utf8.enumerated() {
            if index == 0, byte == UInt8(ascii: "-") {
                negative = true
                continue
            }
            guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte), digits < 18 else { return nil }
            digits += 1
            value = value * 10 + Int64(byte - UInt8(ascii: "0"))
        }
        guard digits > 0 else { return nil }
        return negative ? -value : value
    }

    static func compare(_ a: Decimal, _ b: Decimal) -> ComparisonResult {
        a == b ? .orderedSame : (a < b ? .orderedAscending : .orderedDescending)
    }

    static func compareBytes(_ a: String, _ b: String) -> ComparisonResult {
        let order = a.compareUTF8Bytes(with: b)
        return order == 0 ? .orderedSame : (order < 0 ? .orderedAscending : .orderedDescending)
    }

    /// A numeric operand as PostgreSQL's `numeric` input reads one: surrounding spaces, a sign,
    /// leading zeros, a fraction and an exponent allowed (`" 01"`, `"+1"`, `".5"`, `"1e1"`).
    static func decimal(_ text: String) -> Decimal? {
        guard let literal = NumericLiteral(text) else { return nil }
        return Decimal(string: literal.normalized, locale: JSONValue.posix)
    }

    /// Whether `text` is a whole number as PostgreSQL's integer input reads one (spaces, a sign,
    /// digits, leading zeros allowed): the same value in an integer and a `numeric` column. A
    /// fraction or an exponent is refused by an integer column and taken by a `numeric` one.
    static func isWholeNumber(_ text: String) -> Bool { NumericLiteral(text)?.isWhole == true }

    /// A JSON number that says its column is not an integer one (`2.5`, `1e3`): PostgreSQL prints
    /// integers as plain digits.
    static func isWrittenWithFraction(_ value: JSONValue) -> Bool {
        guard case .number(let text) = value else { return false }
        return text.utf8.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    /// A boolean operand in the spellings PostgreSQL accepts (a word's unambiguous prefix too).
    static func boolean(_ text: String) -> Bool? {
        switch text.trimmingCharacters(in: .whitespaces).lowercased() {
        case "t", "tr", "tru", "true", "y", "ye", "yes", "on", "1": true
        case "f", "fa", "fal", "fals", "false", "n", "no", "of", "off", "0": false
        default: nil
        }
    }

    /// SQL `LIKE`: `%` any run of characters, `_` one character, `\` escapes the next. A table of
    /// which pattern positions each text prefix reaches, row by row (no recursion: any length).
    static func like(_ text: [Unicode.Scalar], _ pattern: [Unicode.Scalar]) -> Truth {
        // The pattern as tokens: a literal, any one character, or any run.
        enum Token: Equatable { case literal(Unicode.Scalar), one, run }
        var tokens: [Token] = []
        var index = 0
        while index < pattern.count {
            switch pattern[index] {
            case "%": tokens.append(.run)
            case "_": tokens.append(.one)
            case "\\" where index + 1 < pattern.count:
                index += 1
                tokens.append(.literal(pattern[index]))
            default: tokens.append(.literal(pattern[index]))
            }
            index += 1
        }
        // reach[j]: the first j tokens match the text read so far.
        var reach = [Bool](repeating: false, count: tokens.count + 1)
        reach[0] = true
        for j in tokens.indices where tokens[j] == .run && reach[j] { reach[j + 1] = true }
        for character in text {
            var next = [Bool](repeating: false, count: tokens.count + 1)
            for j in tokens.indices where reach[j] {
                switch tokens[j] {
                case .run: next[j] = true
                case .one: next[j + 1] = true
                case .literal(let literal): if literal == character { next[j + 1] = true }
                }
            }
            for j in tokens.indices where tokens[j] == .run && next[j] { next[j + 1] = true }
            reach = next
        }
        return reach[tokens.count] ? .yes : .no
    }
}

/// A number as PostgreSQL's input functions read one: `[spaces][+|-](digits[.digits]|.digits)[e[+|-]digits][spaces]`.
struct NumericLiteral {
    /// The literal without spaces or a plus sign, for `Decimal(string:)`.
    let normalized: String
    /// Digits only (and a sign): no fraction, no exponent.
    let isWhole: Bool
    /// The value of a whole literal of at most 18 digits (exact in `Int64`), else `nil`.
    let integer: Int64?

    init?(_ text: String) {
        // PostgreSQL trims C's `isspace` only (space, \t, \n, \v, \f, \r), not Unicode spaces.
        // By hand: Foundation's trim cost more than the rest of a comparison.
        let spaces: [UInt8] = [0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D]
        var bytes = Array(text.utf8)
        while let last = bytes.last, spaces.contains(last) { bytes.removeLast() }
        let leading = bytes.prefix { spaces.contains($0) }.count
        if leading > 0 { bytes.removeFirst(leading) }
        var index = 0
        func digits() -> Int {
            let start = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - start
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
        var mantissaDigits = digits()
        var whole = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            mantissaDigits += digits()
            whole = false
        }
        guard mantissaDigits > 0 else { return nil }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() > 0 else { return nil }
            whole = false
        }
        guard index == bytes.count else { return nil }
        normalized = String(decoding: bytes.first == UInt8(ascii: "+") ? bytes.dropFirst() : bytes[...], as: UTF8.self)
        isWhole = whole
        integer = whole && mantissaDigits <= 18 ? Int64(normalized) : nil
    }
}
