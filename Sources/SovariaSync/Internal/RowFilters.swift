import Foundation

/// Reads and changes the `column=eq.value` filters of a PostgREST path's query, percent-encoded
/// as `PostgREST` writes them.
package enum RowFilters {
    /// RFC 3986's unreserved characters, and `,` `(` `)` `*`, which PostgREST reads as syntax
    /// (value lists, `select` columns) and which are safe in a query.
    package static let allowed = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~,()*")

    /// `text` percent-encoded for a query.
    package static func encode(_ text: String) -> String {
        text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// The value of the filter `column=eq.<value>` in `path`, decoded; `nil` when there is none.
    static func equalValue(of column: String, in path: String) -> String? {
        for item in items(of: path) {
            // Bytes, not characters: a value may begin with a combining mark, which would join
            // the "." of "eq." into one character.
            guard let (name, condition) = split(item), same(name, column), condition.utf8.starts(with: "eq.".utf8)
            else { continue }
            return String(Substring(condition.utf8.dropFirst(3)))
        }
        return nil
    }

    /// Whether `path` filters on `column` (with any operator).
    static func filters(on column: String, in path: String) -> Bool {
        items(of: path).contains { same(split($0)?.name, column) }
    }

    /// `path` without its filters on `column`.
    static func removing(_ column: String, from path: String) -> String {
        let (base, query) = parts(of: path)
        let kept = query.filter { !same(split($0)?.name, column) }
        return kept.isEmpty ? String(base) : base + "?" + kept.joined(separator: "&")
    }

    /// `path` with its filters on `column` replaced by `column=eq.<value>`.
    static func setting(_ column: String, equalTo value: String, in path: String) -> String {
        let (base, query) = parts(of: path)
        let kept = query.filter { !same(split($0)?.name, column) }.map(String.init)
        return base + "?" + (kept + [encode(column) + "=" + encode("eq." + value)]).joined(separator: "&")
    }

    /// Whether `a` and `b` are the same UTF-8 bytes: filter values name rows, and two spellings
    /// Swift's `==` calls equal (`"é"`, `"e\u{301}"`) are two keys to PostgreSQL.
    static func same(_ a: String?, _ b: String?) -> Bool {
        guard let a, let b else { return a == nil && b == nil }
        return a.utf8.elementsEqual(b.utf8)
    }

    private static func parts(of path: String) -> (base: Substring, query: [Substring]) {
        guard let mark = path.firstIndex(of: "?") else { return (path[...], []) }
        let query = path[path.index(after: mark)...]
        return (path[..<mark], query.split(separator: "&", omittingEmptySubsequences: true))
    }

    private static func items(of path: String) -> [Substring] { parts(of: path).query }

    private static func split(_ item: Substring) -> (name: String, condition: String)? {
        guard let equals = item.firstIndex(of: "=") else { return nil }
        let name = item[..<equals].removingPercentEncoding ?? String(item[..<equals])
        let value = item[item.index(after: equals)...]
        return (name, value.removingPercentEncoding ?? String(value))
    }
}

/// The rows of a PostgREST answer, read with `JSONSerialization` (only on the paths that need
/// them: a write that may have matched nothing, a conflict).
enum RowJSON {
    /// The objects of a JSON array body; `nil` when the body is not an array of objects.
    static func rows(_ body: String) -> [[String: Any]]? {
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
    static func filterText(_ value: Any?) -> String? {
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
    static func text(_ row: [String: Any]) -> String {
        guard let data = try? JSONSerialization.data(withJSONObject: row, options: [.sortedKeys]) else { return "{}" }
        return String(decoding: data, as: UTF8.self)
    }

    /// The number of rows a write's answer says it touched: the length of its JSON array body, or
    /// the total of `Content-Range` (`*/0`); `nil` when the answer does not say.
    static func rowsTouched(_ response: DataResponse) -> Int? {
        let trimmed = response.body.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.utf8.first == UInt8(ascii: "["), let rows = rows(trimmed) { return rows.count }
        if let range = response.header("Content-Range"), let slash = range.lastIndex(of: "/") {
            return Int(range[range.index(after: slash)...])
        }
        return nil
    }
}
