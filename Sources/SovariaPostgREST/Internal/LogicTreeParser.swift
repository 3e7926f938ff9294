/// Reads PostgREST's `or=(…)` and `and=(…)` parameters: comma-separated conditions
/// (`column.[not.]operator.operand`) and nested `[not.]and(…)`/`[not.]or(…)`, with spaces
/// around items, double-quoted operands (`name.eq."a,b"`) and lists (`id.in.(1,2)`). Anything
/// else (an empty list, unbalanced parentheses or quotes, an unknown operator, text after the
/// closing parenthesis) is `nil`: PostgREST refuses it, and the overlay says so as a reason.
enum LogicTreeParser {
    /// The tree of `key` (`or`, `and`, `not.or`, `not.and`) and its `value`.
    static func parse(_ key: String, _ value: String) -> PostgRESTQuery.LogicTree? {
        // `key` is one of the four the query names exactly; read by bytes, as the rest of the syntax.
        let negated = Substring(key).startsWithBytes(of: "not.")
        let isAny = Substring(key).endsWithBytes(of: "or")
        var reader = Reader(Array(value.unicodeScalars))
        reader.skipSpaces()
        guard let trees = reader.list() else { return nil }
        reader.skipSpaces()
        guard reader.atEnd else { return nil }
        return isAny ? .any(trees, negated: negated) : .all(trees, negated: negated)
    }

    private struct Reader {
        let text: [Unicode.Scalar]
        var index = 0

        init(_ text: [Unicode.Scalar]) { self.text = text }

        var atEnd: Bool { index >= text.count }

        mutating func skipSpaces() {
            while index < text.count, text[index] == " " || text[index] == "\t" { index += 1 }
        }

        func starts(with word: String) -> Bool {
            let scalars = Array(word.unicodeScalars)
            return index + scalars.count <= text.count && Array(text[index..<index + scalars.count]) == scalars
        }

        /// `( item, item… )`: at least one item.
        mutating func list() -> [PostgRESTQuery.LogicTree]? {
            guard index < text.count, text[index] == "(" else { return nil }
            index += 1
            var items: [PostgRESTQuery.LogicTree] = []
            while true {
                skipSpaces()
                guard let item = item() else { return nil }
                items.append(item)
                skipSpaces()
                guard index < text.count else { return nil }
                if text[index] == "," {
                    index += 1
                    continue
                }
                guard text[index] == ")" else { return nil }
                index += 1
                return items
            }
        }

        mutating func item() -> PostgRESTQuery.LogicTree? {
            var negated = false
            let start = index
            if starts(with: "not.") {
                negated = true
                index += 4
            }
            for (word, isAny) in [("and", false), ("or", true)] where starts(with: word) {
                let save = index
                index += word.unicodeScalars.count
                skipSpaces()
                if index < text.count, text[index] == "(" {
                    guard let trees = list() else { return nil }
                    return isAny ? .any(trees, negated: negated) : .all(trees, negated: negated)
                }
                index = save
            }
            index = start
            return condition()
        }

        /// `column.[not.]operator.operand`, the operand up to a `,` or `)` outside quotes and
        /// parentheses.
        mutating func condition() -> PostgRESTQuery.LogicTree? {
            let start = index
            var depth = 0
            var quoted = false
            while index < text.count {
                let character = text[index]
                if quoted {
                    if character == "\\" {
                        index += 1
                    } else if character == "\"" {
                        quoted = false
                    }
                } else if character == "\"" {
                    quoted = true
                } else if character == "(" || character == "{" {
                    depth += 1  // a list (`in.(1,2)`) or an array literal (`cs.{1,2}`)
                } else if character == ")" || character == "}" {
                    if depth == 0 { break }
                    depth -= 1
                } else if character == ",", depth == 0 {
                    break
                }
                index += 1
            }
            guard !quoted, depth == 0 else { return nil }
            var scalars = String.UnicodeScalarView()
            scalars.append(contentsOf: text[start..<index])
            let item = Substring(String(scalars).trimmingTrailingSpaces())
            // At the byte: a `.` a combining mark follows is still the separator.
            guard let dot = item.firstIndex(ofByte: UInt8(ascii: ".")) else { return nil }
            let column = String(item[..<dot])
            guard PostgRESTQuery.isPlainColumn(column) else { return nil }
            let conditionText = String(item.after(byteAt: dot))
            guard let reason = PostgRESTQuery.serverOnlyReason(column, conditionText) else {
                guard var condition = PostgRESTQuery.condition(column, conditionText), !condition.operand.isEmpty else {
                    return nil
                }
                if condition.op != .in, let unquoted = Self.unquoted(condition.operand) {
                    condition.operand = unquoted
                }
                return .condition(condition)
            }
            // Kept as a condition the evaluator leaves to the server, with its reason at parse.
            _ = reason
            return .condition(
                PostgRESTQuery.Condition(
                    column: column, negated: false, op: .eq, operand: "", condition: conditionText))
        }

        /// `"…"` without its quotes and `\` escapes; `nil` when the operand is not quoted.
        static func unquoted(_ operand: String) -> String? {
            let scalars = operand.unicodeScalars
            guard scalars.count >= 2, scalars.first == "\"", scalars.last == "\"" else { return nil }
            var result = String.UnicodeScalarView()
            var escaped = false
            for scalar in scalars.dropFirst().dropLast() {
                if escaped {
                    result.append(scalar)
                    escaped = false
                } else if scalar == "\\" {
                    escaped = true
                } else {
                    result.append(scalar)
                }
            }
            return String(result)
        }
    }
}

extension String {
    fileprivate func trimmingTrailingSpaces() -> String {
        var text = Substring(self)
        while text.utf8.last == UInt8(ascii: " ") || text.utf8.last == UInt8(ascii: "\t") {
            text = text.droppingLastBytes(1)
        }
        return String(text)
    }
}
