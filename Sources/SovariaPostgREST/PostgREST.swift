import Foundation
import SovariaQueue
import SovariaSync

/// The API adapter of a PostgREST API, and the builder of its requests: tables under
/// ``pathPrefix``, filters in the query, `Prefer` headers, so reads and queued writes say what
/// they mean.
///
/// The static builders use the default prefix (`/rest/v1/`); an API served under another prefix
/// builds with an instance: `PostgREST(pathPrefix: "/api/").select("notes")`, and gives the same
/// instance to the controller (`SovariaOffline.Configuration(api:)`) and the overlay.
///
/// ```swift
/// let mine = PostgREST.select("notes", columns: "id,title", where: [.eq("list_id", "groceries")], order: "id")
/// let add = PostgREST.insert(into: "notes", json: #"{"id":"n1","title":"Milk"}"#)
/// let done = PostgREST.update("notes", where: [.eq("id", "n1")], json: #"{"done":true}"#)
/// let gone = PostgREST.delete(from: "notes", where: [.eq("id", "n1")])
/// ```
public struct PostgREST: DataAPI, Hashable {
    /// The path prefix of tables, with its leading and trailing `/`. Default: `/rest/v1/`.
    public var pathPrefix: String
    /// The schema PostgREST serves when a request names none (the first of its `db-schemas`):
    /// `Accept-Profile` or `Content-Profile` naming it chooses the same tables as no profile.
    /// Default: `public`.
    public var defaultSchema: String

    /// The adapter of an API whose tables are under `pathPrefix`, whose default schema is
    /// `defaultSchema`.
    public init(pathPrefix: String = "/rest/v1/", defaultSchema: String = "public") {
        self.pathPrefix = pathPrefix
        self.defaultSchema = defaultSchema
    }

    /// A horizontal filter: `<column>=<operator>.<value>` in the query.
    public struct Filter: Sendable, Hashable {
        /// The column.
        public var column: String
        /// The operator and its operand as PostgREST writes them, for example `eq.7`.
        public var condition: String

        /// `column = value`.
        public static func eq(_ column: String, _ value: String) -> Filter {
            Filter(column: column, condition: "eq." + value)
        }
        /// `column <> value`.
        public static func neq(_ column: String, _ value: String) -> Filter {
            Filter(column: column, condition: "neq." + value)
        }
        /// `column > value`.
        public static func gt(_ column: String, _ value: String) -> Filter {
            Filter(column: column, condition: "gt." + value)
        }
        /// `column >= value`.
        public static func gte(_ column: String, _ value: String) -> Filter {
            Filter(column: column, condition: "gte." + value)
        }
        /// `column < value`.
        public static func lt(_ column: String, _ value: String) -> Filter {
            Filter(column: column, condition: "lt." + value)
        }
        /// `column <= value`.
        public static func lte(_ column: String, _ value: String) -> Filter {
            Filter(column: column, condition: "lte." + value)
        }
        /// `column IN (values…)`; each value is double-quoted, so commas and parentheses in it are data.
        public static func `in`(_ column: String, _ values: [String]) -> Filter {
            let quoted = values.map {
                "\"" + $0.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
                    + "\""
            }
            return Filter(column: column, condition: "in.(" + quoted.joined(separator: ",") + ")")
        }
        /// `column IS NULL`.
        public static func isNull(_ column: String) -> Filter { Filter(column: column, condition: "is.null") }

        /// The query item, percent-encoded.
        var queryItem: String { RowFilters.encode(column) + "=" + RowFilters.encode(condition) }
    }

    /// `GET <prefix><table>?select=<columns>&<filters>[&order=…][&limit=…]`: the rows as a JSON array.
    public func select(
        _ table: String, columns: String = "*", where filters: [Filter] = [], order: String? = nil, limit: Int? = nil
    ) -> DataRequest {
        var query = ["select=" + RowFilters.encode(columns)] + filters.map(\.queryItem)
        if let order { query.append("order=" + RowFilters.encode(order)) }
        if let limit { query.append("limit=\(limit)") }
        return DataRequest(method: "GET", path: path(table, query))
    }

    /// `POST <prefix><table>` of a JSON object or array. `returning` asks for the rows back
    /// (`Prefer: return=representation`); `upsert` merges a row whose primary key exists
    /// (`Prefer: resolution=merge-duplicates`), which makes a replayed insert harmless.
    public func insert(
        into table: String, json: String, returning: Bool = true, upsert: Bool = false
    )
        -> DataRequest
    {
        var prefer = [returning ? "return=representation" : "return=minimal"]
        if upsert { prefer.append("resolution=merge-duplicates") }
        return DataRequest(
            method: "POST", path: path(table, []), headers: ["Prefer": prefer.joined(separator: ",")], body: json)
    }

    /// `PATCH <prefix><table>?<filters>` with the JSON object of new values. `onNoMatch` says
    /// what a controller does if it matches no row (`nil`: the table's `ConflictRule`).
    public func update(
        _ table: String, where filters: [Filter], json: String, returning: Bool = false,
        onNoMatch: NoMatchPolicy? = nil
    )
        -> DataRequest
    {
        DataRequest(
            method: "PATCH", path: path(table, filters.map(\.queryItem)),
            headers: ["Prefer": returning ? "return=representation" : "return=minimal"], body: json,
            noMatchPolicy: onNoMatch)
    }

    /// `DELETE <prefix><table>?<filters>`. `onNoMatch` says what a controller does if it matches
    /// no row (`nil`: the table's `ConflictRule`); `.ignoreNoMatch` makes deleting a row that may
    /// be gone already count as done.
    public func delete(
        from table: String, where filters: [Filter], returning: Bool = false, onNoMatch: NoMatchPolicy? = nil
    ) -> DataRequest {
        DataRequest(
            method: "DELETE", path: path(table, filters.map(\.queryItem)),
            headers: ["Prefer": returning ? "return=representation" : "return=minimal"], noMatchPolicy: onNoMatch)
    }

    /// `POST <prefix><table>` of `value` (one row, or an array of rows) encoded by `encoder`
    /// (``JSONCoding/makeEncoder()``: ISO 8601 dates with fractional seconds).
    ///
    /// ```swift
    /// struct Note: Codable { var id: String; var title: String }
    /// let add = try PostgREST.insert(into: "notes", value: Note(id: "n1", title: "Milk"))
    /// ```
    public func insert<Value: Encodable>(
        into table: String, value: Value, returning: Bool = true, upsert: Bool = false,
        encoder: JSONEncoder = JSONCoding.makeEncoder()
    ) throws -> DataRequest {
        insert(into: table, json: try json(value, encoder), returning: returning, upsert: upsert)
    }

    /// `POST <prefix><table>` of `value` with `Prefer: resolution=merge-duplicates`: inserts the
    /// rows, or merges them into the rows with the same primary key.
    public func upsert<Value: Encodable>(
        into table: String, value: Value, returning: Bool = true, encoder: JSONEncoder = JSONCoding.makeEncoder()
    ) throws -> DataRequest {
        insert(into: table, json: try json(value, encoder), returning: returning, upsert: true)
    }

    /// `PATCH <prefix><table>?<filters>` with the fields of `changes` (encode only what changes:
    /// an optional left `nil` is omitted by the standard encoder).
    public func update<Changes: Encodable>(
        _ table: String, where filters: [Filter], set changes: Changes, returning: Bool = false,
        encoder: JSONEncoder = JSONCoding.makeEncoder()
    ) throws -> DataRequest {
        update(table, where: filters, json: try json(changes, encoder), returning: returning)
    }

    private func json<Value: Encodable>(_ value: Value, _ encoder: JSONEncoder) throws -> String {
        String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    private func path(_ table: String, _ query: [String]) -> String {
        pathPrefix + RowFilters.encode(table) + (query.isEmpty ? "" : "?" + query.joined(separator: "&"))
    }
}

extension PostgREST {
    /// Percent-encodes `text` for a query, leaving what PostgREST reads as syntax (`,` `(` `)`
    /// `*` `.`) as it is.
    static func encode(_ text: String) -> String { RowFilters.encode(text) }

    /// ``select(_:columns:where:order:limit:)`` under the default prefix.
    public static func select(
        _ table: String, columns: String = "*", where filters: [Filter] = [], order: String? = nil, limit: Int? = nil
    ) -> DataRequest {
        PostgREST().select(table, columns: columns, where: filters, order: order, limit: limit)
    }

    /// ``insert(into:json:returning:upsert:)`` under the default prefix.
    public static func insert(
        into table: String, json: String, returning: Bool = true, upsert: Bool = false
    ) -> DataRequest {
        PostgREST().insert(into: table, json: json, returning: returning, upsert: upsert)
    }

    /// ``update(_:where:json:returning:onNoMatch:)`` under the default prefix.
    public static func update(
        _ table: String, where filters: [Filter], json: String, returning: Bool = false,
        onNoMatch: NoMatchPolicy? = nil
    ) -> DataRequest {
        PostgREST().update(table, where: filters, json: json, returning: returning, onNoMatch: onNoMatch)
    }

    /// ``delete(from:where:returning:onNoMatch:)`` under the default prefix.
    public static func delete(
        from table: String, where filters: [Filter], returning: Bool = false, onNoMatch: NoMatchPolicy? = nil
    ) -> DataRequest {
        PostgREST().delete(from: table, where: filters, returning: returning, onNoMatch: onNoMatch)
    }

    /// ``insert(into:value:returning:upsert:encoder:)`` under the default prefix.
    public static func insert<Value: Encodable>(
        into table: String, value: Value, returning: Bool = true, upsert: Bool = false,
        encoder: JSONEncoder = JSONCoding.makeEncoder()
    ) throws -> DataRequest {
        try PostgREST().insert(into: table, value: value, returning: returning, upsert: upsert, encoder: encoder)
    }

    /// ``upsert(into:value:returning:encoder:)`` under the default prefix.
    public static func upsert<Value: Encodable>(
        into table: String, value: Value, returning: Bool = true, encoder: JSONEncoder = JSONCoding.makeEncoder()
    ) throws -> DataRequest {
        try PostgREST().upsert(into: table, value: value, returning: returning, encoder: encoder)
    }

    /// ``update(_:where:set:returning:encoder:)`` under the default prefix.
    public static func update<Changes: Encodable>(
        _ table: String, where filters: [Filter], set changes: Changes, returning: Bool = false,
        encoder: JSONEncoder = JSONCoding.makeEncoder()
    ) throws -> DataRequest {
        try PostgREST().update(table, where: filters, set: changes, returning: returning, encoder: encoder)
    }
}
