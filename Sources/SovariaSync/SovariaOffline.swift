import Foundation
import Sovaria
import SovariaCache
import SovariaPlumbing
import SovariaQueue
import Synchronization

/// The offline controller: reads through the query cache, writes sent at once or
/// queued durably, and a queue replayed in order, one request at a time.
///
/// Written once over `Sovaria.OfflineStore`, so it runs unchanged on every engine and inside
/// the encryption wrapper. The network is one protocol, ``SyncTransport``.
///
/// - Writes: ``write(_:)`` sends at once when online and nothing is pending; otherwise (or when
///   the request finds no network) the write goes to the durable queue, in one store batch,
///   before the call returns. Nothing overtakes: a write made while others are pending queues
///   behind them. The one exception is a conflict: writes that may touch its row wait for the app
///   to resolve it, and the others go on (<doc:OfflineEditConflicts>).
/// - Flush: ``flush()`` sends the queue oldest first, one request at a time, each with its client
///   id as `Idempotency-Key` (at-least-once delivery, exactly-once effect where the server honours
///   the key). 2xx removes the write, unless it was an update or delete that matched no row: that
///   one moves to the rejected list (`RejectionReason.noMatchingRow`, or a conflict on a table
///   with a version column). No network stops the flush (``online`` turns `false`). 408,
///   429 and 5xx stop it and keep the head, and the next try waits `Retry-After` or an
///   exponential backoff with jitter. 401 calls ``Configuration/refreshAuthorization`` once and
///   sends again; a second 401 pauses the queue and reports it. Any other 4xx moves the write to
///   the rejected list (one atomic batch), reports it, and the flush goes on.
/// - Refusals: a write the server refuses (a 4xx other than 401, 408 and 429) ends in the
///   rejected list and is reported through ``syncErrors`` and ``onSyncError``, whether it was
///   sent at once by ``write(_:)`` (which then returns ``WriteOutcome/rejected(_:)``) or from the
///   queue by a flush.
/// - Triggers: ``flush()``, a reconnect (a request reaching the server after ``online`` was
///   `false`), and ``Configuration/flushInterval`` while writes are pending; all share one running
///   flush.
/// - Reads: ``read(_:policy:maxAge:)`` goes through the query cache, keyed by the request's method
///   and path; offline, it answers from the last cached result. A synced write to a table (as
///   ``Configuration/api`` names tables) marks that table's cached lists stale.
///
/// ```swift
/// let offline = try await SovariaOffline(
///     store: try SQLiteOfflineStore(fileURL: url), transport: transport, configuration: .init(api: PostgREST()))
/// let outcome = try await offline.write(DataRequest(method: "POST", path: "/rest/v1/notes", body: json))
/// for await error in offline.syncErrors { show(error) }
/// ```
///
/// - Important: Safe from any number of tasks. Writes pass one at a time (so none overtakes
///   another); a flush runs at most once at a time. After ``close()`` every call throws
///   ``SovariaOfflineError`` with ``SovariaOfflineError/Code/closed``.
public final class SovariaOffline: Sendable {
    /// Writes waiting at once by default (``Configuration/maxQueued``): 1,000.
    public static let maxQueued = WriteQueue.defaultMaxQueued
    /// Cached read results kept by default (``Configuration/maxCached``): 500.
    public static let maxCached = 500
    /// The header that carries a queued write's client id on every try
    /// (`SovariaQueue.WriteQueue.idempotencyHeader`).
    public static let idempotencyHeader = WriteQueue.idempotencyHeader

    /// The store that keeps the queue, the rejected list and the cache: the account's view of
    /// the store given (``Configuration/account``), or that store itself without an account.
    public let store: any OfflineStore
    /// The store given at open: every account's keys, for the device's cache budget.
    let deviceStore: any OfflineStore
    /// This controller's hold on its account of the store given, released at close.
    let openedAccount: OpenAccounts.Hold?
    /// The network.
    public let transport: any SyncTransport
    /// The options this controller was made with.
    public let configuration: Configuration
    /// The durable queue and the rejected list.
    let queue: WriteQueue
    /// The cached read results.
    let cache: QueryCache

    // State and locking: `writeGate` passes the writes one at a time (a helper that must run
    // inside it takes its token); `state` guards every field that changes after init. Its place in
    // the lock order (the queue's lock may be taken inside it, to read its counts):
    // SovariaPlumbing/LockOrder.swift. Callbacks and signals run after `state` is released.
    // `signals` and `synced` each keep a lock of their own that never holds another.

    /// Everything of the controller that changes after init.
    let state = RankedMutex(LockRank.offlineState, State())
    /// Tells live queries and status followers what changed.
    let signals = ChangeSignals()
    /// The writes synced in this run, kept for the answers fetched before them.
    let synced = SyncedWrites()
    /// The overlay's sessions and their latest answers: each cached answer parsed once, each new
    /// write applied alone, a read repeated while nothing changed answered as it was.
    let sessions: OverlaySessions
    /// Passes ``write(_:)``, ``requeue(_:)``, ``resolve(_:with:)`` and ``clear()`` one at a time.
    let writeGate = AsyncGate<SovariaOffline>()
    /// Rebuilds the conflict index one reload at a time, so the last one to finish read the
    /// rejected list last.
    let conflictReloads = AsyncGate<ConflictIndex>()
    let errors: AsyncStream<SyncError>.Continuation
    /// Passes each table's ``pullChanges(of:wait:)`` one at a time: a checkpoint is read and
    /// moved by one pull. One gate per table, so a long poll of one never holds another's pull.
    private let feedGates = Mutex<[String: AsyncGate<ChangeFeedPull>]>([:])
    /// The reads and pulls under way, which closing waits for.
    let inFlight = InFlight()
    /// Where ``changeFeedErrors`` come from.
    let feedErrors = AsyncStream.makeStream(of: ChangeFeedError.self)
    /// Every sync error, as it happens. One stream per controller: iterate it from one task.
    public let syncErrors: AsyncStream<SyncError>

    struct State {
        /// `false` after a request failed for lack of network, until one reaches the server.
        var online = true
        /// Whether any request was tried in this run.
        var triedNetwork = false
        /// Offline: the next periodic flush at the latest.
        var offlineRetryAt: Date?
        var closed = false
        /// The running flush, shared by every trigger.
        var flight: Task<Int, any Error>?
        /// The feed's conflicts being listed (``flagConflicts(shownBy:of:)``): a flush that starts
        /// meanwhile waits for it.
        var conflictFlagging: Task<Void, any Error>?
        /// The head write may not be sent before this (backoff, `Retry-After`).
        var retryNotBefore: Date?
        /// A second 401: nothing is sent until the next ``flush()``.
        var pausedForAuthorization = false
        var timer: SyncTimerTicket?
        var onSyncError: (@Sendable (SyncError) -> Void)?
        /// The cached queries of each table, as `sov:meta:tables:` lists them; loaded by the first
        /// call that needs it, then kept in step with the store.
        var queriesByTable: [String: Set<String>]?
        /// Each table's cached `GET` reads, parsed and in order, with how many queries they were
        /// parsed from: a table's queries are only ever added to until ``clear()`` empties
        /// `queriesByTable` (and moves `tablesCleared`), so the same count is the same queries.
        var readsByTable: [String: (queries: Int, reads: [ReadIdentity])] = [:]
        var tablesCleared = 0
        /// What the last page of each table's feed that had changes to apply saw of each of its
        /// cached reads (in the order of `readsByTable`): its version in the cache
        /// (`QueryCache.version(of:)`) and whether it was stale then. The next page reads an
        /// answer only when its version moved or its changes may alter it. A page with nothing
        /// to apply leaves it: the overlay learns versions only from pages that ask it.
        var feedAnswerVersions:
            [String: (reads: [ReadIdentity], slots: [QueryCache.Slot], seen: [(version: UInt64, isStale: Bool)?])] =
                [:]
        var lastSyncedAt: Date?
        var lastError: SyncError?
        /// Sheds the overlay's sessions when memory runs short.
        var memoryPressure: MemoryPressureObservation?
        /// The rows unresolved conflicts hold, from the rejected list.
        var conflicts = ConflictIndex()
        /// Queued writes the last flush passed over because a conflict holds their row.
        var waitingOnConflicts = 0
        /// The versions this run's own writes replaced: `table\0key\0version` → the version the
        /// write left, so a write made against a cached row this device already changed expects
        /// the row as it is now, not as the cache still shows it.
        var replacedVersions: [StoreKey.Bytes: String] = [:]
        /// How the change feed is followed: each table's status, the ticks, their backoff.
        var feed = FeedFollower()
        /// Writes of other accounts waiting on the device, counted at open.
        var otherAccountsPendingCount = 0
        /// The other accounts' cached answers, counted at open and after each device-wide pass.
        var otherAccountsCache: OtherAccountsCache?
        var feedTimer: SyncTimerTicket?
        /// The open's pull of the followed tables (``Configuration/feedFollowsAtOpen``).
        var feedPullAtOpen: Task<Void, Never>?
    }

    /// Opens the controller on `store`: its queue (what an earlier run left is flushed by the first
    /// trigger), its rejected list and its cache.
    public init(
        store: any OfflineStore, transport: any SyncTransport, configuration: Configuration
    )
        async throws
    {
        deviceStore = store
        if let account = configuration.account {
            openedAccount = try OpenAccounts.shared.hold(account, of: store)
            let view = AccountScopedStore(wrapping: store, account: account)
            self.store = try await configuration.wrapAccountStore?(view) ?? view
            try await Self.checkAccountKey(
                of: account, view: view, opened: self.store, wrapped: configuration.wrapAccountStore != nil)
        } else {
            openedAccount = nil
            self.store = store
        }
        self.transport = transport
        self.configuration = configuration
        let store = self.store
        sessions = OverlaySessions(
            countLimit: configuration.overlaySessionLimits.count, byteLimit: configuration.overlaySessionLimits.bytes)
        queue = try await WriteQueue(store: store, maxQueued: configuration.maxQueued, clock: configuration.clock)
        // The account's own key opens its writes, or the open fails here, before anything is sent.
        if configuration.account != nil, configuration.wrapAccountStore != nil, queue.count > 0 {
            _ = try await queue.pending()
        }
        var cacheConfiguration = QueryCache.Configuration()
        cacheConfiguration.size = configuration.cacheSize
        cacheConfiguration.clock = configuration.clock
        cacheConfiguration.memoryPressure = configuration.memoryPressure
        let (signals, synced, api) = (signals, synced, configuration.api)
        cacheConfiguration.onEviction = { _ in signals.changed(table: nil) }
        cacheConfiguration.onStored = { query in
            // The answer now cached holds the writes synced before its fetch started.
            synced.stored(query)
            signals.changed(table: ReadIdentity(cacheKey: query, api: api)?.table)
        }
        cache = try await QueryCache(store: store, configuration: cacheConfiguration)
        if let openedAccount { OpenAccounts.shared.attach(cache, to: openedAccount) }
        (syncErrors, errors) = AsyncStream.makeStream(of: SyncError.self)
        // Before the timer's first flush: held rows must be known. A damaged rejected entry holds
        // nothing back (it is reported when the app lists the rejected writes).
        let conflicts = ConflictIndex(
            (try? await queue.rejected()) ?? [], keyColumn: { conflictRule(of: $0).keyColumn }, api: configuration.api)
        state.withLock { $0.conflicts = conflicts }
        // The writes an earlier run left waiting for a conflict count at once, not at the first flush.
        if !conflicts.isEmpty { await countWritesWaitingOnConflicts() }
        let others = try await Self.pendingWritesOfOtherAccounts(on: deviceStore, except: configuration.account)
        state.withLock { $0.otherAccountsPendingCount = others }
        // Another account's answers count against this device's one budget from the start.
        try await keepDeviceCacheBudget()
        let ticket = configuration.timer.repeating(every: configuration.flushInterval) { [weak self] in
            await self?.timerFired()
        }
        state.withLock { $0.timer = ticket }
        if configuration.changeFeed != nil, !configuration.followedTables.isEmpty {
            let following = configuration.timer.repeating(every: configuration.feedPollInterval) { [weak self] in
                await self?.feedTimerFired()
            }
            state.withLock { $0.feedTimer = following }
            if configuration.feedFollowsAtOpen {
                let pull = Task { [weak self] () async -> Void in await self?.feedTimerFired() }
                state.withLock { $0.feedPullAtOpen = pull }
            }
        }
        let observation = try? configuration.memoryPressure?.observe { [weak self] level in
            self?.shedOverlays(for: level)
        }
        state.withLock { $0.memoryPressure = observation }
    }

    /// Gives back what the overlay keeps in memory for `level`: its sessions and their answers,
    /// as ``OverlaySessions/shed(for:keeping:)`` says (those of queries a live reader shows stay
    /// on a warning), and the answers its evaluator keeps parsed for the change feed's pages and
    /// the sessions.
    func shedOverlays(for level: MemoryPressure) {
        let cache = cache
        sessions.shed(for: level) { cache.isBeingRead($0) }
        // The kept parses are made again by the next page or session that needs them.
        configuration.overlay?.shedKeptAnswers()
    }

    deinit {
        OpenAccounts.shared.release(openedAccount)
        let (timer, feedTimer) = state.withLock { ($0.timer, $0.feedTimer) }
        timer?.cancel()
        feedTimer?.cancel()
        errors.finish()
        feedErrors.continuation.finish()
    }

    // MARK: - State

    /// `false` after a request failed for lack of network; `true` after one reached the server.
    public var online: Bool { state.withLock { $0.online } }

    /// Called with every sync error, as ``syncErrors`` delivers them.
    public var onSyncError: (@Sendable (SyncError) -> Void)? {
        get { state.withLock { $0.onSyncError } }
        set { state.withLock { $0.onSyncError = newValue } }
    }

    // MARK: - Lifetime

    /// Forgets this account's cache, queue and rejected list, and gives the space back. Unsynced
    /// writes go too: to sign out keeping them, use ``signOut(keepingUnsyncedWrites:)``.
    public func clear() async throws {
        try checkOpen()
        try await writeGate.withGate { gated in try await forgetLocalData(keepingQueue: false, gated) }
        signals.changed(table: nil)
    }

    /// Forgets the account's cached answers, tables, feeds and what memory holds of them, and
    /// with `keepingQueue: false` its queue and rejected list too, inside the write gate: no
    /// write is sent or queued meanwhile.
    func forgetLocalData(keepingQueue: Bool, _ gated: borrowing GateToken<SovariaOffline>) async throws {
        // First: a pull running now (a long poll) finds the epoch moved and keeps nothing of its
        // page; the feeds start again from no checkpoint, with no error of the last run's.
        state.withLock { $0.feed.forget() }
        if !keepingQueue { try await queue.clear() }
        try await cache.clearLocalData()
        let tables = try await store.keys(Self.tablesPrefix)
        let checkpoints = try await store.keys(Self.feedPrefix)
        try await store.write((tables + checkpoints).map { .delete(key: $0) })
        state.withLock { state in
            state.queriesByTable = [:]
            state.readsByTable = [:]
            state.feedAnswerVersions = [:]
            state.tablesCleared += 1
            state.lastError = nil
            state.conflicts = ConflictIndex()
            state.waitingOnConflicts = 0
            state.replacedVersions = [:]
        }
        synced.clear()
        sessions.removeAll()
        configuration.overlay?.shedKeptAnswers()
        try await store.compact()
    }

    /// Stops the timer and waits for a running flush; later calls throw
    /// ``SovariaOfflineError/Code/closed``. The account may be opened again on the store.
    public func close() async {
        await stopSyncing()
        finishStreams()
    }

    /// Marks the controller closed, stops its timers, and waits for what it started: a running
    /// flush, a write in the gate, reads, pulls and the cache's refreshes behind answers. When it
    /// returns, nothing of this controller sends or stores any more.
    func stopSyncing() async {
        let (ticket, feedTicket, flight) = state.withLock { state in
            state.closed = true
            return (state.timer, state.feedTimer, state.flight)
        }
        ticket?.cancel()
        feedTicket?.cancel()
        // Reads and writes under way end first (a write waiting at the gate behind a flush ends
        // after it: the flush ends on its own once it sees the close).
        await inFlight.closeAndDrain()
        _ = try? await flight?.value
        // A write already past `checkOpen` ends before this passes the gate.
        _ = try? await writeGate.withGate { _ in }
        await cache.waitForBackgroundRefreshes()
    }

    /// Ends the error streams and the live queries' signals, and lets the account be opened
    /// again.
    func finishStreams() {
        OpenAccounts.shared.release(openedAccount)
        errors.finish()
        feedErrors.continuation.finish()
        signals.finish()
    }

    /// The gate `table`'s pulls pass one at a time.
    func feedGate(of table: String) -> AsyncGate<ChangeFeedPull> {
        feedGates.withLock { gates in
            if let gate = gates[table] { return gate }
            let gate = AsyncGate<ChangeFeedPull>()
            gates[table] = gate
            return gate
        }
    }

    func checkOpen() throws {
        if state.withLock({ $0.closed }) {
            throw SovariaOfflineError(.closed, "This SovariaOffline was closed: make a new one to go on.")
        }
    }
}
