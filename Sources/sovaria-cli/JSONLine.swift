import SovariaPlumbing

/// Writes the JSON Lines `sovaria` prints: `dump`'s entries and `--json` events.
///
/// Hand-written rather than `JSONEncoder` so the format is exactly the documented one, whatever
/// Foundation version runs it: object members in the order given, no spaces, strings as UTF-8
/// with only `"`, `\` and the control characters U+0000–U+001F escaped (`\n`, `\r`, `\t`, `\b`,
/// `\f`, else `\u00XX`).
enum JSONLine {
    enum Value {
        case string(String)
        case integer(Int)
        case number(Double)
        case bool(Bool)
        case null
        case array([Value])
        case object([(String, Value)])
    }

    /// One object, ending in a newline.
    static func object(_ members: [(String, Value)], into line: inout [UInt8]) {
        appendObject(members, to: &line)
        line.append(UInt8(ascii: "\n"))
    }

    /// `members` as one object, in the order given.
    private static func appendObject(_ members: [(String, Value)], to line: inout [UInt8]) {
        line.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            appendString(member.0, to: &line)
            line.append(UInt8(ascii: ":"))
            append(member.1, to: &line)
        }
        line.append(UInt8(ascii: "}"))
    }

    /// `value` as JSON, an object or array nested in it included.
    private static func append(_ value: Value, to line: inout [UInt8]) {
        switch value {
        case .string(let text): appendString(text, to: &line)
        case .integer(let number): line.append(contentsOf: String(number).utf8)
        case .number(let number): line.append(contentsOf: String(number.isFinite ? number : 0).utf8)
        case .bool(let flag): line.append(contentsOf: (flag ? "true" : "false").utf8)
        case .null: line.append(contentsOf: "null".utf8)
        case .array(let elements):
            line.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { line.append(UInt8(ascii: ",")) }
                append(element, to: &line)
            }
            line.append(UInt8(ascii: "]"))
        case .object(let members): appendObject(members, to: &line)
        }
    }

    static func object(_ members: [(String, Value)]) -> [UInt8] {
        var line: [UInt8] = []
        object(members, into: &line)
        return line
    }

    static func appendString(_ text: String, to line: inout [UInt8]) {
        JSONStringWriter.append(text, to: &line)
    }
}
