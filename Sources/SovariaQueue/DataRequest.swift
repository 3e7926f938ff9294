/// An HTTP request to the data API as the write queue stores it: method, path with query,
/// headers and body, exactly as they will be sent. What the path means (which table, which row)
/// is the API adapter's to say (`PostgREST` in SovariaPostgREST).
///
/// ```swift
/// let insert = DataRequest(
///     method: "POST", path: "/rest/v1/notes", headers: ["Prefer": "return=minimal"], body: #"{"title":"Hi"}"#)
/// insert.header("prefer")  // "return=minimal"
/// ```
public struct DataRequest: Sendable, Hashable, Codable {
    /// The HTTP method: `"GET"`, `"POST"`, `"PATCH"`, `"DELETE"`, …
    public var method: String
    /// The path with its query, for example `"/rest/v1/notes?id=eq.7"`.
    public var path: String
    /// The request's own headers (the transport adds authentication and the idempotency key).
    ///
    /// Header names are case-insensitive (HTTP's rule): read one with ``header(_:)`` and set one
    /// with ``setHeader(_:_:)``, which replaces every spelling, so a request never carries two
    /// spellings of one header.
    public var headers: [String: String]
    /// The body, if any.
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

    /// The value of the header `name`, compared without case (`"prefer"` finds `"Prefer"`); of two
    /// spellings, the one that sorts first by its bytes.
    public func header(_ name: String) -> String? {
        var found: (name: String, value: String)?
        for (spelling, value) in headers where Self.sameHeaderName(spelling, name) {
            if let first = found, !spelling.utf8.lexicographicallyPrecedes(first.name.utf8) { continue }
            found = (spelling, value)
        }
        return found?.value
    }

    /// Sets the header `name` to `value` (`nil` removes it), replacing every spelling of the name.
    public mutating func setHeader(_ name: String, _ value: String?) {
        for spelling in headers.keys where Self.sameHeaderName(spelling, name) { headers[spelling] = nil }
        headers[name] = value
    }

    /// Whether two header names are the same name: ASCII letters compared without case.
    public static func sameHeaderName(_ first: String, _ second: String) -> Bool {
        first.utf8.count == second.utf8.count
            && zip(first.utf8, second.utf8).allSatisfy { lowercasedASCII($0) == lowercasedASCII($1) }
    }

    private static func lowercasedASCII(_ byte: UInt8) -> UInt8 {
        (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) ? byte + 32 : byte
    }
}
