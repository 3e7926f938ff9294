import SovariaQueue

/// What makes two reads the same read: its method, its path with query, and the request headers
/// that shape the server's answer, as the API adapter names them
/// (``DataAPI/answerShapingHeaders(of:)``). Two reads of one identity share one cached answer;
/// reads that differ in any of these (a singular object and the list, a `Range` page, another
/// schema) never do.
///
/// Built once per read from the request, and kept with the cached answer as its
/// ``cacheKey``: every refetch (a live query's, the change feed's, one behind a stale answer)
/// sends ``request``, the headers included. `Authorization` and the other headers that do not
/// shape the answer are not part of it.
public struct ReadIdentity: Sendable, Hashable {
    /// One request header that shapes the answer: its name in lower case, its value trimmed.
    public struct Header: Sendable, Hashable {
        /// The header's name, in lower case.
        public var name: String
        /// The header's value, without leading or trailing white space, each inner run of it one space.
        public var value: String

        /// A header; the name is lowered and the value trimmed.
        public init(name: String, value: String) {
            self.name = name.lowercased()
            self.value = value.trimmingWhiteSpace()
        }
    }

    /// The method, in upper case.
    public let method: String
    /// The path with its query, as the request gave it.
    public let path: String
    /// The headers that shape the answer, sorted by name.
    public let headers: [Header]
    /// The table the read reads, as ``DataAPI/table(of:)`` names it (with its schema when the
    /// read chose another one); `nil` for a path that names none.
    public let table: String?

    /// The text the query cache keys the answer by: `GET <path>`, then one `name: value` line
    /// per header. A read with no shaping header keeps the key earlier versions gave it.
    public let cacheKey: String
    /// The request this identity reads: its method, path and headers. Send it as it is (the
    /// transport adds the access token).
    public let request: DataRequest

    /// The identity of `request` under `api`.
    public init(_ request: DataRequest, api: any DataAPI) {
        self.init(
            method: request.method.uppercased(), path: request.path,
            headers: Self.sorted(api.answerShapingHeaders(of: request)), table: api.table(of: request))
    }

    /// `key`: the ``cacheKey`` these parts make, when the caller holds it already.
    private init(method: String, path: String, headers: [Header], table: String?, key: String? = nil) {
        self.method = method
        self.path = path
        self.headers = headers
        self.table = table
        if let key {
            cacheKey = key
        } else {
            var key = method + " " + path
            for header in headers { key += "\n" + header.name + ": " + header.value }
            cacheKey = key
        }
        request = Self.request(method: method, path: path, headers: headers)
    }

    /// The identity a ``cacheKey`` names, or `nil` when the text is not one.
    public init?(cacheKey: String, api: any DataAPI) {
        // Taken apart at its bytes, the inverse of how the key is written (a `Character` walk
        // takes a `\r` before a line's `\n` as one character with it): an app just launched reads
        // back every cached read of a table this way at its first page.
        let utf8 = cacheKey.utf8
        let lines = utf8.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        guard let first = lines.first, let space = first.firstIndex(of: UInt8(ascii: " ")) else { return nil }
        var headers: [Header] = []
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            let (name, value) = (line[..<colon], line[utf8.index(after: colon)...])
            headers.append(Header(name: String(Substring(name)), value: String(Substring(value))))
        }
        let method = String(Substring(first[..<space]))
        let path = String(Substring(first[utf8.index(after: space)...]))
        let sorted = Self.sorted(headers)
        self.init(
            method: method, path: path, headers: sorted,
            table: api.table(of: Self.request(method: method, path: path, headers: sorted)),
            // With no header, the key is the text given; one with headers is written again (the
            // text may hold them in another order, or a name in capitals).
            key: headers.isEmpty ? cacheKey : nil)
    }

    /// Equal when they read the same table with the same key (the key holds the method, the path
    /// and the headers).
    public static func == (lhs: ReadIdentity, rhs: ReadIdentity) -> Bool {
        lhs.cacheKey == rhs.cacheKey && lhs.table == rhs.table
    }

    /// Hashes the key and the table, as ``==(_:_:)`` compares them.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(cacheKey)
        hasher.combine(table)
    }

    /// Whether it reads with `GET`: only such answers are brought up to date or evaluated.
    public var isGet: Bool { method == "GET" }

    private static func request(method: String, path: String, headers: [Header]) -> DataRequest {
        var request = DataRequest(method: method, path: path)
        for header in headers { request.setHeader(header.name, header.value) }
        return request
    }

    private static func sorted(_ headers: [Header]) -> [Header] {
        headers.sorted { $0.name.utf8.lexicographicallyPrecedes($1.name.utf8) }
    }
}

extension String {
    /// The text without leading or trailing white space, each run of it inside one space (a
    /// header value written over two lines, or with two spaces, is the same value).
    func trimmingWhiteSpace() -> String {
        // At bytes: `\r\n` is one `Character`, neither `\r` nor `\n`, and a value kept with it
        // would break a ``ReadIdentity/cacheKey`` into lines.
        utf8.split { $0 == 0x20 || $0 == 0x09 || $0 == 0x0D || $0 == 0x0A }.map { String(Substring($0)) }.joined(
            separator: " ")
    }
}
