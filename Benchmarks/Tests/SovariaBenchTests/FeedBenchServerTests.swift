import Foundation
import Sovaria
import SovariaQueue
import Testing

@testable import sovaria_bench

/// The change-feed section's in-process server serves its log as `sovaria_feed` does
/// (`ChangeFeed.sql`): a change a later change of its row supersedes is not served, nor counted.
@Suite struct FeedBenchServerTests {
    /// The `(position, key)` of each change a page after `after` serves, and the total its
    /// `Content-Range` counts.
    static func page(
        _ server: FeedBenchServer, after: Int64?, limit: Int = 500
    ) async throws -> (changes: [(position: Int64, key: String)], total: Int?) {
        var path = "/rest/v1/sovaria_feed?select=p:position,k:key&table=eq.items&order=position&limit=\(limit)"
        if let after { path += "&position=gt.\(after)" }
        var request = DataRequest(method: "GET", path: path)
        request.setHeader("Prefer", "count=exact")
        let response = try await server.send(request)
        struct Change: Decodable {
            var p: Int64
            var k: String
        }
        let changes = try JSONDecoder().decode([Change].self, from: Data(response.body.utf8))
        let total = response.header("Content-Range")?.split(separator: "/").last.flatMap { Int($0) }
        return (changes.map { ($0.p, $0.k) }, total)
    }

    @Test func aBacklogServesEachRowsLastChangeOnce() async throws {
        let server = FeedBenchServer(rows: 10)
        for _ in 0..<3 { server.changeRow(4) }
        server.changeRow(7)
        server.changeRow(4)
        let all = try await Self.page(server, after: nil)
        #expect(all.changes.map(\.key) == [FeedBenchServer.id(7), FeedBenchServer.id(4)])
        #expect(all.changes.map(\.position) == [FeedBenchServer.position(3), FeedBenchServer.position(4)])
        #expect(all.total == 2)
        // After the first of row 4's changes: still its last one alone.
        let after = try await Self.page(server, after: FeedBenchServer.position(0))
        #expect(after.changes.map(\.position) == [FeedBenchServer.position(3), FeedBenchServer.position(4)])
        let limited = try await Self.page(server, after: nil, limit: 1)
        #expect(limited.changes.map(\.position) == [FeedBenchServer.position(3)] && limited.total == 2)
    }
}
