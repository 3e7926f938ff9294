import Foundation
import Sovaria
import SovariaCache
import SovariaQueue

extension SovariaOffline {
    /// How a controller queues, retries and caches; every field but ``api`` has a default.
    public struct Configuration: Sendable {
        /// The API adapter: how the controller reads the dialect of the data API it talks to
        /// (tables, row filters, the headers that ask for changed rows). `PostgREST()` from
        /// SovariaPostgREST for a PostgREST API.
        public var api: any DataAPI
        /// The account the controller acts for: a stable user id from the app's sign-in (never a
        /// token). Its cached answers, queue, rejected list, conflicts and feed checkpoints are
        /// kept apart from every other account's on the same store, and only its own writes are
        /// sent. Default: `nil`, one implicit account (the store's keys as they are: a
        /// single-user app). See <doc:AccountsAndSignOut>.
        public var account: AccountID?
        /// Wraps the ``account``'s view of the store before the controller uses it. Give
        /// `{ EncryptedOfflineStore(wrapping: $0, key: usersKey) }` (SovariaSodium) with a key
        /// kept per user (in the keychain), and a signed-out user's kept writes are unreadable to
        /// whoever holds the store next; the controller then reads the queue at open, so a wrong
        /// key throws there (`OfflineStoreError` `decryptionFailed`) and changes nothing.
        /// Ignored without an account. Default: `nil`.
        public var wrapAccountStore: (@Sendable (any OfflineStore) async throws -> any OfflineStore)?
        /// Writes waiting at once; past this a new offline write throws `WriteQueueError` with
        /// code `.queueFull` (`OFFLINE_QUEUE_FULL`). Default: ``SovariaOffline/maxQueued``.
        public var maxQueued: Int = SovariaOffline.maxQueued
        /// The most overlay sessions kept, and their most bytes (tests set smaller ones).
        var overlaySessionLimits = (count: OverlaySessions.maxCount, bytes: OverlaySessions.maxBytes)
        /// Cached read results kept on the device, every account's together; past it the ones
        /// the server sent longest ago go, whoever owns them (<doc:AccountsAndSignOut>). Default:
        /// ``SovariaOffline/maxCached``.
        public var maxCached: Int = SovariaOffline.maxCached
        /// The bound on the cached bodies of every account on the device. Default:
        /// `SovariaCache.CacheSize.default` (100 MiB).
        public var cacheSize: CacheSize = .default
        /// How often the queue is flushed while writes are pending. Default: 30 seconds.
        public var flushInterval: Duration = .seconds(30)
        /// The first retry delay after a 408, 429 or 5xx without `Retry-After`; it doubles with
        /// each failed try, with jitter. Default: 1 second.
        public var retryBaseDelay: Duration = .seconds(1)
        /// The longest retry delay. Default: 5 minutes.
        public var retryMaxDelay: Duration = .seconds(300)
        /// After this many failed tries of the head write, a ``SyncError/Kind/stalled(attempts:since:)``
        /// error says the queue is not moving. Default: 5.
        public var stalledAfterAttempts: Int = 5
        /// A head write that still fails this long after it was queued is reported as stalled too,
        /// however few its tries. Default: 10 minutes.
        public var stalledAfter: Duration = .seconds(600)
        /// Called once when the server answers 401, before the write is sent again (refresh the
        /// session's token here). Default: `nil` (a 401 pauses the queue at once).
        public var refreshAuthorization: (@Sendable () async throws -> Void)?
        /// The wall clock (retry delays, `Retry-After` dates, cache times). Default: `Date.init`.
        public var clock: @Sendable () -> Date = Date.init
        /// The periodic flush. Default: ``TaskSyncTimer``.
        public var timer: any SyncTimer = TaskSyncTimer()
        /// A number in 0...1 that spreads retry delays (jitter). Default: random.
        public var jitter: @Sendable () -> Double = { Double.random(in: 0...1) }

        /// Applies the pending writes of a read's table to its cached answer (read-your-writes):
        /// `PostgRESTOverlay()` from SovariaPostgREST for a PostgREST API. Default: `nil` (answers are
        /// the server's, and say that pending writes were not applied).
        public var overlay: (any OverlayEvaluator)?
        /// How each table's updates and deletes are checked against the server's rows, by table
        /// name: the key and version columns and the conflict and no-match policies. A table
        /// without a rule gets `ConflictRule()`: an update or delete that matches no row is
        /// rejected with `RejectionReason.noMatchingRow`, and no version is checked. Default: none.
        public var conflictRules: [String: ConflictRule] = [:]
        /// Makes the decoder of ``SovariaOffline/read(_:as:policy:maxAge:)`` and
        /// ``SovariaOffline/observe(_:as:policy:maxAge:)``. Default: the ``api``'s
        /// ``DataAPI/makeDecoder()``.
        public var makeDecoder: @Sendable () -> JSONDecoder
        /// Where the controller hears that the system runs short of memory: the query cache's
        /// memory layer sheds (`QueryCache.shedMemory(for:)`) and the local-first answers kept
        /// for repeated reads are dropped (they are computed again on the next read). `nil`
        /// turns this off. Default: `MemoryPressureSources.system`.
        public var memoryPressure: (any MemoryPressureSource)? = MemoryPressureSources.system

        /// Where the changes other devices make come from: `PostgRESTChangeFeed` from
        /// SovariaPostgREST for the log `ChangeFeed.sql` keeps. With ``followedTables``, the
        /// controller follows it while online and brings the cached answers up to date without
        /// fetching them (<doc:ChangesFromOtherDevices>). Default: `nil`.
        public var changeFeed: (any ChangeFeed)?
        /// The tables whose changes the controller follows on its own, every ``feedPollInterval``
        /// (``SovariaOffline/pullChanges(of:wait:)`` pulls any table on demand). Default: none.
        public var followedTables: [String] = []
        /// How often the followed tables' feeds are read. Default: 1 second.
        public var feedPollInterval: Duration = .seconds(1)
        /// Whether following begins as the controller opens: each followed table is read at
        /// once, and a caught-up one is then waited on (``feedWait``), so the first change after
        /// launch arrives as fast as later ones rather than after a ``feedPollInterval``. `false`
        /// leaves the first read to the timer's first tick (tests that drive the timer by hand).
        /// Default: `true`.
        public var feedFollowsAtOpen = true
        /// How long a caught-up read may wait at the server for a change, when the feed offers
        /// that (a long poll): a change then arrives as it commits, not at the next poll, and the
        /// controller waits again at once after each change. `.zero`: never wait (poll). Keep it
        /// below the transport's timeout (`URLSessionTransport`'s is 30 seconds): a wait the
        /// transport cuts short fails as a timeout, and the controller backs off.
        /// Default: 20 seconds.
        public var feedWait: Duration = .seconds(20)
        /// How many changes behind a table may be before its backlog is skipped: its cached
        /// answers are marked stale (fetched again at their next network read, at once if a live
        /// query shows them) and its checkpoint moves to the feed's latest position. Applying a
        /// change costs a few microseconds and its bytes on the wire; past this, with 100 cached
        /// answers on a link slower than about 60 Mbit/s, fetching the answers costs less
        /// (<doc:ChangesFromOtherDevices>). Needs a feed that counts what is left and says where
        /// it ends (``ChangeFeedPage/remaining``, ``ChangeFeed/latestPosition(of:)``). `nil`:
        /// always apply.
        /// Default: 5,000.
        public var feedRefetchPast: Int? = 5_000
        /// How many bytes of changes a pull gathers before it stops reading on: while the feed's
        /// pages come full, a pull reads the next one, until the keys and rows it holds reach
        /// this (it may pass it by the last page read), and applies them all in one store batch.
        /// Each cached answer is then rewritten once for the lot, not once per page: a catch-up
        /// after a long time offline costs its pages' reads and one apply per this many bytes. A
        /// later page the feed cannot serve ends the pull with what it read (the next pull meets
        /// the error). `0` or less: one page per pull. Default: 1 MiB.
        public var feedPullBytes = 1 << 20

        /// The defaults, for the API `api` speaks.
        public init(api: any DataAPI) {
            self.api = api
            makeDecoder = { api.makeDecoder() }
        }
    }
}
