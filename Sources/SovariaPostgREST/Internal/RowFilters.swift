import Foundation
import SovariaPlumbing

/// Reads and changes the `column=eq.value` filters of a PostgREST path's query, percent-encoded
/// as `PostgREST` writes them.
enum RowFilters {
    /// RFC 3986's unreserved characters, and `,` `(` `)` `*`, which PostgREST reads as syntax
    /// (value lists, `select` columns) and which are safe in a query.
    static let allowed = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~,()*")

    /// `text` percent-encoded for a query.
    static func encode(_ text: String) -> String {
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
        return a.hasSameUTF8Bytes(as: b)
    }

    /// Split at the bytes `?` and `&`, as `PostgRESTQuery` reads a read's query.
    private static func parts(of path: String) -> (base: Substring, query: [Substring]) {
        let path = Substring(path)
        guard let mark = path.firstIndex(ofByte: UInt8(ascii: "?")) else { return (path, []) }
        return (path[..<mark], path.after(byteAt: mark).split(atByte: UInt8(ascii: "&"), omittingEmptyParts: true))
    }

    private static func items(of path: String) -> [Substring] { parts(of: path).query }

    /// An item's name and condition, decoded as `PostgRESTQuery` decodes a read's (`+` a space).
    private static func split(_ item: Substring) -> (name: String, condition: String)? {
        guard let equals = item.firstIndex(ofByte: UInt8(ascii: "=")) else { return nil }
        return (PostgRESTQuery.decode(item[..<equals]), PostgRESTQuery.decode(item.after(byteAt: equals)))
    }
}
