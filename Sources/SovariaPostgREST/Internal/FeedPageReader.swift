import SovariaPlumbing
import SovariaSync

/// A page of the change feed read straight off its bytes: each element's position, key and
/// operation, and its row kept as the server wrote it (validated, not parsed: the overlay parses
/// each row where it applies it).
///
/// A page is what every follower reads again and again, so it is read without the values a
/// general parse makes: each member's name is matched where it stands (`JSONLexer.keyIfWritten`),
/// the position is read as an integer from its digits, and only the key, the operation and the
/// row become strings. Each field goes by the request's one-letter name or the column's own
/// (`p` or `position`, `k` or `key`, `o` or `op`, `r` or `row`), the one-letter name preferred;
/// of one name, the last one met counts, as in a parsed object.
enum FeedPageReader {
    /// A page's changes: each upsert and delete, the position of its last element (a `trimmed`
    /// marker's too), whether one was such a marker, and how many elements it held.
    struct Page {
        var changes: [RowChange] = []
        var last: Int64?
        var mustRefetch = false
        var count = 0
    }

    /// The deepest a value other than a row may nest (an element at depth 1), as the overlay's
    /// parser reads values (refused from depth 512); a row is validated to depth 512, as the
    /// feed's reader always has.
    private static let valueMaxDepth = 511
    private static let rowMaxDepth = 512

    /// The changes `body` holds, each of `table` unless it names its own.
    ///
    /// - Throws: `ChangeFeedError` with `malformedChange` for a body that is not a JSON array of
    ///   changes, saying which element and why.
    static func read(_ body: String, table: String) throws -> Page {
        do {
            return try JSONLexer.withLexer(over: body) { lexer in try read(&lexer, table: table) }
        } catch let failure as JSONLexer.Failure {
            throw ChangeFeedError(
                .malformedChange, table: table,
                "the feed's answer is not a JSON array (\(failure)): \(body.prefix(200))")
        }
    }

    private static func read(_ lexer: inout JSONLexer, table: String) throws -> Page {
        var page = Page()
        lexer.skipWhitespace()
        guard lexer.peek() == UInt8(ascii: "[") else {
            throw lexer.failure("expected an array")
        }
        if try !lexer.beginArray() {
            var order: [Field] = []  // the last element's members, which the next one likely repeats
            repeat {
                let start = lexer.position
                let fields = try element(&lexer, order: &order)
                func malformed(_ why: String) -> ChangeFeedError {
                    let text = String(
                        decoding: UnsafeBufferPointer(rebasing: lexer.input[start..<lexer.position]), as: UTF8.self)
                    return ChangeFeedError(.malformedChange, table: table, "\(why): \(text.prefix(300))")
                }
                page.count += 1
                guard let fields else { throw malformed("a change that is not an object") }
                guard case .some(let position?) = fields.preferredPosition else {
                    throw malformed("a change without an integer position")
                }
                page.last = position
                // A feed that names each change's table is checked against the one asked for (by
                // the controller); this one is asked for one table's changes and does not repeat it.
                let changed: String
                switch fields.table {
                case nil: changed = table
                case .some(let named?): changed = named
                case .some(nil): throw malformed("a change whose table is not a string")
                }
                guard case .some(let operation?) = fields.preferredOp else { throw malformed("a change without an op") }
                if operation == "trimmed" {
                    page.mustRefetch = true
                    continue
                }
                guard case .some(let key?) = fields.preferredKey else { throw malformed("a change without a key") }
                switch operation {
                case "upsert":
                    guard let range = fields.row, lexer.input[range.lowerBound] == UInt8(ascii: "{") else {
                        throw malformed("an upsert without its row")
                    }
                    let row = String(decoding: UnsafeBufferPointer(rebasing: lexer.input[range]), as: UTF8.self)
                    page.changes.append(
                        RowChange(position: position, table: changed, key: key, operation: .upsert(row: row)))
                case "delete":
                    page.changes.append(RowChange(position: position, table: changed, key: key, operation: .delete))
                default:
                    throw malformed("an unknown op \"\(operation)\"")
                }
            } while try !lexer.endOfElement()
        }
        try lexer.expectEnd(after: "array")
        return page
    }

    /// The members of a change the feed names.
    private enum Field: Int {
        case p, position, k, key, o, op, r, row, table

        /// Each by the name it is written under.
        static let names: [(Field, String)] = [
            (.p, "p"), (.position, "position"), (.k, "k"), (.key, "key"), (.o, "o"), (.op, "op"), (.r, "r"),
            (.row, "row"), (.table, "table"),
        ]

        var name: String { Self.names[rawValue].1 }

        init?(named name: String) {
            guard let (field, _) = Self.names.first(where: { $0.1 == name }) else { return nil }
            self = field
        }
    }

    /// One element's fields: `nil` where it has none of that name, `.some(nil)` where the value
    /// is not of the field's kind (an integer position, a string otherwise).
    private struct Fields {
        var p: Int64??
        var position: Int64??
        var k: String??
        var key: String??
        var o: String??
        var op: String??
        var table: String??
        /// The row's bytes in the input, by the name preferred among those met (`r` before `row`).
        var row: Range<Int>?
        var rowName: Field?

        /// Each field by its preferred name.
        var preferredPosition: Int64?? { p ?? position }
        var preferredKey: String?? { k ?? key }
        var preferredOp: String?? { o ?? op }
    }

    /// The fields of the element at the lexer (`nil` when it is not an object, stepped over);
    /// `order` holds the last element's members, tried first, and ends as this one's.
    private static func element(_ lexer: inout JSONLexer, order: inout [Field]) throws -> Fields? {
        guard lexer.peek() == UInt8(ascii: "{") else {
            try lexer.skipValue(depth: 1, maxDepth: valueMaxDepth)
            return nil
        }
        var fields = Fields()
        guard try !lexer.beginObject() else {
            order = []
            return fields
        }
        // The fields met, while they are `order`'s first ones (no array made), else their list.
        var count = 0
        var other: [Field]?
        repeat {
            // The member the last element had here, matched in place; else its name is read.
            var field: Field?
            if other == nil, count < order.count, lexer.keyIfWritten(as: order[count].name) {
                field = order[count]
            } else {
                field = Field(named: try lexer.key())
            }
            guard let field else {
                try lexer.skipValue(depth: 2, maxDepth: valueMaxDepth)
                continue
            }
            if other == nil, count < order.count, order[count] == field {
                count += 1
            } else {
                if other == nil { other = Array(order[..<count]) }
                other?.append(field)
            }
            switch field {
            case .p: fields.p = try integer(&lexer)
            case .position: fields.position = try integer(&lexer)
            case .k: fields.k = try string(&lexer)
            case .key: fields.key = try string(&lexer)
            case .o: fields.o = try string(&lexer)
            case .op: fields.op = try string(&lexer)
            case .table: fields.table = try string(&lexer)
            case .r, .row:
                let start = lexer.position
                try lexer.skipValue(depth: 2, maxDepth: rowMaxDepth)
                if field.rawValue <= fields.rowName?.rawValue ?? field.rawValue {
                    (fields.row, fields.rowName) = (start..<lexer.position, field)
                }
            }
        } while try !lexer.endOfMember()
        if let other {
            order = other
        } else if count < order.count {
            order.removeLast(order.count - count)
        }
        return fields
    }

    /// The integer value at the lexer, stepped over: `.some(nil)` for any other value (a number
    /// with a fraction or an exponent, or past `Int64`, as `Int64(_:)` reads its text).
    private static func integer(_ lexer: inout JSONLexer) throws -> Int64?? {
        switch lexer.peek() {
        case UInt8(ascii: "-")?, (UInt8(ascii: "0")...UInt8(ascii: "9"))?:
            let number = try lexer.number()
            // Written as a whole number only (`7.0` is no position, as `Int64(_:)` reads it).
            guard number.fraction.isEmpty, !number.hasExponent else { return .some(nil) }
            return .some(number.exactInteger(in: lexer.input, as: Int64.self))
        default:
            try lexer.skipValue(depth: 2, maxDepth: valueMaxDepth)
            return .some(nil)
        }
    }

    /// The string at the lexer, stepped over: `.some(nil)` for any other value.
    private static func string(_ lexer: inout JSONLexer) throws -> String?? {
        guard lexer.peek() == UInt8(ascii: "\"") else {
            try lexer.skipValue(depth: 2, maxDepth: valueMaxDepth)
            return .some(nil)
        }
        return .some(try lexer.string())
    }
}
