import Foundation
import Testing

@testable import SovariaCache

/// The stored form of a cached response: the kept response headers round-trip (issue 52), and
/// the form without them is still read.
@Suite struct CacheRecordTests {
    static let time = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aResponseWithHeadersComesBackWithThem() throws {
        let response = CachedResponse(
            query: "GET /rest/v1/notes?select=id\nprefer: count=exact", body: #"[{"id":"a: b"}]"#,
            serverTime: Self.time, fetchedAt: Self.time, etag: "\"e1\"", isStale: true, position: 42,
            headers: ["Content-Range": "0-0/5", "X-Other": "a: b"])
        let text = CacheRecord.encode(response)
        #expect(text.hasPrefix("c2 "))
        #expect(CacheRecord.decode(text) == response)
        let unpositioned = CachedResponse(
            query: "GET /x", body: "[]", serverTime: Self.time, fetchedAt: Self.time, headers: ["Content-Range": "*/0"])
        #expect(CacheRecord.decode(CacheRecord.encode(unpositioned)) == unpositioned)
    }

    @Test func aHeaderWithALineBreakIsNotKeptAndSpacesInAValueAre() throws {
        let response = CachedResponse(
            query: "GET /x", body: "[]", serverTime: Self.time, fetchedAt: Self.time,
            headers: [
                "Content-Range": "  0-0/1", "X-Injected": "a\nContent-Range: 9-9/9",
                // A colon in a name, with a mark after it: no name a record can hold either.
                "X-Colon:\u{301}": "v",
            ])
        let read = try #require(CacheRecord.decode(CacheRecord.encode(response)))
        #expect(read.headers == ["Content-Range": "  0-0/1"])
    }

    /// A value whose first character is a space with a combining mark after it: the record's
    /// one space is a byte of its own, and the value keeps the space it starts with.
    @Test func aValueStartingWithASpaceAndAMarkComesBackWhole() throws {
        let response = CachedResponse(
            query: "GET /x", body: "[]", serverTime: Self.time, fetchedAt: Self.time,
            headers: ["X-Mark": " \u{301}a", "X-Plain": "\u{301}b"])
        let read = try #require(CacheRecord.decode(CacheRecord.encode(response)))
        #expect(read.headers["X-Mark"].map { Array($0.utf8) } == Array(" \u{301}a".utf8))
        #expect(read.headers["X-Plain"].map { Array($0.utf8) } == Array("\u{301}b".utf8))
    }

    @Test func aResponseWithoutHeadersKeepsTheEarlierForm() throws {
        let response = CachedResponse(
            query: "GET /x", body: "[1]", serverTime: Self.time, fetchedAt: Self.time, position: 7)
        let text = CacheRecord.encode(response)
        #expect(text.hasPrefix("c1 ") && CacheRecord.decode(text) == response)
    }

    /// The stored form, byte for byte: records written by earlier builds are read by later
    /// ones, and the other way round.
    @Test func theStoredFormIsTheDocumentedOne() {
        let millis = Int64(Self.time.timeIntervalSince1970 * 1_000)
        let plain = CachedResponse(
            query: "GET /x", body: "[1]", serverTime: Self.time, fetchedAt: Self.time, etag: "\"e\"", isStale: true,
            position: 7)
        #expect(CacheRecord.encode(plain) == "c1 \(millis) \(millis) 1 3 6 7\n\"e\"GET /x[1]")
        let unpositioned = CachedResponse(query: "GET /x", body: "[]", serverTime: Self.time, fetchedAt: Self.time)
        #expect(CacheRecord.encode(unpositioned) == "c1 \(millis) \(millis) 0 - 6\nGET /x[]")
        let withHeaders = CachedResponse(
            query: "GET /x", body: "[]", serverTime: Self.time, fetchedAt: Self.time,
            headers: ["X-B": "2", "Content-Range": "0-0/1"])
        #expect(
            CacheRecord.encode(withHeaders)
                == "c2 \(millis) \(millis) 0 - 6 - 28\nGET /xContent-Range: 0-0/1\nX-B: 2\n[]")
    }

    @Test(arguments: [
        "c2 1 1 0 - 6 - 99\nGET /x[]", "c2 1 1 0 - 6 x 0\nGET /x[]", "c2 1 1 0 - 6 - 4\nGET /xnope[]",
        "c1 1 1 0 - 6 -\nGET /x[]",
    ])
    func aDamagedRecordIsNone(text: String) {
        #expect(CacheRecord.decode(text) == nil)
    }
}
