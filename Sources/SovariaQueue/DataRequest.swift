/// A request to the data API as the write queue stores it: method, path with query, headers
/// and body, exactly as they will be sent.
///
/// ```swift
/// let insert = DataRequest(
///     method: "POST", path: "/rest/v1/notes", headers: ["Prefer": "return=minimal"], body: #"{"title":"Hi"}"#)
/// insert.table  // "notes"
/// ```
public struct DataRequest: Sendable, Hashable, Codable {
    /// The HTTP method: `"GET"`, `"POST"`, `"PATCH"`, `"DELETE"`, …
    public var method: String
    /// The path with its query, for example `"/rest/v1/notes?id=eq.7"`.
    public var path: String
    /// The request's own headers (the transport adds authentication and the idempotency key).
    public var headers: [String: String]
    /// The body, if any (JSON for the data API).
    public var body: String?
    /// What a controller does when this update or delete matches no row on the server; `nil`
    /// follows the table's rule (by default ``NoMatchPolicy/reject``). Kept with the queued
    /// write; never sent.
    public var noMatchPolicy: NoMatchPolicy?

    /// A request; nothing is checked or changed.
    public init(
        method: String, path: String, headers: [String: String] = [:], body: String? = nil,
        noMatchPolicy: NoMatchPolicy? = nil
    ) {
        self.method = method
        self.path = path
        self.headers = headers
        self.body = body
        self.noMatchPolicy = noMatchPolicy
    }

    /// The table a PostgREST path names: `"notes"` for `"/rest/v1/notes?id=eq.7"`
    /// (percent-decoded), `nil` for any other path, including a function call
    /// (`"/rest/v1/rpc/…"`), which may change any table.
    public var table: String? {
        let prefix = "/rest/v1/".utf8
        guard path.utf8.starts(with: prefix) else { return nil }
        let rest = path.utf8.dropFirst(prefix.count)
        let end = rest.firstIndex { $0 == UInt8(ascii: "/") || $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") }
        let name = String(Substring(rest[..<(end ?? rest.endIndex)]))
        guard !name.isEmpty, name != "rpc" else { return nil }
        // Percent-decoding goes through Foundation (microseconds on Linux): only when needed.
        guard name.utf8.contains(UInt8(ascii: "%")) else { return name }
        return name.removingPercentEncoding ?? name
    }
}
