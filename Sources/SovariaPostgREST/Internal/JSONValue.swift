import Foundation
import SovariaPlumbing

/// A JSON value as the overlay reads and writes rows: numbers keep the text the server wrote
/// (so an answer passed through unchanged is the server's, digit for digit), objects keep their
/// keys' order (PostgREST writes a row's columns in `select` order).
package enum JSONValue: Sendable, Hashable {
    case null
    case bool(Bool)
    /// The number as written; compare with ``numericValue``.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object(JSONObject)

    /// The number's value, exact to 38 digits (Foundation's `Decimal`), or `nil` for another kind.
    var numericValue: Decimal? {
        guard case .number(let text) = self else { return nil }
        return Decimal(string: text, locale: Self.posix)
    }

    /// The locale numbers are read in, made once: a `Locale` made per comparison cost more than
    /// the comparison (an order by a number column compares n log n times).
    static let posix = Locale(identifier: "en_US_POSIX")

    /// Whether both are the same JSON value, numbers compared by value (`1.0` is `1`) and objects
    /// without regard to key order.
    func isEquivalent(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number, .number): return numericValue == other.numericValue
        case (.string(let a), .string(let b)): return PostgRESTComparison.compareBytes(a, b) == .orderedSame
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isEquivalent(to: $1) }
        case (.object(let a), .object(let b)):
            return a.keys.count == b.keys.count
                && a.keys.allSatisfy { key in b[key].map { a[key]!.isEquivalent(to: $0) } ?? false }
        default: return false
        }
    }

    /// Whether both are the same value written the same way: strings and numbers compared by
    /// their UTF-8 bytes (`"\u{E9}"` is not `"e\u{301}"`, `1.0` is not `1`), objects with their
    /// keys in the same order. A value identical to the one a row holds leaves the row's cached
    /// text true (Swift's `==` takes canonically equivalent strings as one).
    func isIdentical(to other: JSONValue) -> Bool {
        switch (self, other) {
        case (.null, .null): return true
        case (.bool(let a), .bool(let b)): return a == b
        case (.number(let a), .number(let b)), (.string(let a), .string(let b)): return a.hasSameUTF8Bytes(as: b)
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { $0.isIdentical(to: $1) }
        case (.object(let a), .object(let b)):
            return a.keys.count == b.keys.count
                && zip(a.keys, b.keys).allSatisfy { $0.hasSameUTF8Bytes(as: $1) && a[$0]!.isIdentical(to: b[$1]!) }
        default: return false
        }
    }
}

/// A JSON object that keeps its keys in the order they were written or set.
///
/// Its keys and values are two arrays side by side, looked up by scanning the keys: rows have a
/// handful of columns, where comparing a few short strings costs less than hashing one, and the
/// parser gives the rows of an answer one shared array of keys when their columns are the same.
package struct JSONObject: Sendable, Hashable {
    private(set) var keys: [String] = []
    private var values: [JSONValue] = []

    init() {}

    /// An empty object with room for `capacity` members.
    init(reservingCapacity capacity: Int) {
        keys.reserveCapacity(capacity)
        values.reserveCapacity(capacity)
    }

    /// An object of `keys` and `values`, side by side (one value per key, no key twice).
    fileprivate init(keys: [String], values: [JSONValue]) {
        self.keys = keys
        self.values = values
    }

    subscript(key: String) -> JSONValue? {
        get { keys.firstIndex(of: key).map { values[$0] } }
        set {
            if let index = keys.firstIndex(of: key) {
                if let newValue {
                    values[index] = newValue
                } else {
                    keys.remove(at: index)
                    values.remove(at: index)
                }
            } else if let newValue {
                keys.append(key)
                values.append(newValue)
            }
        }
    }

    /// This object with its keys held in `keys`, which must be the same names, byte for byte and
    /// in order: rows that hold one array of keys are told to have the same columns at once.
    func sharingKeys(_ keys: [String]) -> JSONObject {
        assert(keys.count == self.keys.count && zip(keys, self.keys).allSatisfy { $0.hasSameUTF8Bytes(as: $1) })
        return JSONObject(keys: keys, values: values)
    }

    /// The value of the member at `place`, in ``keys``' order.
    func value(at place: Int) -> JSONValue { values[place] }

    /// Whether the object has `key` (with any value, `null` included).
    func has(_ key: String) -> Bool { keys.contains(key) }

    /// Each key with its value, in the object's order.
    var members: Zip2Sequence<[String], [JSONValue]> { zip(keys, values) }
}

/// Reads JSON text into ``JSONValue``s through the shared `JSONLexer` (RFC 8259; a duplicate
/// key keeps its last value, as PostgreSQL's `jsonb` does). Package-visible for the bench, whose
/// local-first floor is this parse.
package struct JSONParser: JSONLexerReader {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    package var lexer: JSONLexer

    package init(lexer: JSONLexer) { self.lexer = lexer }

    /// The value `text` holds, or a ``Failure`` saying where it is not JSON.
    package static func parse(_ text: String) throws -> JSONValue {
        try read(text) { parser in
            parser.lexer.skipWhitespace()
            return try parser.value(depth: 0)
        }
    }

    /// ``parse(_:)``, where an object with `lastKeys`'s keys, in its order, takes that array
    /// (the rows of a change feed's page share one); `lastKeys` ends as the last object's keys.
    package static func parse(_ text: String, sharingKeys lastKeys: inout [String]) throws -> JSONValue {
        try parseNotingRepeats(text, sharingKeys: &lastKeys).value
    }

    /// ``parse(_:sharingKeys:)``, and whether an object in it repeats a key.
    private static func parseNotingRepeats(
        _ text: String, sharingKeys lastKeys: inout [String]
    ) throws -> (value: JSONValue, repeatsKeys: Bool) {
        try read(text) { parser in
            parser.lastKeys = lastKeys
            defer { lastKeys = parser.lastKeys }
            parser.lexer.skipWhitespace()
            let value = try parser.value(depth: 0)
            return (value, parser.repeatsKeys)
        }
    }

    /// A change feed's row: `text` parsed as ``parse(_:sharingKeys:)`` parses it, and whether
    /// writing the row (`JSONValue.write(to:)`) gives `text` back byte for byte: no space between
    /// its tokens, no escape in a string (the writer escapes only what JSON requires), no key
    /// repeated in any object (a parse keeps one of them). `nil` when `text` is no JSON object.
    static func pageRow(_ text: String, sharingKeys lastKeys: inout [String]) -> (row: JSONObject, isWrittenAsIs: Bool)?
    {
        guard let parsed = try? parseNotingRepeats(text, sharingKeys: &lastKeys), case .object(let row) = parsed.value
        else { return nil }
        return (row, !parsed.repeatsKeys && isCompact(text))
    }

    /// Whether `text`, JSON, has no space outside its strings and no backslash anywhere.
    private static func isCompact(_ text: String) -> Bool {
        text.withUTF8Bytes { bytes in
            var inString = false
            for byte in bytes {
                switch byte {
                case UInt8(ascii: "\\"): return false
                case UInt8(ascii: "\""): inString.toggle()
                case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"):
                    if !inString { return false }
                default: continue
                }
            }
            return true
        }
    }

    /// Runs `body` over `text`, then requires nothing but space after what it read.
    private static func read<Value>(_ text: String, _ body: (inout JSONParser) throws -> Value) throws -> Value {
        do {
            return try readWhole(text, endingAfter: "value", body)
        } catch let failure as JSONLexer.Failure {
            throw Failure(description: "not JSON at byte \(failure.offset): \(failure.problem)")
        }
    }

    /// One element of a top-level array, with where its text lies.
    struct Element {
        var value: JSONValue
        /// Its UTF-8 byte range in the text, without the space around it.
        var range: Range<Int>
        /// Whether an object in it repeats a key (only the last value is kept, so its text says
        /// more than the value).
        var repeatsKeys: Bool
    }

    /// The elements of the array `text` holds, each with its byte range; `nil` when `text` is
    /// JSON but not an array. Throws a ``Failure`` when it is not JSON.
    static func elements(of text: String) throws -> [Element]? {
        try arrayElements(of: text) { parser in
            let start = parser.lexer.position
            parser.repeatsKeys = false
            let value = try parser.value(depth: 1)
            return Element(value: value, range: start..<parser.lexer.position, repeatsKeys: parser.repeatsKeys)
        }
    }

    /// Each element of the array `text` holds, as `element` reads it (the reader at its first
    /// byte); `nil` when `text` is JSON but not an array.
    private static func arrayElements<Element>(
        of text: String, _ element: (inout JSONParser) throws -> Element
    ) throws -> [Element]? {
        try read(text) { parser in
            parser.lexer.skipWhitespace()
            guard parser.lexer.peek() == UInt8(ascii: "[") else {
                _ = try parser.value(depth: 0)
                return nil
            }
            var elements: [Element] = []
            guard try !parser.lexer.beginArray() else { return elements }
            repeat {
                elements.append(try element(&parser))
            } while try !parser.lexer.endOfElement()
            return elements
        }
    }

    /// Whether an object read since this was last cleared repeated a key.
    private var repeatsKeys = false

    private mutating func value(depth: Int) throws -> JSONValue {
        guard depth < 512 else { throw lexer.failure("nested too deep") }
        switch lexer.peek() {
        case UInt8(ascii: "{"): return .object(try object(depth: depth))
        case UInt8(ascii: "["):
            var items: [JSONValue] = []
            guard try !lexer.beginArray() else { return .array(items) }
            repeat {
                items.append(try value(depth: depth + 1))
            } while try !lexer.endOfElement()
            return .array(items)
        case UInt8(ascii: "\""): return .string(try lexer.string())
        case UInt8(ascii: "t"):
            try lexer.expectLiteral("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try lexer.expectLiteral("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try lexer.expectLiteral("null")
            return .null
        default:
            let number = try lexer.number()
            return .number(String(decoding: UnsafeBufferPointer(rebasing: lexer.input[number.text]), as: UTF8.self))
        }
    }

    private mutating func object(depth: Int) throws -> JSONObject {
        guard try !lexer.beginObject() else { return JSONObject() }
        // Rows of one answer share one array of keys: while the keys met are the last object's,
        // in its order, none is copied (`keys` stays `nil`, and `count` says how many). Taken
        // now: an object among the values sets its own.
        let shared = lastKeys
        var keys: [String]?
        var count = 0
        var values: [JSONValue] = []
        values.reserveCapacity(max(shared.count, 4))
        repeat {
            // Byte for byte: a key spelled another way (`é` composed or not) keeps its spelling.
            // The last object's keys are each there once: one met in its place repeats none
            // before it, and is not made again.
            if keys == nil, count < shared.count, lexer.keyIfWritten(as: shared[count]) {
                count += 1
                values.append(try value(depth: depth + 1))
                continue
            }
            let key = try lexer.key()
            let value = try value(depth: depth + 1)
            if keys == nil, count < shared.count, shared[count].hasSameUTF8Bytes(as: key) {
                count += 1
                values.append(value)
                continue
            }
            if keys == nil { keys = Array(shared[..<count]) }
            if let index = keys?.firstIndex(of: key) {
                repeatsKeys = true  // the last value is kept, in the first one's place
                values[index] = value
            } else {
                keys?.append(key)
                values.append(value)
            }
        } while try !lexer.endOfMember()
        guard let keys else {
            lastKeys = count < shared.count ? Array(shared[..<count]) : shared
            return JSONObject(keys: lastKeys, values: values)
        }
        lastKeys = keys
        return JSONObject(keys: keys, values: values)
    }

    /// The keys of the last object read, which the next one shares when its keys are the same.
    private var lastKeys: [String] = []
}

extension JSONValue {
    /// The value as compact JSON text.
    var text: String {
        var out: [UInt8] = []
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the value as compact JSON text (UTF-8).
    func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let value): out.append(contentsOf: (value ? "true" : "false").utf8)
        case .number(let text): out.append(contentsOf: text.utf8)
        case .string(let value): Self.writeString(value, to: &out)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (index, item) in items.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                item.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (index, key) in object.keys.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                Self.writeString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                object[key]!.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `value` as a JSON string, as `JSONStringWriter` writes it.
    static func writeString(_ value: String, to out: inout [UInt8]) {
        JSONStringWriter.append(value, to: &out)
    }
}
