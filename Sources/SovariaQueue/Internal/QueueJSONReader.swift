import Foundation

/// Why a stored entry is not a queue entry: where in its UTF-8 bytes reading stopped, and what
/// was wrong there.
struct QueueJSONError: Error, CustomStringConvertible {
    let offset: Int
    let problem: String

    var description: String { "invalid queue JSON at byte \(offset): \(problem)" }
}

/// Reads queue entries from JSON text over its UTF-8 bytes, without Foundation's decoder
/// (docs/ARCHITECTURE.md).
///
/// Accepts any standard JSON for these objects: what `JSONEncoder` wrote, keys in any order,
/// whitespace, every escape (surrogate pairs included), `null` for an absent optional, integers
/// written as `7.0` or `7e0`; unknown keys are skipped as `JSONDecoder` skips them. Throws
/// ``QueueJSONError`` on anything else: bad syntax, a missing or repeated field, a wrong type, a
/// number out of range, a lone surrogate, text after the object. Never traps: every read checks
/// the end of the input first.
struct QueueJSONReader {
    /// Nested arrays or objects deeper than this in an unknown field are refused rather than
    /// risking the stack.
    static let maxDepth = 64

    private let input: UnsafeBufferPointer<UInt8>
    private var position = 0

    private init(_ input: UnsafeBufferPointer<UInt8>) {
        self.input = input
    }

    static func queuedWrite(from text: String) throws -> QueuedWrite {
        try read(text) { try $0.queuedWrite() }
    }

    static func rejectedWrite(from text: String) throws -> RejectedWrite {
        try read(text) { try $0.rejectedWrite() }
    }

    private static func read<Value>(_ text: String, _ body: (inout Self) throws -> Value) throws -> Value {
        var text = text
        return try text.withUTF8 { input in
            var reader = Self(input)
            let value = try body(&reader)
            reader.skipWhitespace()
            guard reader.position == input.count else { throw reader.failure("text after the object") }
            return value
        }
    }

    // MARK: - The queue's objects

    private mutating func queuedWrite() throws -> QueuedWrite {
        var attempts: Int?
        var id: String?
        var lastError: String?
        var lastErrorSeen = false
        var queuedAt: Date?
        var request: DataRequest?
        var sequence: UInt64?
        try object { reader, key in
            switch key {
            case "attempts": attempts = try reader.field(attempts, key) { try $0.integer(Int.self) }
            case "id": id = try reader.field(id, key) { try $0.string() }
            case "lastError":
                guard !lastErrorSeen else { throw reader.failure("\"lastError\" appears twice") }
                lastErrorSeen = true
                lastError = try reader.nullable { try $0.string() }
            case "queuedAt": queuedAt = try reader.field(queuedAt, key) { try $0.date() }
            case "request": request = try reader.field(request, key) { try $0.request() }
            case "sequence": sequence = try reader.field(sequence, key) { try $0.integer(UInt64.self) }
            default: try reader.skipValue(depth: 1)
            }
        }
        return QueuedWrite(
            id: try required(id, "id"), sequence: try required(sequence, "sequence"),
            request: try required(request, "request"), queuedAt: try required(queuedAt, "queuedAt"),
            attempts: try required(attempts, "attempts"), lastError: lastError)
    }

    private mutating func rejectedWrite() throws -> RejectedWrite {
        var message: String?
        var reason: RejectionReason?
        var reasonSeen = false
        var rejectedAt: Date?
        var serverRow: String?
        var serverRowSeen = false
        var status: Int?
        var write: QueuedWrite?
        try object { reader, key in
            switch key {
            case "message": message = try reader.field(message, key) { try $0.string() }
            case "reason":
                guard !reasonSeen else { throw reader.failure("\"reason\" appears twice") }
                reasonSeen = true
                reason = try reader.nullable { try $0.enumeration(RejectionReason.self) }
            case "rejectedAt": rejectedAt = try reader.field(rejectedAt, key) { try $0.date() }
            case "serverRow":
                guard !serverRowSeen else { throw reader.failure("\"serverRow\" appears twice") }
                serverRowSeen = true
                serverRow = try reader.nullable { try $0.string() }
            case "status": status = try reader.field(status, key) { try $0.integer(Int.self) }
            case "write": write = try reader.field(write, key) { try $0.queuedWrite() }
            default: try reader.skipValue(depth: 1)
            }
        }
        return RejectedWrite(
            write: try required(write, "write"), status: try required(status, "status"),
            message: try required(message, "message"), rejectedAt: try required(rejectedAt, "rejectedAt"),
            reason: reason ?? .refused, serverRow: serverRow)
    }

    private mutating func request() throws -> DataRequest {
        var body: String?
        var bodySeen = false
        var headers: [String: String]?
        var method: String?
        var noMatchPolicy: NoMatchPolicy?
        var noMatchPolicySeen = false
        var path: String?
        try object { reader, key in
            switch key {
            case "body":
                guard !bodySeen else { throw reader.failure("\"body\" appears twice") }
                bodySeen = true
                body = try reader.nullable { try $0.string() }
            case "headers": headers = try reader.field(headers, key) { try $0.headers() }
            case "method": method = try reader.field(method, key) { try $0.string() }
            case "noMatchPolicy":
                guard !noMatchPolicySeen else { throw reader.failure("\"noMatchPolicy\" appears twice") }
                noMatchPolicySeen = true
                noMatchPolicy = try reader.nullable { try $0.enumeration(NoMatchPolicy.self) }
            case "path": path = try reader.field(path, key) { try $0.string() }
            default: try reader.skipValue(depth: 2)
            }
        }
        return DataRequest(
            method: try required(method, "method"), path: try required(path, "path"),
            headers: try required(headers, "headers"), body: body, noMatchPolicy: noMatchPolicy)
    }

    private mutating func headers() throws -> [String: String] {
        var headers: [String: String] = [:]
        try object { reader, name in
            let value = try reader.string()
            // A dictionary cannot hold both; JSONDecoder's choice between them is not a contract.
            guard headers.updateValue(value, forKey: name) == nil else {
                throw reader.failure("the header \(name) appears twice")
            }
        }
        return headers
    }

    /// A string naming one of `Value`'s cases.
    private mutating func enumeration<Value: RawRepresentable<String>>(_: Value.Type) throws -> Value {
        let name = try string()
        guard let value = Value(rawValue: name) else { throw failure("\"\(name)\" is not a known \(Value.self)") }
        return value
    }

    private mutating func date() throws -> Date {
        QueueCoding.dateFrom(milliseconds: try integer(Int64.self))
    }

    /// Reads a field's value once; a key given twice is refused rather than guessed at.
    private mutating func field<Value>(
        _ current: Value?, _ key: String, _ read: (inout Self) throws -> Value
    ) throws -> Value {
        guard current == nil else { throw failure("\"\(key)\" appears twice") }
        return try read(&self)
    }

    private mutating func nullable<Value>(_ read: (inout Self) throws -> Value) throws -> Value? {
        if try literalIfPresent("null") { return nil }
        return try read(&self)
    }

    private func required<Value>(_ value: Value?, _ key: String) throws -> Value {
        guard let value else { throw failure("the field \"\(key)\" is missing") }
        return value
    }

    // MARK: - JSON syntax

    /// Reads `{ "key": value, … }`, handing each key to `member`, which must read its value.
    private mutating func object(_ member: (inout Self, String) throws -> Void) throws {
        skipWhitespace()
        try expect(UInt8(ascii: "{"), "an object")
        skipWhitespace()
        if peek() == UInt8(ascii: "}") {
            position += 1
            return
        }
        while true {
            skipWhitespace()
            let key = try string()
            skipWhitespace()
            try expect(UInt8(ascii: ":"), "':' after a key")
            skipWhitespace()
            try member(&self, key)
            skipWhitespace()
            switch peek() {
            case UInt8(ascii: ","): position += 1
            case UInt8(ascii: "}"):
                position += 1
                return
            default: throw failure("expected ',' or '}' in an object")
            }
        }
    }

    /// Validates and steps over any JSON value (an unknown field's).
    private mutating func skipValue(depth: Int) throws {
        guard depth <= Self.maxDepth else { throw failure("nested deeper than \(Self.maxDepth)") }
        skipWhitespace()
        switch peek() {
        case UInt8(ascii: "\""): _ = try string()
        case UInt8(ascii: "{"): try object { reader, _ in try reader.skipValue(depth: depth + 1) }
        case UInt8(ascii: "["):
            position += 1
            skipWhitespace()
            if peek() == UInt8(ascii: "]") {
                position += 1
                return
            }
            while true {
                try skipValue(depth: depth + 1)
                skipWhitespace()
                switch peek() {
                case UInt8(ascii: ","): position += 1
                case UInt8(ascii: "]"):
                    position += 1
                    return
                default: throw failure("expected ',' or ']' in an array")
                }
            }
        case UInt8(ascii: "t"): try expectLiteral("true")
        case UInt8(ascii: "f"): try expectLiteral("false")
        case UInt8(ascii: "n"): try expectLiteral("null")
        default: _ = try number()
        }
    }

    private mutating func string() throws -> String {
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

    /// Reads what follows a backslash.
    private mutating func unescape(into bytes: inout [UInt8]) throws {
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
                guard try literalIfPresent("\\u") else { throw failure("a high surrogate without a low one") }
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

    private mutating func hexQuad() throws -> UInt32 {
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

    /// An integer of type `Value`: JSON number syntax whose value is exactly an integer in
    /// `Value`'s range (`7`, `-0`, `7.0`, `70e-1`), so nothing is rounded or clamped.
    private mutating func integer<Value: FixedWidthInteger>(_: Value.Type) throws -> Value {
        skipWhitespace()
        let start = position
        let number = try number()
        guard let value = number.exactInteger(in: input, as: Value.self) else {
            position = start
            throw failure("expected an integer that fits \(Value.self)")
        }
        return value
    }

    /// The parts of a number: `-? int (. fraction)? (e exponent)?`, as ranges of `input`.
    private mutating func number() throws -> JSONNumber {
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
        if peek() == UInt8(ascii: "e") || peek() == UInt8(ascii: "E") {
            position += 1
            let exponentNegative = peek() == UInt8(ascii: "-")
            if exponentNegative || peek() == UInt8(ascii: "+") { position += 1 }
            let exponentDigits = digits()
            guard !exponentDigits.isEmpty else { throw failure("expected digits in the exponent") }
            for index in exponentDigits {
                // Saturates: past ±10,000 the value is 0 or out of range anyway.
                exponent = min(exponent * 10 + Int(input[index] - UInt8(ascii: "0")), 10_000)
            }
            if exponentNegative { exponent = -exponent }
        }
        return JSONNumber(negative: negative, integerPart: integerPart, fraction: fraction, exponent: exponent)
    }

    private mutating func digits() -> Range<Int> {
        let start = position
        while let byte = peek(), byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { position += 1 }
        return start..<position
    }

    // MARK: - Bytes

    private func peek() -> UInt8? {
        position < input.count ? input[position] : nil
    }

    mutating func skipWhitespace() {
        while let byte = peek(),
            byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\r")
                || byte == UInt8(ascii: "\t")
        {
            position += 1
        }
    }

    private mutating func expect(_ byte: UInt8, _ what: String) throws {
        guard peek() == byte else { throw failure("expected \(what)") }
        position += 1
    }

    private mutating func expectLiteral(_ literal: StaticString) throws {
        guard try literalIfPresent(literal) else { throw failure("expected \(literal)") }
    }

    /// Steps over `literal` if the input continues with it.
    private mutating func literalIfPresent(_ literal: StaticString) throws -> Bool {
        let matches = literal.withUTF8Buffer { literal in
            input.count - position >= literal.count
                && UnsafeBufferPointer(rebasing: input[position..<position + literal.count]).elementsEqual(literal)
        }
        if matches { position += literal.utf8CodeUnitCount }
        return matches
    }

    private func failure(_ problem: String) -> QueueJSONError {
        QueueJSONError(offset: position, problem: position < input.count ? problem : problem + " (the text ends)")
    }
}

/// A JSON number as its digit ranges, turned into an integer only when that is exact.
private struct JSONNumber {
    let negative: Bool
    let integerPart: Range<Int>
    let fraction: Range<Int>
    let exponent: Int

    /// The value when it is a whole number that `Value` holds exactly, else `nil`.
    func exactInteger<Value: FixedWidthInteger>(in input: UnsafeBufferPointer<UInt8>, as _: Value.Type) -> Value? {
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
