import Foundation
import SovariaPlumbing

/// Why a stored entry is not a queue entry: where in its UTF-8 bytes reading stopped, and what
/// was wrong there.
struct QueueJSONError: Error, CustomStringConvertible {
    let offset: Int
    let problem: String

    var description: String { "invalid queue JSON at byte \(offset): \(problem)" }
}

/// Reads queue entries from JSON text over its UTF-8 bytes through the shared `JSONLexer`,
/// without Foundation's decoder (docs/ARCHITECTURE.md).
///
/// Accepts any standard JSON for these objects: what `JSONEncoder` wrote, keys in any order,
/// whitespace, every escape (surrogate pairs included), `null` for an absent optional, integers
/// written as `7.0` or `7e0`; unknown keys are skipped as `JSONDecoder` skips them. Throws
/// ``QueueJSONError`` on anything else: bad syntax, a missing or repeated field, a wrong type, a
/// number out of range, a lone surrogate, text after the object. Never traps: every read checks
/// the end of the input first.
struct QueueJSONReader: JSONLexerReader {
    /// Nested arrays or objects deeper than this in an unknown field are refused rather than
    /// risking the stack.
    static let maxDepth = 64

    var lexer: JSONLexer

    static func queuedWrite(from text: String) throws -> QueuedWrite {
        try read(text) { try $0.queuedWrite() }
    }

    static func rejectedWrite(from text: String) throws -> RejectedWrite {
        try read(text) { try $0.rejectedWrite() }
    }

    private static func read<Value>(_ text: String, _ body: (inout Self) throws -> Value) throws -> Value {
        do {
            return try readWhole(text, endingAfter: "object", body)
        } catch let failure as JSONLexer.Failure {
            throw QueueJSONError(offset: failure.offset, problem: failure.problem)
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
        if literalIfPresent("null") { return nil }
        return try read(&self)
    }

    private func required<Value>(_ value: Value?, _ key: String) throws -> Value {
        guard let value else { throw failure("the field \"\(key)\" is missing") }
        return value
    }

    // MARK: - JSON syntax, read through the shared lexer

    /// Reads `{ "key": value, … }`, handing each key to `member`, which must read its value.
    private mutating func object(_ member: (inout Self, String) throws -> Void) throws {
        lexer.skipWhitespace()
        guard try !lexer.beginObject() else { return }
        repeat {
            let key = try lexer.key()
            try member(&self, key)
        } while try !lexer.endOfMember()
    }

    private mutating func skipValue(depth: Int) throws {
        try lexer.skipValue(depth: depth, maxDepth: Self.maxDepth)
    }

    private mutating func string() throws -> String {
        try lexer.string()
    }

    /// An integer of type `Value`: JSON number syntax whose value is exactly an integer in
    /// `Value`'s range (`7`, `-0`, `7.0`, `70e-1`), so nothing is rounded or clamped.
    private mutating func integer<Value: FixedWidthInteger>(_: Value.Type) throws -> Value {
        lexer.skipWhitespace()
        let start = lexer.position
        let number = try lexer.number()
        guard let value = number.exactInteger(in: lexer.input, as: Value.self) else {
            lexer.position = start
            throw failure("expected an integer that fits \(Value.self)")
        }
        return value
    }

    private mutating func literalIfPresent(_ literal: StaticString) -> Bool {
        lexer.literalIfPresent(literal)
    }

    private func failure(_ problem: String) -> JSONLexer.Failure {
        lexer.failure(problem)
    }
}
