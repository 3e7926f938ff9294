import Foundation
import SovariaQueue
import SovariaSync

extension PostgREST {
    /// The table a path under ``pathPrefix`` names: `"notes"` for `"/rest/v1/notes?id=eq.7"`
    /// (percent-decoded), `nil` for any other path, including a function call
    /// (`"/rest/v1/rpc/…"`), which may change any table.
    ///
    /// A table of another schema than ``defaultSchema``, chosen with `Accept-Profile` (a read)
    /// or `Content-Profile` (a write), is named `<schema>.<table>`: `other.notes` and `notes`
    /// are two tables, whose answers and writes never mix.
    public func table(of request: DataRequest) -> String? {
        guard let name = tableName(in: request.path) else { return nil }
        guard let schema = schema(of: request) else { return name }
        return schema + "." + name
    }

    /// The table a change feed names `name` (`ChangeFeed.sql` names one of another schema
    /// `schema.table`), as ``table(of:)`` names a request's: without the default schema.
    func tableOfChange(_ name: String) -> String {
        let prefix = defaultSchema + "."
        guard name.utf8.starts(with: prefix.utf8) else { return name }
        return String(Substring(name.utf8.dropFirst(prefix.utf8.count)))
    }

    /// The schema `request` chooses with `Accept-Profile` (a `GET` or `HEAD`) or
    /// `Content-Profile` (any other method), or `nil` for ``defaultSchema``.
    func schema(of request: DataRequest) -> String? {
        let method = request.method.uppercased()
        let header = method == "GET" || method == "HEAD" ? "Accept-Profile" : "Content-Profile"
        guard let schema = request.header(header)?.trimmingCharacters(in: .whitespaces), !schema.isEmpty,
            schema != defaultSchema
        else { return nil }
        return schema
    }

    /// The table name of a path under ``pathPrefix``, percent-decoded.
    private func tableName(in path: String) -> String? {
        let path = path.utf8
        let prefix = pathPrefix.utf8
        guard path.starts(with: prefix) else { return nil }
        let rest = path.dropFirst(prefix.count)
        let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        let name = String(Substring(rest[..<(end ?? rest.endIndex)]))
        guard !name.isEmpty, name != "rpc" else { return nil }
        // Percent-decoding goes through Foundation (microseconds on Linux): only when needed.
        guard name.utf8.contains(UInt8(ascii: "%")) else { return name }
        return name.removingPercentEncoding ?? name
    }

    /// The headers that shape PostgREST's answer: `Accept` (unless it asks for JSON rows),
    /// `Accept-Profile` (unless it names ``defaultSchema``), `Range`, `Range-Unit` (unless
    /// `items`), and `Prefer`'s `count=`, `plurality=` and `timezone=` parts, in lower case.
    public func answerShapingHeaders(of request: DataRequest) -> [ReadIdentity.Header] {
        var headers: [ReadIdentity.Header] = []
        func keep(_ name: String, unless isDefault: (String) -> Bool = { _ in false }) {
            guard let value = request.header(name)?.trimmingCharacters(in: .whitespaces), !value.isEmpty,
                !isDefault(value)
            else { return }
            headers.append(ReadIdentity.Header(name: name, value: value))
        }
        // An `Accept` of JSON rows asks for the plain read's answer.
        if answerShape(of: request) != .rows, let accept = request.header("Accept") {
            headers.append(ReadIdentity.Header(name: "Accept", value: accept.lowercased()))
        }
        if request.method.uppercased() == "GET" || request.method.uppercased() == "HEAD" {
            keep("Accept-Profile") { $0 == defaultSchema }
        }
        keep("Range")
        keep("Range-Unit") { $0.lowercased() == "items" }
        let shaping = (request.header("Prefer") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { part in Self.answerShapingPreferences.contains { part.utf8.starts(with: $0.utf8) } }
        if !shaping.isEmpty {
            headers.append(ReadIdentity.Header(name: "Prefer", value: shaping.sorted().joined(separator: ",")))
        }
        return headers
    }

    /// The `Prefer` parts that change a read's answer.
    private static let answerShapingPreferences = ["count=", "plurality=", "timezone="]

    /// `Content-Range`: the rows' range and, with `Prefer: count=…`, their total.
    public var keptResponseHeaders: [String] { ["Content-Range"] }

    /// Rows for no `Accept`, `application/json` or `*/*`; one row for
    /// `application/vnd.pgrst.object+json` (or `Prefer: plurality=singular`); any other media
    /// type (`text/csv`, `…;nulls=stripped`, a plan) is another shape.
    public func answerShape(of request: DataRequest) -> AnswerShape {
        // Asked of each cached answer a page meets: no string search without the header.
        if let prefer = request.header("Prefer"), prefer.lowercased().contains("plurality=singular") {
            return .singleRow
        }
        guard let accept = request.header("Accept")?.trimmingCharacters(in: .whitespaces).lowercased(),
            !accept.isEmpty
        else { return .rows }
        // The first media type PostgREST can produce wins; the overlay knows two.
        let first = accept.split(separator: ",").first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        let parts = first.split(separator: ";").map { $0.trimmingCharacters(in: .whitespaces) }
        // A parameter other than the charset or the weight (`nulls=stripped`) changes the shape.
        guard
            parts.dropFirst().allSatisfy({ $0.utf8.starts(with: "charset=".utf8) || $0.utf8.starts(with: "q=".utf8) })
        else { return .other("Accept: " + first) }
        switch parts.first ?? "" {
        case "application/json", "*/*", "application/*": return .rows
        case "application/vnd.pgrst.object+json", "application/vnd.pgrst.object": return .singleRow
        default: return .other("Accept: " + first)
        }
    }

    /// Whether `request` asks for a count of the rows (`Prefer: count=…`), which
    /// `Content-Range` carries.
    public func countsRows(_ request: DataRequest) -> Bool {
        (request.header("Prefer") ?? "").split(separator: ",").contains {
            $0.trimmingCharacters(in: .whitespaces).lowercased().utf8.starts(with: "count=".utf8)
        }
    }

    /// The total of the answer's `Content-Range` (`0-24/3573` → 3573); `nil` without one, or for
    /// `*` (a count not asked for).
    public func rowCount(in headers: [String: String]) -> Int? {
        let range = headers.first { $0.key.lowercased() == "content-range" }?.value
        guard let total = range?.split(separator: "/").last, range?.contains("/") == true else { return nil }
        return Int(total.trimmingCharacters(in: .whitespaces))
    }

    /// Whether `request` asks for a page: a `limit` or `offset` in its query, or a `Range` header.
    public func pagesRows(_ request: DataRequest) -> Bool {
        if request.header("Range") != nil { return true }
        // Its items as the overlay reads them: split at bytes, decoded as a query string is.
        let path = Substring(request.path)
        guard let mark = path.firstIndex(ofByte: UInt8(ascii: "?")) else { return false }
        return path.after(byteAt: mark).split(atByte: UInt8(ascii: "&"), omittingEmptyParts: true).contains { item in
            let name = Substring(
                PostgRESTQuery.decode(item[..<(item.firstIndex(ofByte: UInt8(ascii: "=")) ?? item.endIndex)]))
            return name == "limit" || name == "offset" || name.endsWithBytes(of: ".limit")
                || name.endsWithBytes(of: ".offset")
        }
    }

    /// Whether `request`'s path is a function call: `<prefix>rpc/…`.
    public func callsFunction(_ request: DataRequest) -> Bool {
        request.path.utf8.starts(with: (pathPrefix + "rpc/").utf8)
    }

    /// Whether `request` carries `Prefer: resolution=…` (`merge-duplicates` or `ignore-duplicates`).
    public func mergesDuplicates(_ request: DataRequest) -> Bool {
        request.header("Prefer")?.contains("resolution=") == true
    }

    /// The value of the filter `column=eq.<value>` in `path`, decoded; `nil` when there is none.
    public func equalValue(of column: String, in path: String) -> String? {
        RowFilters.equalValue(of: column, in: path)
    }

    /// Whether `path` filters on `column` (with any operator).
    public func filters(on column: String, in path: String) -> Bool {
        RowFilters.filters(on: column, in: path)
    }

    /// `path` without its filters on `column`.
    public func removingFilters(on column: String, from path: String) -> String {
        RowFilters.removing(column, from: path)
    }

    /// `path` with its filters on `column` replaced by `column=eq.<value>`, percent-encoded.
    public func settingFilter(on column: String, equalTo value: String, in path: String) -> String {
        RowFilters.setting(column, equalTo: value, in: path)
    }

    /// `request` with `return=representation` in place of any other `return=` in its `Prefer`
    /// header.
    public func askingForRows(_ request: DataRequest) -> DataRequest {
        let kept = (request.header("Prefer") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty && !$0.utf8.starts(with: "return=".utf8) }
        var asking = request
        asking.setHeader("Prefer", (kept + ["return=representation"]).joined(separator: ","))
        return asking
    }

    /// The `GET` of the rows `write` targets, with its filters less those on `column` and its
    /// headers less `Prefer` and `Content-Type` (a schema chosen for the write with
    /// `Content-Profile` is chosen for the read with `Accept-Profile`).
    public func readingRows(of write: DataRequest, without column: String) -> DataRequest {
        var read = DataRequest(method: "GET", path: RowFilters.removing(column, from: write.path))
        for (name, value) in write.headers.sorted(by: { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }) {
            switch name.lowercased() {
            case "prefer", "content-type": continue
            case "content-profile": read.setHeader("Accept-Profile", value)
            default: read.setHeader(name, value)
            }
        }
        return read
    }

    /// The length of the answer's JSON array body, or the total of its `Content-Range`
    /// (`*/0`); `nil` when the answer says neither.
    public func rowsTouched(by response: DataResponse) -> Int? {
        let trimmed = response.body.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.utf8.first == UInt8(ascii: "["), let rows = RowJSON.rows(trimmed) { return rows.count }
        if let range = response.header("Content-Range"), let slash = range.lastIndex(of: "/") {
            return Int(range[range.index(after: slash)...])
        }
        return nil
    }

    /// ``JSONCoding/makeDecoder()``: ISO 8601 dates, with or without fractional seconds.
    public func makeDecoder() -> JSONDecoder { JSONCoding.makeDecoder() }
}
