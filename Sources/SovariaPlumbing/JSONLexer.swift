/// The one JSON lexer (RFC 8259) the queue's record codec, the overlay's parser and the
/// conflict path read through: whitespace, strings with every escape and surrogate pairs,
/// numbers, literals, objects and arrays one token at a time, and skipping a whole value.
///
/// It reads UTF-8 bytes it does not own, so a reader lives inside ``withLexer(over:_:)``. Every
/// read checks the end of the input first, so malformed or cut-off text throws a ``Failure``
/// carrying the byte offset where reading stopped and never traps.
///
/// - Important: Its methods are `@inlinable` so the queue codec, in another module, gets them
///   specialized into its own loops (the codec's measured speed depends on it).
public struct JSONLexer {
    /// Why the text is not the JSON a reader expected: the byte offset where reading stopped and
    /// what was wrong there.
    public struct Failure: Error, CustomStringConvertible {
        /// The UTF-8 byte offset in the text.
        @usableFromInline package let offset: Int
        /// What was expected or wrong, ending in " (the text ends)" when the text ended there.
        @usableFromInline package let problem: String

        /// Makes a failure at `offset`.
        @inlinable
        package init(offset: Int, problem: String) {
            self.offset = offset
            self.problem = problem
        }

        /// The problem and where it is.
        public var description: String { "invalid JSON at byte \(offset): \(problem)" }
    }

    /// The text's UTF-8 bytes.
    @usableFromInline package let input: UnsafeBufferPointer<UInt8>
    /// The offset of the next byte to read.
    @usableFromInline package var position = 0

    /// A lexer at the start of `input`, which must outlive it.
    @inlinable
    package init(_ input: UnsafeBufferPointer<UInt8>) {
        self.input = input
    }

    /// Runs `body` with a lexer over `text`'s UTF-8 bytes (contiguous, so no copy when `text` is
    /// native).
    @inlinable
    package static func withLexer<Value>(
        over text: String, _ body: (inout JSONLexer) throws -> Value
    ) rethrows
        -> Value
    {
        var text = text
        return try text.withUTF8 { input in
            var lexer = JSONLexer(input)
            return try body(&lexer)
        }
    }

    // MARK: - Bytes

    /// The next byte, or `nil` at the end.
    @inlinable
    package func peek() -> UInt8? {
        position < input.count ? input[position] : nil
    }

    /// Whether every byte has been read.
    @inlinable
    package var isAtEnd: Bool { position == input.count }

    /// A failure at the current position.
    @inlinable
    package func failure(_ problem: String) -> Failure {
        Failure(offset: position, problem: position < input.count ? problem : problem + " (the text ends)")
    }

    /// Steps over spaces, tabs, line feeds and carriage returns.
    @inlinable
    package mutating func skipWhitespace() {
        while position < input.count {
            switch input[position] {
            case UInt8(ascii: " "), UInt8(ascii: "\n"), UInt8(ascii: "\r"), UInt8(ascii: "\t"): position += 1
            default: return
            }
        }
    }

    /// Steps over trailing space, then throws "text after the `what`" unless the text ends there.
    @inlinable
    package mutating func expectEnd(after what: String) throws {
        skipWhitespace()
        guard position == input.count else { throw failure("text after the \(what)") }
    }

    /// Steps over `byte`, or throws "expected `what`".
    @inlinable
    package mutating func expect(_ byte: UInt8, _ what: String) throws {
        guard peek() == byte else { throw failure("expected \(what)") }
        position += 1
    }

    /// Steps over `literal` if the input continues with it.
    @inlinable
    package mutating func literalIfPresent(_ literal: StaticString) -> Bool {
        let matches = literal.withUTF8Buffer { literal in
            input.count - position >= literal.count
                && UnsafeBufferPointer(rebasing: input[position..<position + literal.count]).elementsEqual(literal)
        }
        if matches { position += literal.utf8CodeUnitCount }
        return matches
    }

    /// Steps over `literal` (`true`, `false`, `null`), or throws.
    @inlinable
    package mutating func expectLiteral(_ literal: StaticString) throws {
        guard literalIfPresent(literal) else { throw failure("expected \(literal)") }
    }

    // MARK: - Objects and arrays

    /// Steps over `{` and the space after it; `true` when `}` follows at once (the empty object,
    /// stepped over too).
    @inlinable
    package mutating func beginObject() throws -> Bool {
        try expect(UInt8(ascii: "{"), "an object")
        skipWhitespace()
        guard peek() == UInt8(ascii: "}") else { return false }
        position += 1
        return true
    }

    /// Reads a member's key and the `:` after it, leaving the lexer at its value.
    @inlinable
    package mutating func key() throws -> String {
        skipWhitespace()
        let key = try string()
        skipWhitespace()
        try expect(UInt8(ascii: ":"), "':' after a key")
        skipWhitespace()
        return key
    }

    /// Steps over a member's key and the `:` after it when the key is written as `expected`'s
    /// bytes, without an escape, and returns `true`; otherwise reads nothing and returns `false`
    /// (``key()`` then reads it, and throws where the text is not JSON). Makes no string: the
    /// rows of an answer repeat their keys, and matching them costs less than making each.
    @inlinable
    package mutating func keyIfWritten(as expected: String) -> Bool {
        let start = position
        skipWhitespace()
        guard peek() == UInt8(ascii: "\"") else {
            position = start
            return false
        }
        var at = position + 1
        for byte in expected.utf8 {
            // A byte that must be escaped never stands for itself: `key()` decides.
            guard at < input.count, input[at] == byte, byte >= 0x20, byte != UInt8(ascii: "\""),
                byte != UInt8(ascii: "\\")
            else {
                position = start
                return false
            }
            at += 1
        }
        guard at < input.count, input[at] == UInt8(ascii: "\"") else {
            position = start
            return false
        }
        position = at + 1
        skipWhitespace()
        guard peek() == UInt8(ascii: ":") else {
            position = start
            return false
        }
        position += 1
        skipWhitespace()
        return true
    }

    /// After a member's value: steps over `,` (`false`: another member follows) or `}` (`true`:
    /// the object is closed).
    @inlinable
    package mutating func endOfMember() throws -> Bool {
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: ","):
            position += 1
            return false
        case UInt8(ascii: "}"):
            position += 1
            return true
        default: throw failure("expected ',' or '}' in an object")
        }
    }

    /// Steps over `[` and the space after it; `true` when `]` follows at once (the empty array,
    /// stepped over too).
    @inlinable
    package mutating func beginArray() throws -> Bool {
        try expect(UInt8(ascii: "["), "an array")
        skipWhitespace()
        guard peek() == UInt8(ascii: "]") else { return false }
        position += 1
        return true
    }

    /// After an element: steps over `,` and the space after it (`false`: another element
    /// follows) or `]` (`true`: the array is closed).
    @inlinable
    package mutating func endOfElement() throws -> Bool {
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: ","):
            position += 1
            skipWhitespace()
            return false
        case UInt8(ascii: "]"):
            position += 1
            return true
        default: throw failure("expected ',' or ']' in an array")
        }
    }

    /// Validates and steps over any JSON value; `depth` is the value's nesting level, and a
    /// value nested deeper than `maxDepth` is refused rather than risking the stack.
    @inlinable
    package mutating func skipValue(depth: Int, maxDepth: Int) throws {
        guard depth <= maxDepth else { throw failure("nested deeper than \(maxDepth)") }
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: "\""): try skipString()
        case UInt8(ascii: "{"):
            guard try !beginObject() else { return }
            repeat {
                skipWhitespace()
                try skipString()
                skipWhitespace()
                try expect(UInt8(ascii: ":"), "':' after a key")
                try skipValue(depth: depth + 1, maxDepth: maxDepth)
            } while try !endOfMember()
        case UInt8(ascii: "["):
            guard try !beginArray() else { return }
            repeat {
                try skipValue(depth: depth + 1, maxDepth: maxDepth)
            } while try !endOfElement()
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        default: _ = try number()
        }
    }

    // MARK: - Strings

    /// Reads a string, its escapes resolved (a `\u` surrogate pair into one scalar; a lone
    /// surrogate or an unescaped control character is refused).
    @inlinable
    package mutating func string() throws -> String {
        try expect(UInt8(ascii: "\""), "a string")
        // Runs between escapes are copied whole; without an escape the text is the bytes
        // between the quotes and `unescaped` never allocates.
        var unescaped: [UInt8] = []
        var runStart = position
        while position < input.count {
            let byte = input[position]
            if byte == UInt8(ascii: "\"") {
                let run = UnsafeBufferPointer(rebasing: input[runStart..<position])
                position += 1
                guard !unescaped.isEmpty else { return String(decoding: run, as: UTF8.self) }
                unescaped.append(contentsOf: run)
                return String(decoding: unescaped, as: UTF8.self)
            }
            if byte == UInt8(ascii: "\\") {
                unescaped.append(contentsOf: UnsafeBufferPointer(rebasing: input[runStart..<position]))
                position += 1
                try unescape(into: &unescaped)
                runStart = position
                continue
            }
            guard byte >= 0x20 else { throw failure("a control character must be escaped in a string") }
            position += 1
        }
        throw failure("the string does not end")
    }

    /// Validates and steps over a string as ``string()`` reads it, without making it: an escape
    /// is checked as it would be resolved.
    @inlinable
    package mutating func skipString() throws {
        try expect(UInt8(ascii: "\""), "a string")
        var scratch: [UInt8] = []
        while position < input.count {
            let byte = input[position]
            if byte == UInt8(ascii: "\"") {
                position += 1
                return
            }
            if byte == UInt8(ascii: "\\") {
                position += 1
                try unescape(into: &scratch)
                scratch.removeAll(keepingCapacity: true)
                continue
            }
            guard byte >= 0x20 else { throw failure("a control character must be escaped in a string") }
            position += 1
        }
        throw failure("the string does not end")
    }

    /// Reads what follows a backslash.
    @inlinable
    mutating func unescape(into bytes: inout [UInt8]) throws {
        guard position < input.count else { throw failure("the string ends inside an escape") }
        let byte = input[position]
        position += 1
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): bytes.append(byte)
        case UInt8(ascii: "b"): bytes.append(0x08)
        case UInt8(ascii: "f"): bytes.append(0x0C)
        case UInt8(ascii: "n"): bytes.append(0x0A)
        case UInt8(ascii: "r"): bytes.append(0x0D)
        case UInt8(ascii: "t"): bytes.append(0x09)
        case UInt8(ascii: "u"):
            var value = try hexQuad()
            if (0xDC00...0xDFFF).contains(value) { throw failure("a low surrogate without a high one") }
            if (0xD800...0xDBFF).contains(value) {
                guard literalIfPresent("\\u") else { throw failure("a high surrogate without a low one") }
                let low = try hexQuad()
                guard (0xDC00...0xDFFF).contains(low) else { throw failure("a high surrogate without a low one") }
                value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
            }
            guard let scalar = Unicode.Scalar(value) else { throw failure("not a Unicode scalar") }
            UTF8.encode(scalar) { bytes.append($0) }
        default:
            position -= 1
            throw failure("unknown escape")
        }
    }

    @inlinable
    mutating func hexQuad() throws -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard position < input.count else { throw failure("the string ends inside a \\u escape") }
            let byte = input[position]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("a \\u escape needs four hex digits")
            }
            value = value << 4 | UInt32(digit)
            position += 1
        }
        return value
    }

    // MARK: - Numbers

    /// A JSON number as where its parts lie in the input: `-? int (. fraction)? (e exponent)?`.
    public struct Number {
        /// The whole number's bytes.
        @usableFromInline package let text: Range<Int>
        /// Whether it starts with `-`.
        @usableFromInline package let negative: Bool
        /// The digits before the point.
        @usableFromInline package let integerPart: Range<Int>
        /// The digits after the point (empty without one).
        @usableFromInline package let fraction: Range<Int>
        /// Whether it has an exponent (`e` or `E`).
        @usableFromInline package let hasExponent: Bool
        /// The exponent's value, saturated at ±10,000 (past that a value is 0 or out of any
        /// range anyway); 0 without one.
        @usableFromInline package let exponent: Int

        @inlinable
        init(
            text: Range<Int>, negative: Bool, integerPart: Range<Int>, fraction: Range<Int>, hasExponent: Bool,
            exponent: Int
        ) {
            self.text = text
            self.negative = negative
            self.integerPart = integerPart
            self.fraction = fraction
            self.hasExponent = hasExponent
            self.exponent = exponent
        }

        /// The value when it is a whole number that `Value` holds exactly (`7`, `-0`, `7.0`,
        /// `70e-1`), else `nil`: nothing is rounded or clamped.
        @inlinable
        package func exactInteger<Value: FixedWidthInteger>(
            in input: UnsafeBufferPointer<UInt8>, as _: Value.Type
        )
            -> Value?
        {
            let digitCount = integerPart.count + fraction.count
            func digit(_ index: Int) -> UInt64 {
                let position =
                    index < integerPart.count
                    ? integerPart.lowerBound + index : fraction.lowerBound + (index - integerPart.count)
                return UInt64(input[position] - UInt8(ascii: "0"))
            }
            // value = digits × 10^scale; with scale < 0 the dropped digits must all be 0.
            let scale = exponent - fraction.count
            let kept = scale < 0 ? max(0, digitCount + scale) : digitCount
            for index in kept..<digitCount where digit(index) != 0 { return nil }
            var magnitude: UInt64 = 0
            for index in 0..<kept {
                let (tens, overflow) = magnitude.multipliedReportingOverflow(by: 10)
                let (sum, carry) = tens.addingReportingOverflow(digit(index))
                guard !overflow, !carry else { return nil }
                magnitude = sum
            }
            if magnitude != 0 {
                for _ in 0..<max(0, scale) {
                    let (tens, overflow) = magnitude.multipliedReportingOverflow(by: 10)
                    guard !overflow else { return nil }
                    magnitude = tens
                }
            }
            guard negative, magnitude != 0 else { return Value(exactly: magnitude) }
            // −magnitude, Int64.min included: −(magnitude − 1) − 1.
            guard let belowMagnitude = Int64(exactly: magnitude - 1) else { return nil }
            return Value(exactly: -belowMagnitude - 1)
        }
    }

    /// Reads a number (no leading zero, digits after a point and in an exponent).
    @inlinable
    package mutating func number() throws -> Number {
        let start = position
        let negative = peek() == UInt8(ascii: "-")
        if negative { position += 1 }
        let integerPart = digits()
        guard !integerPart.isEmpty else { throw failure("expected a value") }
        guard integerPart.count == 1 || input[integerPart.lowerBound] != UInt8(ascii: "0") else {
            throw failure("a number cannot start with 0")
        }
        var fraction = position..<position
        if peek() == UInt8(ascii: ".") {
            position += 1
            fraction = digits()
            guard !fraction.isEmpty else { throw failure("expected digits after '.'") }
        }
        var exponent = 0
        let hasExponent = peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E")
        if hasExponent {
            position += 1
            let exponentNegative = peek() == UInt8(ascii: "-")
            if exponentNegative || peek() == UInt8(ascii: "+") { position += 1 }
            let exponentDigits = digits()
            guard !exponentDigits.isEmpty else { throw failure("expected digits in the exponent") }
            for index in exponentDigits {
                exponent = min(exponent * 10 + Int(input[index] - UInt8(ascii: "0")), 10_000)
            }
            if exponentNegative { exponent = -exponent }
        }
        return Number(
            text: start..<position, negative: negative, integerPart: integerPart, fraction: fraction,
            hasExponent: hasExponent, exponent: exponent)
    }

    @inlinable
    mutating func digits() -> Range<Int> {
        let start = position
        while position < input.count, input[position] >= UInt8(ascii: "0"), input[position] <= UInt8(ascii: "9") {
            position += 1
        }
        return start..<position
    }
}

/// A reader of one kind of JSON text over the lexer (the overlay's value parser, the queue's
/// record reader): ``readWhole(_:endingAfter:_:)`` runs one over a whole text.
public protocol JSONLexerReader {
    /// The lexer it reads through.
    var lexer: JSONLexer { get set }
    /// A reader at the lexer's position.
    init(lexer: JSONLexer)
}

extension JSONLexerReader {
    /// Runs `body` with a reader over `text`, then requires nothing but space after what it read
    /// (`what`, for the message); throws ``JSONLexer/Failure``.
    @inlinable
    package static func readWhole<Value>(
        _ text: String, endingAfter what: String, _ body: (inout Self) throws -> Value
    ) throws -> Value {
        try JSONLexer.withLexer(over: text) { lexer in
            var reader = Self(lexer: lexer)
            let value = try body(&reader)
            try reader.lexer.expectEnd(after: what)
            return value
        }
    }
}
