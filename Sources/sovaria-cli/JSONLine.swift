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
    }

    /// One object, ending in a newline.
    static func object(_ members: [(String, Value)], into line: inout [UInt8]) {
        line.append(UInt8(ascii: "{"))
        for (index, member) in members.enumerated() {
            if index > 0 { line.append(UInt8(ascii: ",")) }
            appendString(member.0, to: &line)
            line.append(UInt8(ascii: ":"))
            switch member.1 {
            case .string(let text): appendString(text, to: &line)
            case .integer(let number): line.append(contentsOf: String(number).utf8)
            case .number(let number): line.append(contentsOf: String(number.isFinite ? number : 0).utf8)
            case .bool(let flag): line.append(contentsOf: (flag ? "true" : "false").utf8)
            }
        }
        line.append(contentsOf: "}\n".utf8)
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
