import Foundation
import Sovaria
import SovariaPostgREST
import SovariaQueue
import SovariaTestServers
import Testing

@testable import SovariaSync

/// The first change after launch at live speed (issue 62, item 5): following begins as the
/// controller opens, and a read that catches a table up is followed by a wait at once.
@Suite struct FeedFollowingTests {
    /// A feed server that tells each request as it arrives, then answers it from the script.
    final class SignallingTransport: SyncTransport {
        let server = ScriptedTransport()
        let requests: AsyncStream<DataRequest>
        private let arrived: AsyncStream<DataRequest>.Continuation

        init() {
            (requests, arrived) = AsyncStream.makeStream()
            server.state.withLock { $0.defaultAnswer = DataResponse(status: 200, body: "[]") }
        }

        func send(_ request: DataRequest) async throws -> DataResponse {
            arrived.yield(request)
            return try await server.send(request)
        }
    }

    static func controller(feed: SignallingTransport, followsAtOpen: Bool) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()  // never fired: only the open reads the feed
        configuration.memoryPressure = nil
        configuration.changeFeed = PostgRESTChangeFeed(transport: feed)
        configuration.followedTables = ["notes"]
        configuration.feedFollowsAtOpen = followsAtOpen
        return try await SovariaOffline(
            store: MemoryOfflineStore(), transport: ScriptedTransport(), configuration: configuration)
    }

    /// The open's pull is awaited, not the reads: were either read not to come, the test ends
    /// with a failed expectation instead of waiting (a time limit would fail on a busy machine).
    @Test func followingBeginsAtOpenAndWaitsAsSoonAsTheTableIsCaughtUp() async throws {
        let feed = SignallingTransport()
        // The catch-up read's answer, then the wait's: the server held it and says so.
        feed.server.answer(
            DataResponse(
                status: 200, headers: ["Content-Range": "0-0/1"], body: #"[{"p":4,"k":"n1","o":"delete","r":null}]"#),
            DataResponse(status: 200, headers: ["Preference-Applied": "wait=20"], body: "[]"))
        let offline = try await Self.controller(feed: feed, followsAtOpen: true)
        let pull = try #require(offline.state.withLock { $0.feedPullAtOpen }, "the open started a pull")
        await pull.value
        let asked = feed.server.received
        #expect(asked.count == 2, "the catch-up read and one wait: \(asked.map(\.path))")
        let (first, second) = (asked.first, asked.dropFirst().first)
        #expect(first?.header("Prefer") == "count=exact", "a catch-up read with a count, with no timer tick")
        #expect(second?.header("Prefer") == "wait=20", "caught up: a wait at once, not a poll interval later")
        #expect(second?.path.contains("position=gt.4") == true, "after the page's position: \(second?.path ?? "")")
        await offline.close()
    }

    @Test func withoutFollowingAtOpenTheFirstTickReadsTheFeed() async throws {
        let feed = SignallingTransport()
        let offline = try await Self.controller(feed: feed, followsAtOpen: false)
        // Nothing was started at open, so nothing can be asked later behind the test's back: the
        // one request is the pull's own.
        #expect(offline.state.withLock { $0.feedPullAtOpen } == nil, "the open started no pull")
        #expect(feed.server.received.isEmpty)
        try await offline.pullChanges(of: "notes")
        #expect(feed.server.received.count == 1, "only the pull's read: \(feed.server.received.map(\.path))")
        await offline.close()
    }
}
