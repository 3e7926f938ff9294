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
            headers: ["Content-Range": "  0-0/1", "X-Injected": "a\nContent-Range: 9-9/9"])
        let read = try #require(CacheRecord.decode(CacheRecord.encode(response)))
        #expect(read.headers == ["Content-Range": "  0-0/1"])
    }

    @Test func aResponseWithoutHeadersKeepsTheEarlierForm() throws {
        let response = CachedResponse(
            query: "GET /x", body: "[1]", serverTime: Self.time, fetchedAt: Self.time, position: 7)
        let text = CacheRecord.encode(response)
        #expect(text.hasPrefix("c1 ") && CacheRecord.decode(text) == response)
    }

    @Test(arguments: [
        "c2 1 1 0 - 6 - 99\nGET /x[]", "c2 1 1 0 - 6 x 0\nGET /x[]", "c2 1 1 0 - 6 - 4\nGET /xnope[]",
        "c1 1 1 0 - 6 -\nGET /x[]",
    ])
    func aDamagedRecordIsNone(text: String) {
        #expect(CacheRecord.decode(text) == nil)
    }
}
