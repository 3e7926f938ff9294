import Foundation

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

    /// Whether the object has `key` (with any value, `null` included).
    func has(_ key: String) -> Bool { keys.contains(key) }
}

/// Reads JSON text into ``JSONValue``s (RFC 8259; a duplicate key keeps its last value, as
/// PostgreSQL's `jsonb` does). Package-visible for the bench, whose local-first floor is this parse.
package struct JSONParser {
    package struct Failure: Error, CustomStringConvertible {
        package let description: String
    }

    private let bytes: [UInt8]
    private var position = 0

    /// The value `text` holds, or a ``Failure`` saying where it is not JSON.
    package static func parse(_ text: String) throws -> JSONValue {
        var parser = JSONParser(bytes: Array(text.utf8))
        parser.skipSpace()
        let value = try parser.value(depth: 0)
        parser.skipSpace()
        guard parser.position == parser.bytes.count else { throw parser.failure("text after the value") }
        return value
    }

    private init(bytes: [UInt8]) { self.bytes = bytes }

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
        var parser = JSONParser(bytes: Array(text.utf8))
        parser.skipSpace()
        guard parser.position < parser.bytes.count, parser.bytes[parser.position] == UInt8(ascii: "[") else {
            _ = try parse(text)
            return nil
        }
        parser.position += 1
        var elements: [Element] = []
        parser.skipSpace()
        if parser.position < parser.bytes.count, parser.bytes[parser.position] == UInt8(ascii: "]") {
            parser.position += 1
        } else {
            while true {
                parser.skipSpace()
                let start = parser.position
                parser.repeatsKeys = false
                let value = try parser.value(depth: 1)
                elements.append(Element(value: value, range: start..<parser.position, repeatsKeys: parser.repeatsKeys))
                parser.skipSpace()
                guard parser.position < parser.bytes.count else { throw parser.failure("an array is not closed") }
                let byte = parser.bytes[parser.position]
                parser.position += 1
                if byte == UInt8(ascii: "]") { break }
                guard byte == UInt8(ascii: ",") else { throw parser.failure("expected , or ]") }
            }
        }
        parser.skipSpace()
        guard parser.position == parser.bytes.count else { throw parser.failure("text after the value") }
        return elements
    }

    /// Whether an object read since this was last cleared repeated a key.
    private var repeatsKeys = false

    private func failure(_ what: String) -> Failure { Failure(description: "not JSON at byte \(position): \(what)") }

    private mutating func skipSpace() {
        while position < bytes.count {
            switch bytes[position] {
            case 0x20, 0x09, 0x0A, 0x0D: position += 1
            default: return
            }
        }
    }

    private mutating func value(depth: Int) throws -> JSONValue {
        guard depth < 512 else { throw failure("nested too deep") }
        guard position < bytes.count else { throw failure("a value is missing") }
        switch bytes[position] {
        case UInt8(ascii: "{"): return .object(try object(depth: depth))
        case UInt8(ascii: "["):
            position += 1
            var items: [JSONValue] = []
            skipSpace()
            if position < bytes.count, bytes[position] == UInt8(ascii: "]") {
                position += 1
                return .array(items)
            }
            while true {
                skipSpace()
                items.append(try value(depth: depth + 1))
                skipSpace()
                guard position < bytes.count else { throw failure("an array is not closed") }
                let byte = bytes[position]
                position += 1
                if byte == UInt8(ascii: "]") { return .array(items) }
                guard byte == UInt8(ascii: ",") else { throw failure("expected , or ]") }
            }
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        default: return try number()
        }
    }

    private mutating func object(depth: Int) throws -> JSONObject {
        position += 1
        var keys: [String] = []
        var values: [JSONValue] = []
        skipSpace()
        if position < bytes.count, bytes[position] == UInt8(ascii: "}") {
            position += 1
            return JSONObject()
        }
        while true {
            skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: "\"") else { throw failure("expected a key") }
            let key = try string()
            skipSpace()
            guard position < bytes.count, bytes[position] == UInt8(ascii: ":") else { throw failure("expected :") }
            position += 1
            skipSpace()
            let value = try value(depth: depth + 1)
            if let index = keys.firstIndex(of: key) {
                repeatsKeys = true  // the last value is kept, in the first one's place
                values[index] = value
            } else {
                keys.append(key)
                values.append(value)
            }
            skipSpace()
            guard position < bytes.count else { throw failure("an object is not closed") }
            let byte = bytes[position]
            position += 1
            if byte == UInt8(ascii: "}") { break }
            guard byte == UInt8(ascii: ",") else { throw failure("expected , or }") }
        }
        // Rows of one answer share one array of keys.
        if keys == lastKeys {
            keys = lastKeys
        } else {
            lastKeys = keys
        }
        return JSONObject(keys: keys, values: values)
    }

    /// The keys of the last object read, which the next one shares when its keys are the same.
    private var lastKeys: [String] = []

    private mutating func literal(_ word: String, _ value: JSONValue) throws -> JSONValue {
        let end = position + word.utf8.count
        guard end <= bytes.count, bytes[position..<end].elementsEqual(word.utf8) else { throw failure("unknown word") }
        position = end
        return value
    }

    private mutating func number() throws -> JSONValue {
        let start = position
        func digits() -> Bool {
            let from = position
            while position < bytes.count, (0x30...0x39).contains(bytes[position]) { position += 1 }
            return position > from
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: "-") { position += 1 }
        let integerStart = position
        guard digits() else { throw failure("not a number") }
        guard bytes[integerStart] != UInt8(ascii: "0") || position == integerStart + 1 else {
            throw failure("a number with a leading zero")
        }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            guard digits() else { throw failure("no digits after the point") }
        }
        if position < bytes.count, bytes[position] | 0x20 == UInt8(ascii: "e") {
            position += 1
            if position < bytes.count, bytes[position] == UInt8(ascii: "+") || bytes[position] == UInt8(ascii: "-") {
                position += 1
            }
            guard digits() else { throw failure("no digits in the exponent") }
        }
        return .number(String(decoding: bytes[start..<position], as: UTF8.self))
    }

    private mutating func string() throws -> String {
        position += 1
        var scalars = String.UnicodeScalarView()
        var runStart = position
        var text = ""
        while true {
            guard position < bytes.count else { throw failure("a string is not closed") }
            let byte = bytes[position]
            if byte == UInt8(ascii: "\"") {
                text += String(decoding: bytes[runStart..<position], as: UTF8.self)
                position += 1
                return text
            }
            guard byte >= 0x20 else { throw failure("a control character in a string") }
            guard byte == UInt8(ascii: "\\") else {
                position += 1
                continue
            }
            text += String(decoding: bytes[runStart..<position], as: UTF8.self)
            position += 1
            guard position < bytes.count else { throw failure("a string is not closed") }
            let escape = bytes[position]
            position += 1
            scalars.removeAll()
            switch escape {
            case UInt8(ascii: "\""): text += "\""
            case UInt8(ascii: "\\"): text += "\\"
            case UInt8(ascii: "/"): text += "/"
            case UInt8(ascii: "b"): text += "\u{8}"
            case UInt8(ascii: "f"): text += "\u{C}"
            case UInt8(ascii: "n"): text += "\n"
            case UInt8(ascii: "r"): text += "\r"
            case UInt8(ascii: "t"): text += "\t"
            case UInt8(ascii: "u"):
                var code = try hex4()
                if (0xD800..<0xDC00).contains(code), position + 1 < bytes.count, bytes[position] == UInt8(ascii: "\\"),
                    bytes[position + 1] == UInt8(ascii: "u")
                {
                    position += 2
                    let low = try hex4()
                    guard (0xDC00..<0xE000).contains(low) else { throw failure("a lone surrogate") }
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let scalar = Unicode.Scalar(code) else { throw failure("a lone surrogate") }
                scalars.append(scalar)
                text += String(scalars)
            default: throw failure("an unknown escape")
            }
            runStart = position
        }
    }

    private mutating func hex4() throws -> UInt32 {
        guard position + 4 <= bytes.count else { throw failure("a short \\u escape") }
        var code: UInt32 = 0
        for byte in bytes[position..<position + 4] {
            guard let digit = Self.hexDigit(byte) else { throw failure("a bad \\u escape") }
            code = code << 4 | digit
        }
        position += 4
        return code
    }

    private static func hexDigit(_ byte: UInt8) -> UInt32? {
        switch byte {
        case 0x30...0x39: UInt32(byte - 0x30)
        case 0x41...0x46: UInt32(byte - 0x41 + 10)
        case 0x61...0x66: UInt32(byte - 0x61 + 10)
        default: nil
        }
    }
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

    /// Appends `value` as a JSON string: quotes, backslashes and control characters escaped,
    /// everything else as its UTF-8 bytes.
    static func writeString(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in value.utf8 {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: #"\""#.utf8)
            case UInt8(ascii: "\\"): out.append(contentsOf: #"\\"#.utf8)
            case 0x0A: out.append(contentsOf: #"\n"#.utf8)
            case 0x0D: out.append(contentsOf: #"\r"#.utf8)
            case 0x09: out.append(contentsOf: #"\t"#.utf8)
            case 0..<0x20:
                let digits = Array("0123456789abcdef".utf8)
                out.append(contentsOf: #"\u00"#.utf8)
                out.append(digits[Int(byte >> 4)])
                out.append(digits[Int(byte & 0x0F)])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
