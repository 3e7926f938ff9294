import Foundation
import SovariaQueue

/// How the controller follows the change feed, as a plain value: per-table status, which tables
/// a tick pulls, when a read waits for a change, and the backoff after failures. No I/O and no
/// clock of its own: the controller keeps it in its state, calls it under its lock with the time
/// and what happened, and does the reading and applying (swift-nio's `NIOAsyncWriter.StateMachine`
/// is the model). Tested alone in `FeedFollowerTests`.
struct FeedFollower {
    /// What the backoff after failed ticks depends on, from the configuration.
    struct Backoff {
        var base: Duration
        var maximum: Duration
    }

    /// Each table's status as ``SyncStatus/changeFeeds`` shows it.
    private(set) var statuses: [String: ChangeFeedStatus] = [:]
    /// Moved by every ``forget()``: a pull that began before it leaves nothing behind.
    private(set) var epoch = 0
    /// Whether each table's feed offered to wait at its last pull asked to.
    private var offersWaiting: [String: Bool] = [:]
    /// Pulls applied per table since the controller opened (each one page, or the full pages it
    /// read on).
    private var applies: [String: Int] = [:]
    /// A tick's pulls are running: the next tick does not start others.
    private var following = false
    /// Tables whose last pull could not be applied: ticks pass them over until then.
    private var stoppedUntil: [String: Date] = [:]
    /// After failed ticks: none before this, and how many failed in a row.
    private var retryAt: Date?
    private var failures = 0

    // MARK: - Ticks

    /// Starts a tick at `now`: the tables of `followed` it pulls, or `nil` when it pulls none (a
    /// tick still running, a backoff, offline until `offlineRetryAt`). Call
    /// ``endTick(failed:busy:now:backoff:jitter:)`` after a tick that started.
    mutating func startTick(_ followed: [String], now: Date, online: Bool, offlineRetryAt: Date?) -> [String]? {
        if following { return nil }
        if let retryAt, retryAt > now { return nil }
        if !online, let offlineRetryAt, offlineRetryAt > now { return nil }
        following = true
        return followed.filter { (stoppedUntil[$0] ?? .distantPast) <= now }
    }

    /// Ends a tick: after one whose pulls all went well the backoff is forgotten; after a failed
    /// one the next tick waits for the backoff (`base` doubled per failed tick, with `jitter`), or
    /// for `busy`'s `Retry-After` (a failure's answer asking to try later), at most `maximum`
    /// either way.
    mutating func endTick(failed: Bool, busy: DataResponse?, now: Date, backoff: Backoff, jitter: Double) {
        following = false
        guard failed else {
            (retryAt, failures) = (nil, 0)
            return
        }
        failures += 1
        let delay = RetryDelay.after(
            busy ?? DataResponse(status: 0), failures: failures, base: backoff.base, maximum: backoff.maximum,
            jitter: jitter, now: now)
        // A Retry-After past the longest backoff (a proxy's day) waits the longest backoff.
        retryAt = now.addingTimeInterval(min(delay, backoff.maximum).timeInterval)
    }

    /// Whether a tick reads `table` again at once after a pull: while its pages come full
    /// (`hasMore`), while a read that waited brings changes (the next one waits again), and from
    /// a read that caught up without waiting to the first wait (`waitsNext`). A long poll thus
    /// follows the table between ticks, from the first one on.
    static func readsOn(hasMore: Bool, changes: Int, waited: Bool, waitsNext: Bool) -> Bool {
        hasMore || (waited && changes > 0) || (!waited && waitsNext)
    }

    /// Whether the next read of `table` waits for a change: when waiting is allowed (`feedWait`
    /// above zero), the table has caught up, and its feed has not answered a read asked to wait
    /// without waiting.
    func waits(_ table: String, feedWait: Duration) -> Bool {
        feedWait > .zero && offersWaiting[table] != false && statuses[table]?.isCaughtUp == true
    }

    // MARK: - Pulls

    /// What a pull that threw means for following its table.
    enum Failure: Equatable {
        /// No network: the controller goes offline, and its ticks wait for the flush's retry.
        case offline(SyncTransportError)
        /// The server could not answer now (408, 429, 5xx): the table's status shows it, nothing
        /// is stale, and the next tick tries again.
        case unavailable(ChangeFeedError)
        /// A page that cannot be applied (malformed, going back, another table's): the table's
        /// answers go stale, and ticks pass the table over for a while.
        case cannotApply(ChangeFeedError)
        /// Anything else (a cancellation, a closed controller, another transport error): passed
        /// on as it is, nothing recorded.
        case other
    }

    /// The ``Failure`` `error` is.
    static func failure(of error: any Error) -> Failure {
        switch error {
        case let error as SyncTransportError where error.code == .offline: .offline(error)
        case let error as ChangeFeedError where error.isTransient: .unavailable(error)
        case let error as ChangeFeedError: .cannotApply(error)
        default: .other
        }
    }

    /// A pull of `table` is about to be applied (one with changes or a must-refetch).
    mutating func applying(_ table: String) {
        applies[table, default: 0] += 1
    }

    /// Pulls applied to `table` so far: a fetch that sees it move may lack their changes.
    func applies(of table: String) -> Int {
        applies[table] ?? 0
    }

    /// A pull of `table` was applied: the status moves to `position`, caught up unless its last
    /// page `hasMore`, and the table is no longer passed over. `askedToWait`: the read asked to wait, so
    /// `offersWaiting` says whether the feed does.
    mutating func pulled(
        _ table: String, position: Int64?, hasMore: Bool, behindBy: Int?, mustRefetch: Bool, askedToWait: Bool,
        offersWaiting offered: Bool
    ) {
        if askedToWait || offered { offersWaiting[table] = offered }
        var status = status(of: table)
        status.position = position
        status.isCaughtUp = !hasMore
        status.behindBy = hasMore ? behindBy : 0
        status.mustRefetchCount += mustRefetch ? 1 : 0
        status.lastError = nil
        statuses[table] = status
        stoppedUntil[table] = nil
    }

    /// The server could not answer a pull of `table` now: the error shows in its status, nothing
    /// else changes.
    mutating func unavailable(_ table: String, _ error: ChangeFeedError) {
        statuses[table] = status(of: table, error: error)
    }

    /// A page of `table` could not be applied: the error shows in its status and ticks pass the
    /// table over until `until`.
    mutating func stopped(_ table: String, _ error: ChangeFeedError, until: Date) {
        statuses[table] = status(of: table, error: error)
        stoppedUntil[table] = until
    }

    /// Forgets every table's status, waiting offers, stops and the backoff, and moves the epoch
    /// (``SovariaOffline/clear()``); pages applied stay counted.
    mutating func forget() {
        epoch += 1
        statuses = [:]
        offersWaiting = [:]
        stoppedUntil = [:]
        (retryAt, failures) = (nil, 0)
    }

    private func status(of table: String, error: ChangeFeedError? = nil) -> ChangeFeedStatus {
        var status = statuses[table] ?? ChangeFeedStatus(position: nil, isCaughtUp: false, mustRefetchCount: 0)
        if let error { status.lastError = error }
        return status
    }
}
