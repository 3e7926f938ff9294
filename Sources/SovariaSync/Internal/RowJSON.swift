import Foundation

/// The rows of a JSON answer, read with `JSONSerialization` (only on the paths that need them: a
/// write that may have matched nothing, a conflict).
package enum RowJSON {
    /// The objects of a JSON array body; `nil` when the body is not an array of objects.
    package static func rows(_ body: String) -> [[String: Any]]? {
        guard let data = body.data(using: .utf8),
            let array = try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? [Any]
        else { return nil }
        var rows: [[String: Any]] = []
        for element in array {
            guard let row = element as? [String: Any] else { return nil }
            rows.append(row)
        }
        return rows
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
        return a.utf8.elementsEqual(b.utf8)
    }
}
