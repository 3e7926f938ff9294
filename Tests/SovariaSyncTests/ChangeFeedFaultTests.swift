import Foundation
import Sovaria
import SovariaCache
import SovariaQueue
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaPostgREST
@_spi(Diagnostics) @testable import SovariaSync

/// The change feed when its server fails (issue 52, item 4): a busy server is tried again
/// after the backoff, a page that cannot be applied stops its table only for a while, one
/// table's long poll never holds another's pull, and ``SovariaOffline/clear()`` forgets the
/// feeds.
@Suite struct ChangeFeedFaultTests {
    typealias FeedRig = ChangeFeedTests.FeedRig

    @Test(arguments: [502, 503, 429, 408])
    func aBusyFeedIsTriedAgainAfterTheBackoffAndMarksNothingStale(status: Int) async throws {
        let rig = try await FeedRig(.memory, followed: ["notes"])
        try await rig.cacheTheLists()
        rig.feedServer.answer(DataResponse(status: status, body: "deploying"))
        await rig.rig.timer.fire()
        let error = try #require(rig.offline.status.changeFeeds["notes"]?.lastError)
        #expect(error.code == .unavailable && error.isTransient)
        #expect(try await ChangeFeedTests.cached(rig.offline, ChangeFeedTests.all)?.isStale == false)
        let tries = rig.feedServer.received.count
        await rig.rig.timer.fire()
        #expect(rig.feedServer.received.count == tries, "not before the backoff")
        rig.rig.clock.advance(seconds: 2)
        rig.feed(ChangeFeedTests.threeChanges[0])
        await rig.rig.timer.fire()
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 10, "followed again after the backoff")
        #expect(rig.offline.status.changeFeeds["notes"]?.lastError == nil)
    }

    @Test func aBusyFeedsRetryAfterSetsTheNextTry() async throws {
        let rig = try await FeedRig(.memory, followed: ["notes"])
        rig.feedServer.answer(DataResponse(status: 503, headers: ["Retry-After": "120"], body: ""))
        await rig.rig.timer.fire()
        let tries = rig.feedServer.received.count
        rig.rig.clock.advance(seconds: 119)
        await rig.rig.timer.fire()
        #expect(rig.feedServer.received.count == tries, "the server asked for 120 s")
        rig.rig.clock.advance(seconds: 2)
        rig.feed(ChangeFeedTests.threeChanges[0])
        await rig.rig.timer.fire()
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 10)
    }

    @Test func aPageThatCannotBeAppliedStopsTheTableOnlyUntilTheLongestBackoff() async throws {
        let rig = try await FeedRig(.memory, followed: ["notes"])
        try await rig.cacheTheLists()
        rig.feed(#"{"position":"x"}"#)
        await rig.rig.timer.fire()
        #expect(rig.offline.status.changeFeeds["notes"]?.lastError?.code == .malformedChange)
        #expect(try await ChangeFeedTests.cached(rig.offline, ChangeFeedTests.all)?.isStale == true)
        // Past the timer's own backoff, still inside the table's stop.
        rig.rig.clock.advance(seconds: 60)
        let tries = rig.feedServer.received.count
        await rig.rig.timer.fire()
        #expect(rig.feedServer.received.count == tries)
        rig.rig.clock.advance(seconds: 300)
        rig.feed(ChangeFeedTests.threeChanges[0])
        await rig.rig.timer.fire()
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 10, "tried again later, not never")
        #expect(rig.offline.status.changeFeeds["notes"]?.lastError == nil)
    }

    static func controller(_ feed: some ChangeFeed) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.changeFeed = feed
        return try await SovariaOffline(
            store: MemoryOfflineStore(), transport: ScriptedTransport(), configuration: configuration)
    }

    /// Each table has a gate of its own (a shared one is what held every pull behind one long poll).
    @Test func eachTableHasAGateOfItsOwn() async throws {
        let offline = try await Self.controller(HeldFeed())
        #expect(offline.feedGate(of: "a") === offline.feedGate(of: "a"))
        #expect(offline.feedGate(of: "a") !== offline.feedGate(of: "b"))
    }

    /// No time limit: a machine busy with other suites can hold any task for a minute, so a
    /// limit would fail this by timing alone. On a shared gate it would not finish.
    @Test func oneTablesLongPollNeverHoldsAnotherTablesPull() async throws {
        let feed = HeldFeed()
        let offline = try await Self.controller(feed)
        let waiting = Task { try await offline.pullChanges(of: "a", wait: .seconds(20)) }
        await feed.heldPullStarted()
        // "a" waits on the server; "b" and a pull to refresh of it pass.
        let pulled = try await offline.pullChanges(of: "b")
        #expect(pulled.position == 1)
        feed.release()
        #expect(try await waiting.value.position == 1)
    }

    @Test func aPageThatArrivesAfterAClearLeavesNothingBehind() async throws {
        let feed = HeldFeed()
        let offline = try await Self.controller(feed)
        let waiting = Task { try await offline.pullChanges(of: "a", wait: .seconds(20)) }
        await feed.heldPullStarted()
        try await offline.clear()
        feed.release()
        let pulled = try await waiting.value
        #expect(pulled.changes == 0 && pulled.position == nil)
        #expect(try await offline.feedCheckpoint(of: "a") == nil && offline.status.changeFeeds["a"] == nil)
    }

    @Test func aCountedAnswerIsFetchedAgainRatherThanRewritten() async throws {
        let rig = try await FeedRig(.memory)
        var counted = ChangeFeedTests.all
        counted.setHeader("Prefer", "count=exact")
        rig.rig.transport.answer(
            DataResponse(status: 200, headers: ["Content-Range": "0-2/3"], body: ChangeFeedTests.server),
            DataResponse(status: 200, body: ChangeFeedTests.server))
        _ = try await rig.offline.read(counted, policy: .networkOnly)
        _ = try await rig.offline.read(ChangeFeedTests.all, policy: .networkOnly)
        rig.feed(ChangeFeedTests.threeChanges[0])
        let pulled = try await rig.offline.pullChanges(of: "notes")
        #expect(pulled.updatedAnswers == 1 && pulled.staleAnswers == 1)
        let stale = try #require(try await ChangeFeedTests.cached(rig.offline, counted))
        #expect(stale.isStale && stale.headers["Content-Range"] == "0-2/3" && stale.body == ChangeFeedTests.server)
        #expect(try await ChangeFeedTests.cached(rig.offline, ChangeFeedTests.all)?.body.contains("n4") == true)
    }

    @Test func clearForgetsTheFeedsCheckpointsAndErrors() async throws {
        let rig = try await FeedRig(.memory, followed: ["notes"])
        try await rig.cacheTheLists()
        rig.feed(ChangeFeedTests.threeChanges[0])
        try await rig.offline.pullChanges(of: "notes")
        rig.feed(#"{"position":"x"}"#)
        await #expect(throws: ChangeFeedError.self) { try await rig.offline.pullChanges(of: "notes") }
        try await rig.offline.clear()
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == nil)
        #expect(rig.offline.status.changeFeeds.isEmpty)
        // The timer follows the table again at once, from the log's start.
        rig.feed(ChangeFeedTests.threeChanges[0])
        let before = rig.feedServer.received.count
        await rig.rig.timer.fire()
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 10)
        // Its first read starts at the log's start (a wait after it goes on from position 10).
        #expect(rig.feedServer.received.dropFirst(before).first?.path.contains("position=gt") == false)
    }
}

/// A feed whose pulls of table `a` wait until the test releases them; every other table's page
/// comes at once. Each page holds one change at position 1.
final class HeldFeed: ChangeFeed {
    private let state = Mutex((released: false, started: false, waiters: [CheckedContinuation<Void, Never>]()))
    private let startedSignal = AsyncStream.makeStream(of: Void.self)

    func changes(of table: String, after position: Int64?, wait: Duration?) async throws -> ChangeFeedPage {
        if table == "a" {
            startedSignal.continuation.yield()
            await withCheckedContinuation { continuation in
                let released = state.withLock { state in
                    if !state.released { state.waiters.append(continuation) }
                    return state.released
                }
                if released { continuation.resume() }
            }
        }
        return ChangeFeedPage(
            changes: [RowChange(position: 1, table: table, key: "k", operation: .delete)], position: 1)
    }

    func latestPosition(of table: String) async throws -> Int64? { 1 }

    func position(of response: DataResponse) -> Int64? { nil }

    /// Returns once a pull of `a` reached the server.
    func heldPullStarted() async {
        var iterator = startedSignal.stream.makeAsyncIterator()
        _ = await iterator.next()
    }

    func release() {
        for waiter in state.withLock({ state in
            state.released = true
            defer { state.waiters = [] }
            return state.waiters
        }) { waiter.resume() }
    }
}
