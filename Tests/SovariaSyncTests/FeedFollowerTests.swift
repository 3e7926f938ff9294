import Foundation
import SovariaQueue
import Testing

@testable import SovariaSync

/// The feed's following policy alone, as a plain value: no store, no network, no clock of its own.
@Suite struct FeedFollowerTests {
    static let start = Date(timeIntervalSince1970: 1_800_000_000)
    static let backoff = FeedFollower.Backoff(base: .seconds(1), maximum: .seconds(300))
    static let busy = ChangeFeedError(.unavailable, table: "notes", "the server is busy")

    @Test func aTickPullsTheFollowedTablesOnceAtATime() {
        var follower = FeedFollower()
        #expect(
            follower.startTick(["notes", "tasks"], now: Self.start, online: true, offlineRetryAt: nil) == [
                "notes", "tasks",
            ])
        #expect(follower.startTick(["notes"], now: Self.start, online: true, offlineRetryAt: nil) == nil, "one running")
        follower.endTick(failed: false, busy: nil, now: Self.start, backoff: Self.backoff, jitter: 1)
        #expect(follower.startTick(["notes"], now: Self.start, online: true, offlineRetryAt: nil) == ["notes"])
    }

    @Test func failedTicksBackOffDoublingAndATryLaterAnswerIsKeptUpToTheMaximum() {
        var follower = FeedFollower()
        var now = Self.start
        for expected in [1.0, 2.0, 4.0] {
            _ = follower.startTick(["notes"], now: now, online: true, offlineRetryAt: nil)
            follower.endTick(failed: true, busy: nil, now: now, backoff: Self.backoff, jitter: 1)
            #expect(
                follower.startTick(
                    ["notes"], now: now.addingTimeInterval(expected - 0.001), online: true, offlineRetryAt: nil) == nil)
            now = now.addingTimeInterval(expected)
        }
        #expect(follower.startTick(["notes"], now: now, online: true, offlineRetryAt: nil) == ["notes"])
        // A day's Retry-After waits the longest backoff, no more.
        follower.endTick(
            failed: true, busy: DataResponse(status: 503, headers: ["Retry-After": "86400"]), now: now,
            backoff: Self.backoff, jitter: 1)
        #expect(
            follower.startTick(["notes"], now: now.addingTimeInterval(299), online: true, offlineRetryAt: nil) == nil)
        #expect(
            follower.startTick(["notes"], now: now.addingTimeInterval(300), online: true, offlineRetryAt: nil) == [
                "notes"
            ])
        // A tick that goes well forgets the backoff.
        follower.endTick(failed: false, busy: nil, now: now, backoff: Self.backoff, jitter: 1)
        #expect(follower.startTick(["notes"], now: now, online: true, offlineRetryAt: nil) == ["notes"])
    }

    @Test func offlineTheTicksWaitForTheFlushsRetryTime() {
        var follower = FeedFollower()
        let retry = Self.start.addingTimeInterval(30)
        #expect(follower.startTick(["notes"], now: Self.start, online: false, offlineRetryAt: retry) == nil)
        #expect(follower.startTick(["notes"], now: retry, online: false, offlineRetryAt: retry) == ["notes"])
    }

    @Test func aTableWhosePageCouldNotBeAppliedIsPassedOverUntilItsTime() {
        var follower = FeedFollower()
        let until = Self.start.addingTimeInterval(300)
        follower.stopped("notes", ChangeFeedError(.malformedChange, table: "notes", "bad"), until: until)
        #expect(follower.statuses["notes"]?.lastError?.code == .malformedChange)
        #expect(
            follower.startTick(["notes", "tasks"], now: Self.start, online: true, offlineRetryAt: nil) == ["tasks"])
        follower.endTick(failed: false, busy: nil, now: Self.start, backoff: Self.backoff, jitter: 1)
        #expect(
            follower.startTick(["notes", "tasks"], now: until, online: true, offlineRetryAt: nil) == ["notes", "tasks"])
        follower.pulled(
            "notes", position: 4, hasMore: false, behindBy: nil, mustRefetch: false, askedToWait: false,
            offersWaiting: false)
        #expect(follower.statuses["notes"]?.lastError == nil, "a page applied clears the error")
    }

    @Test func aReadWaitsOnceCaughtUpUntilTheFeedAnswersAWaitWithoutWaiting() {
        var follower = FeedFollower()
        #expect(!follower.waits("notes", feedWait: .seconds(20)), "not before it caught up")
        follower.pulled(
            "notes", position: 10, hasMore: true, behindBy: 90, mustRefetch: false, askedToWait: false,
            offersWaiting: false)
        #expect(!follower.waits("notes", feedWait: .seconds(20)))
        #expect(follower.statuses["notes"]?.behindBy == 90)
        follower.pulled(
            "notes", position: 100, hasMore: false, behindBy: nil, mustRefetch: false, askedToWait: false,
            offersWaiting: false)
        #expect(follower.waits("notes", feedWait: .seconds(20)), "caught up: a read that did not ask says nothing")
        #expect(!follower.waits("notes", feedWait: .zero), "never when waiting is off")
        follower.pulled(
            "notes", position: 100, hasMore: false, behindBy: nil, mustRefetch: false, askedToWait: true,
            offersWaiting: false)
        #expect(!follower.waits("notes", feedWait: .seconds(20)), "asked, the feed did not wait: poll")
    }

    @Test func forgettingMovesTheEpochAndKeepsNothingButTheAppliedCount() {
        var follower = FeedFollower()
        follower.applying("notes")
        follower.pulled(
            "notes", position: 7, hasMore: false, behindBy: nil, mustRefetch: true, askedToWait: false,
            offersWaiting: false)
        _ = follower.startTick(["notes"], now: Self.start, online: true, offlineRetryAt: nil)
        follower.endTick(failed: true, busy: nil, now: Self.start, backoff: Self.backoff, jitter: 1)
        follower.unavailable("notes", Self.busy)
        let epoch = follower.epoch
        follower.forget()
        #expect(follower.epoch == epoch + 1)
        #expect(follower.statuses.isEmpty)
        #expect(follower.applies(of: "notes") == 1, "a fetch under way still sees that a page was applied")
        #expect(
            follower.startTick(["notes"], now: Self.start, online: true, offlineRetryAt: nil) == ["notes"], "no backoff"
        )
    }

    @Test func aTickReadsOnWhilePagesComeFullAWaitBringsChangesOrTheFirstWaitIsDue() {
        #expect(FeedFollower.readsOn(hasMore: true, changes: 500, waited: false, waitsNext: false), "a full page")
        #expect(FeedFollower.readsOn(hasMore: false, changes: 2, waited: true, waitsNext: true), "a wait brought some")
        #expect(!FeedFollower.readsOn(hasMore: false, changes: 0, waited: true, waitsNext: true), "a wait brought none")
        #expect(FeedFollower.readsOn(hasMore: false, changes: 3, waited: false, waitsNext: true), "caught up: wait now")
        #expect(!FeedFollower.readsOn(hasMore: false, changes: 3, waited: false, waitsNext: false), "polling: stop")
    }

    @Test func aFailedPullIsOfflineUnavailableOrAPageThatCannotBeApplied() {
        let offline = SyncTransportError.offline("no network")
        #expect(FeedFollower.failure(of: offline) == .offline(offline))
        #expect(FeedFollower.failure(of: Self.busy) == .unavailable(Self.busy), "try later, nothing stale")
        let malformed = ChangeFeedError(.malformedChange, table: "notes", "not JSON")
        #expect(FeedFollower.failure(of: malformed) == .cannotApply(malformed))
        let back = ChangeFeedError(.positionWentBack, table: "notes", "back")
        #expect(FeedFollower.failure(of: back) == .cannotApply(back))
        #expect(
            FeedFollower.failure(of: SyncTransportError(.invalidResponse, "not HTTP")) == .other,
            "another transport error")
        #expect(FeedFollower.failure(of: CancellationError()) == .other)
    }
}
