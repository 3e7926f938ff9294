import SovariaQueue

/// A source of the changes made to a table's rows on the server, by any device: what
/// ``SovariaOffline/pullChanges(of:wait:)`` applies to the cached answers.
///
/// `SovariaPostgREST.PostgRESTChangeFeed` reads the log that `ChangeFeed.sql` keeps in
/// PostgreSQL; another source (a realtime channel, a sync service) plugs in here.
///
/// - Important: A feed serves a change only once no change at an earlier position can still
///   appear, so a reader that resumes after its checkpoint misses nothing; and a change carries
///   its row's newest state, so applying them in position order leaves each row as the server
///   has it.
public protocol ChangeFeed: Sendable {
    /// The changes of `table` after `position` (`nil`: from the start of what is kept), oldest
    /// first, at most a page of them. `wait`: how long the server may hold an empty answer
    /// until a change comes, when it offers that (``ChangeFeedPage/offersWaiting``).
    ///
    /// - Throws: ``ChangeFeedError`` for an answer that is not a feed page; the transport's
    ///   errors as they are (`SyncTransportError` with `offline` when there is no network).
    func changes(of table: String, after position: Int64?, wait: Duration?) async throws -> ChangeFeedPage

    /// The position of `table`'s latest change the feed serves now (`nil`: none, or the feed
    /// cannot say): where a reader that skips the backlog resumes
    /// (``SovariaOffline/Configuration/feedRefetchPast``).
    ///
    /// - Throws: as ``changes(of:after:wait:)``.
    func latestPosition(of table: String) async throws -> Int64?

    /// The position a read's answer is current to, when the server says (`nil`: it does not):
    /// the answer holds every change at or before it, and a page applies to it only the later
    /// ones (SovariaCache's `CachedResponse.position`). Without it, a page applied while the feed
    /// catches up can set a row in a newer answer back, until a later page brings it forward.
    func position(of response: DataResponse) -> Int64?

    /// The position of the change a write's answer says it made (`nil`: it does not say). This
    /// device shows the synced write over its cached answers until the feed has reached it;
    /// without it, until the feed reads the log to its end, which a transaction still running
    /// can hold short of the write's change.
    func position(ofWrite response: DataResponse) -> Int64?
}

extension ChangeFeed {
    /// `nil`: a feed that cannot say where it ends is always applied change by change.
    public func latestPosition(of table: String) async throws -> Int64? { nil }

    /// `nil`: the server does not say which changes a read holds.
    public func position(of response: DataResponse) -> Int64? { nil }

    /// `nil`: the server does not say where a write's change is.
    public func position(ofWrite response: DataResponse) -> Int64? { nil }
}

/// One change of one row, as the feed serves it.
public struct RowChange: Sendable, Hashable {
    /// What became of the row.
    public enum Operation: Sendable, Hashable {
        /// The row is now `row` (a JSON object with every column): inserted, updated, or newly
        /// visible to this user.
        case upsert(row: String)
        /// The row is gone: deleted, or no longer visible to this user.
        case delete
    }

    /// Where the change is in the feed: later changes have greater positions.
    public var position: Int64
    /// The table.
    public var table: String
    /// The row's primary key, as text.
    public var key: String
    /// What became of the row.
    public var operation: Operation

    /// A change at `position` of the row `key` of `table`.
    public init(position: Int64, table: String, key: String, operation: Operation) {
        self.position = position
        self.table = table
        self.key = key
        self.operation = operation
    }

    /// The UTF-8 bytes of its key and row: what holding it costs a pull
    /// (``SovariaOffline/Configuration/feedPullBytes``).
    var textBytes: Int {
        guard case .upsert(let row) = operation else { return key.utf8.count }
        return key.utf8.count + row.utf8.count
    }
}

/// A page of a feed: its changes, oldest first, and where the reader stands after them.
public struct ChangeFeedPage: Sendable, Hashable {
    /// The changes, oldest first.
    public var changes: [RowChange]
    /// The position the reader resumes after: the last change's, or the last marker's when the
    /// page ends with one; `nil` when the page is empty (the reader stays where it was).
    public var position: Int64?
    /// Whether changes the reader had not read were dropped from the log (trimmed past its
    /// retention, or the table truncated): every cached answer of the table must be fetched
    /// again. ElectricSQL's `must-refetch`, CouchDB's and RxDB's resync.
    public var mustRefetch: Bool
    /// Whether more changes may follow at once: the page was full, and the feed did not count
    /// none left after it (``remaining``).
    public var hasMore: Bool
    /// Whether the server offers to hold an empty answer until a change comes (a long poll).
    public var offersWaiting: Bool
    /// How many changes the feed holds after this page, when it says (`nil`: it does not).
    public var remaining: Int?

    /// A page of `changes` leaving the reader at `position`.
    public init(
        changes: [RowChange], position: Int64?, mustRefetch: Bool = false, hasMore: Bool = false,
        offersWaiting: Bool = false, remaining: Int? = nil
    ) {
        self.changes = changes
        self.position = position
        self.mustRefetch = mustRefetch
        self.hasMore = hasMore
        self.offersWaiting = offersWaiting
        self.remaining = remaining
    }
}

extension ChangeFeedPage {
    /// Where a reader resumes after the page: its position, or its last change's when it names
    /// none; `nil` for an empty page that names none.
    var resumePosition: Int64? { position ?? changes.last?.position }

    /// Whether a pull holding this page, its rows `bytes` long, reads the next one and joins it
    /// (``SovariaOffline/Configuration/feedPullBytes``): the page came full, is no must-refetch,
    /// the feed has not said that nothing is left, and the rows are under `limit`.
    func readsOn(holding bytes: Int, limit: Int) -> Bool {
        hasMore && !mustRefetch && remaining != 0 && bytes < limit && resumePosition != nil
    }

    /// This page with `next`, read after it, joined: `next`'s changes after these, the reader at
    /// `next`'s end (at this page's when `next` is empty and names none), more to follow and how
    /// many as `next` says, a must-refetch if either is. Whether the server offers waiting stays
    /// this page's: a page read on never asks to wait.
    func joined(with next: ChangeFeedPage) -> ChangeFeedPage {
        var joined = self
        joined.changes += next.changes
        joined.position = next.resumePosition ?? resumePosition
        joined.mustRefetch = mustRefetch || next.mustRefetch
        joined.hasMore = next.hasMore
        joined.remaining = next.remaining
        return joined
    }
}

/// A feed's answer that cannot be applied: nothing of it was applied, the table's checkpoint
/// stays where it was, and its cached answers are marked stale (a network read fetches them).
public struct ChangeFeedError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What was wrong.
    public enum Code: Sendable, Hashable {
        /// A change that is not one: not a JSON object, a field missing or of the wrong type, an
        /// unknown operation, an upsert whose row is not a JSON object.
        case malformedChange
        /// A change at or before the position asked after, or before the one ahead of it: the
        /// log is not in commit order, and applying it could skip a change.
        case positionWentBack
        /// A change of another table than the one asked for.
        case unexpectedTable
        /// The server answered neither 2xx nor a page (an error status that trying again will
        /// not change).
        case unexpectedStatus
        /// The server cannot answer now (408, 429, a 5xx such as a 502 during a deploy): nothing
        /// was applied and nothing is marked stale; the controller tries the table again after
        /// the flush's backoff or the answer's `Retry-After`.
        case unavailable
        /// The controller has no ``SovariaOffline/Configuration/changeFeed``.
        case noFeed
    }

    /// What was wrong.
    public let code: Code
    /// The table whose feed it is.
    public let table: String
    /// What was wrong, in words, with the offending text.
    public let message: String
    /// The feed's answer, for an error status (its `Retry-After` sets the next try).
    public let response: DataResponse?

    /// An error of `code` on `table`'s feed, with the feed's answer when it was an error status.
    public init(_ code: Code, table: String, _ message: String, response: DataResponse? = nil) {
        self.code = code
        self.table = table
        self.message = message
        self.response = response
    }

    /// Whether trying the same pull later may succeed: the server could not answer now
    /// (``Code/unavailable``). Any other error is of the page, and stops the table until a later
    /// try.
    public var isTransient: Bool { code == .unavailable }

    /// The code, the table and the message.
    public var description: String { "ChangeFeedError(\(code), \(table)): \(message)" }
}

/// What one ``SovariaOffline/pullChanges(of:wait:)`` did.
public struct ChangeFeedPull: Sendable, Hashable {
    /// The changes read and applied.
    public var changes: Int
    /// The cached answers brought up to date in place (no fetch).
    public var updatedAnswers: Int
    /// The cached answers marked stale: they could not be brought up to date exactly (a page
    /// with a `limit` that lost a row, embedded resources, a must-refetch).
    public var staleAnswers: Int
    /// The table's checkpoint after the pull.
    public var position: Int64?
    /// Whether the feed said the cached answers must be fetched again.
    public var mustRefetch: Bool
    /// Whether more changes are waiting (the last page read was full).
    public var hasMore: Bool
    /// The changes skipped, not applied: the backlog was past
    /// ``SovariaOffline/Configuration/feedRefetchPast``, and the table's cached answers were
    /// marked stale instead (counted in ``staleAnswers``).
    public var skippedChanges = 0
}

/// Where the following of one table's feed stands: part of ``SyncStatus``.
public struct ChangeFeedStatus: Sendable, Hashable {
    /// The checkpoint: the position of the last change applied (`nil`: none yet).
    public var position: Int64?
    /// Whether the last pull found the table caught up (the last page it read was not full).
    public var isCaughtUp: Bool
    /// How many changes wait after the checkpoint, as of the last pull: 0 once caught up; `nil`
    /// while behind on a feed that does not count them (``ChangeFeedPage/remaining``).
    public var behindBy: Int?
    /// How many times the feed said the table's cached answers must be fetched again.
    public var mustRefetchCount: Int
    /// The last error of the table's feed, until a pull succeeds. A pull whose later page failed
    /// succeeds with the pages before it: the next pull meets the error again.
    public var lastError: ChangeFeedError?
}
