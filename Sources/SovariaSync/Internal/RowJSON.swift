import Foundation
import SovariaPlumbing

/// The rows of a JSON answer, read through the shared `JSONLexer` into the Foundation values
/// `JSONSerialization` makes (only on the paths that need them: a write that may have matched
/// nothing, a conflict), so ``filterText(_:)`` and ``text(_:)`` spell them as Foundation does.
package enum RowJSON {
    /// The objects of a JSON array body; `nil` when the body is not an array of objects.
    ///
    /// Accepts what `JSONSerialization` accepts of such a body: a leading byte order mark, a
    /// trailing comma in an array or object, nesting up to 512 levels, numbers `Double` holds.
    package static func rows(_ body: String) -> [[String: Any]]? {
        try? JSONLexer.withLexer(over: body) { lexer -> [[String: Any]]? in
            var reader = FoundationValueReader(lexer: lexer)
            _ = reader.lexer.literalIfPresent("\u{FEFF}")
            reader.lexer.skipWhitespace()
            guard reader.lexer.peek() == UInt8(ascii: "[") else { return nil }
            guard let array = try reader.value(depth: 0) as? [Any] else { return nil }
            reader.lexer.skipWhitespace()
            guard reader.lexer.isAtEnd else { return nil }
            var rows: [[String: Any]] = []
            for element in array {
                guard let row = element as? [String: Any] else { return nil }
                rows.append(row)
            }
            return rows
        } ?? nil
    }

    /// How a filter writes a scalar JSON value: a string as it is, a number in its shortest form.
    package static func filterText(_ value: Any?) -> String? {
        switch value {
        case let text as String: return text
        case let number as NSNumber:
            // Exact integers first: through a Double, one above 2^53 would round.
            if let integer = Int64(exactly: number) { return String(integer) }
            if let integer = UInt64(exactly: number) { return String(integer) }
            return number.stringValue
        default: return nil
        }
    }

    /// `row` as JSON text with sorted keys.
    package static func text(_ row: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: row, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether `a` and `b` are the same UTF-8 bytes: filter values name rows, and two spellings
    /// Swift's `==` calls equal (`"é"`, `"e\u{301}"`) are two keys to the server.
    package static func same(_ a: String?, _ b: String?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return a.hasSameUTF8Bytes(as: b)
    }
}

/// Builds the values `JSONSerialization.jsonObject` returns (`String`, `NSNumber`, `NSNull`,
/// `[Any]`, `[String: Any]`) from the lexer's tokens.
private struct FoundationValueReader {
    var lexer: JSONLexer

    /// `JSONSerialization`'s nesting limit.
    static let maxDepth = 512

    mutating func value(depth: Int) throws -> Any {
        switch lexer.peek() {
        case UInt8(ascii: "{"):
            guard depth < Self.maxDepth else { throw lexer.failure("nested too deep") }
            var object: [String: Any] = [:]
            guard try !lexer.beginObject() else { return object }
            repeat {
                let key = try lexer.key()
                object[key] = try value(depth: depth + 1)  // a repeated key keeps its last value
            } while try !endOfMember()
            return object
        case UInt8(ascii: "["):
            guard depth < Self.maxDepth else { throw lexer.failure("nested too deep") }
            var array: [Any] = []
            guard try !lexer.beginArray() else { return array }
            repeat {
                array.append(try value(depth: depth + 1))
            } while try !endOfElement()
            return array
        case UInt8(ascii: "\""): return try lexer.string()
        case UInt8(ascii: "t"):
            try lexer.expectLiteral("true")
            return NSNumber(value: true)
        case UInt8(ascii: "f"):
            try lexer.expectLiteral("false")
            return NSNumber(value: false)
        case UInt8(ascii: "n"):
            try lexer.expectLiteral("null")
            return NSNull()
        default:
            let start = lexer.position
            let number = try lexer.number()
            guard let value = Self.foundationNumber(number, in: lexer.input) else {
                lexer.position = start
                throw lexer.failure("a number Foundation does not hold")
            }
            return value
        }
    }

    /// The `NSNumber` `JSONSerialization` makes of `number`: an integer of up to 18 digits as an
    /// `Int64`; any other token as Foundation reads it alone (a `UInt64`, a `Decimal` or a
    /// `Double`, by its own rules), so its spelling stays Foundation's to the digit.
    static func foundationNumber(_ number: JSONLexer.Number, in input: UnsafeBufferPointer<UInt8>) -> NSNumber? {
        if number.fraction.isEmpty, !number.hasExponent, number.integerPart.count <= 18,
            let integer = number.exactInteger(in: input, as: Int64.self)
        {
            return NSNumber(value: integer)
        }
        let token = Data(UnsafeBufferPointer(rebasing: input[number.text]))
        return (try? JSONSerialization.jsonObject(with: token, options: [.fragmentsAllowed])) as? NSNumber
    }

    /// After a member: `,` (another follows, unless `}` comes next, which `JSONSerialization`
    /// accepts) or `}`.
    private mutating func endOfMember() throws -> Bool {
        guard try !lexer.endOfMember() else { return true }
        lexer.skipWhitespace()
        guard lexer.peek() == UInt8(ascii: "}") else { return false }
        lexer.position += 1
        return true
    }

    /// After an element: `,` (another follows, unless `]` comes next, which `JSONSerialization`
    /// accepts) or `]`.
    private mutating func endOfElement() throws -> Bool {
        guard try !lexer.endOfElement() else { return true }
        guard lexer.peek() == UInt8(ascii: "]") else { return false }
        lexer.position += 1
        return true
    }
}
