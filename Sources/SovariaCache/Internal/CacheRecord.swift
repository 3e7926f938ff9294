import Foundation

/// The stored form of a ``CachedResponse``: one header line
/// `c1 <serverMs> <fetchedMs> <stale 0|1> <etag bytes or -> <query bytes>[ <position>]`, then
/// the ETag, the query and the body, back to back (lengths in UTF-8 bytes, so any text fits).
/// The position is there only when known.
///
/// A response with kept headers is `c2 … <query bytes> <position or -> <headers bytes>`, the
/// headers (`name: value` lines) between the query and the body. Both forms are read.
enum CacheRecord {
    static func encode(_ response: CachedResponse) -> String {
        let etag = response.etag ?? ""
        // A name or value with a line break (no HTTP header has one) is not kept: it would read
        // back as another header.
        let kept = response.headers.filter { header in
            // The colon looked for as a byte, as `decode` looks for it (a `Character` walk takes
            // `:` and a combining mark after it for one character).
            !(header.key + header.value).contains { $0.isNewline } && !header.key.utf8.contains(UInt8(ascii: ":"))
        }
        let headers =
            kept.isEmpty
            ? ""
            : kept.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { "\($0.key): \($0.value)\n" }
                .joined()
        // Written once into a string of its size: a feed's page encodes a record per answer it
        // rewrites (interpolating the header line and joining the parts cost it a copy each).
        var record = ""
        record.reserveCapacity(
            64 + etag.utf8.count + response.query.utf8.count + headers.utf8.count + response.body.utf8.count)
        record += kept.isEmpty ? "c1 " : "c2 "
        record += String(millis(response.serverTime))
        record += " "
        record += String(millis(response.fetchedAt))
        record += response.isStale ? " 1 " : " 0 "
        record += response.etag == nil ? "-" : String(etag.utf8.count)
        record += " "
        record += String(response.query.utf8.count)
        if kept.isEmpty {
            if let position = response.position {
                record += " "
                record += String(position)
            }
        } else {
            record += " "
            record += response.position.map { String($0) } ?? "-"
            record += " "
            record += String(headers.utf8.count)
        }
        record += "\n"
        record += etag
        record += response.query
        record += headers
        record += response.body
        return record
    }

    /// The response, or `nil` when the text is not a record.
    static func decode(_ text: String) -> CachedResponse? {
        let utf8 = text.utf8
        guard let newline = utf8.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        // Split at bytes: the line is ASCII, and a `Character` walk cost most of a read of a
        // record (an app just launched reads each cached answer of a table at its first page).
        let fields = utf8[..<newline].split(separator: UInt8(ascii: " ")).map(Substring.init)
        let withHeaders = fields.first == "c2"
        guard withHeaders ? fields.count == 8 : (fields.count == 6 || fields.count == 7),
            withHeaders || fields[0] == "c1", let server = Int64(fields[1]),
            let fetched = Int64(fields[2]), let queryLength = Int(fields[5]), queryLength >= 0
        else { return nil }
        let position = fields.count >= 7 && fields[6] != "-" ? Int64(fields[6]) : nil
        if fields.count >= 7, fields[6] != "-" || !withHeaders, position == nil { return nil }
        let headersLength = withHeaders ? Int(fields[7]) : 0
        guard let headersLength else { return nil }
        let etagLength = fields[4] == "-" ? nil : Int(fields[4])
        if fields[4] != "-", etagLength == nil { return nil }
        var cursor = utf8.index(after: newline)
        func take(_ count: Int) -> String? {
            guard count >= 0, let end = utf8.index(cursor, offsetBy: count, limitedBy: utf8.endIndex),
                end.samePosition(in: text.unicodeScalars) != nil
            else { return nil }
            defer { cursor = end }
            return String(text[cursor..<end])
        }
        let etag = etagLength.map { take($0) } ?? .some(nil)
        guard let etag, let query = take(queryLength), let headerLines = take(headersLength) else { return nil }
        var headers: [String: String] = [:]
        for line in headerLines.utf8.split(separator: UInt8(ascii: "\n")).map(Substring.init) {
            guard let colon = line.utf8.firstIndex(of: UInt8(ascii: ":")) else { return nil }
            // `name: value`: the one space after the colon is the record's, the rest the value's.
            let value = line.utf8[line.utf8.index(after: colon)...]
            let start = value.first == UInt8(ascii: " ") ? value.index(after: value.startIndex) : value.startIndex
            headers[String(line[..<colon])] = String(Substring(value[start...]))
        }
        return CachedResponse(
            query: query, body: String(text[cursor...]), serverTime: date(server), fetchedAt: date(fetched),
            etag: etag, isStale: fields[3] == "1", position: position, headers: headers)
    }

    static func millis(_ date: Date) -> Int64 {
        // 16 digits in a response key; clamped in Double first (Int64 traps past its range), then in
        // Int64, where 9,999,999,999,999,999 is exact (in Double it rounds up to 17 digits).
        let value = (date.timeIntervalSince1970 * 1_000).rounded()
        guard value.isFinite else { return 0 }
        return min(Int64(max(0, min(value, 1e17))), 9_999_999_999_999_999)
    }

    static func date(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1_000) }
}
