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

    /// The store that keeps the queue, the rejected list and the cache.
    public let store: any OfflineStore
    /// The network.
    public let transport: any SyncTransport
    /// The options this controller was made with.
    public let configuration: Configuration
    /// The durable queue and the rejected list.
    let queue: WriteQueue
    /// The cached read results.
    let cache: QueryCache

    // State and locking: `writeGate` passes the writes one at a time (a helper that must run
    // inside it takes its token); `state` (rank `stateRank`) guards every field that changes
    // after init. The one lock taken while `state` is held is the queue's (`WriteQueue.stateRank`,
    // a higher rank), to read its counts; callbacks and signals run after `state` is released.
    // `signals` and `synced` each keep a lock of their own that never holds another.

    /// Everything of the controller that changes after init.
    let state = RankedMutex(SovariaOffline.stateRank, State())
    /// The controller's lock in the package's lock order: taken before the queue's
    /// (`WriteQueue.stateRank`), never inside it.
    static let stateRank = LockRank(100, "SovariaOffline.state")
    /// Tells live queries and status followers what changed.
    let signals = ChangeSignals()
    /// The writes synced in this run, kept for the answers fetched before them.
    let synced = SyncedWrites()
    /// The overlay's sessions: each cached answer parsed once, each new write applied alone.
    let sessions: OverlaySessions
    /// Passes ``write(_:)``, ``requeue(_:)``, ``resolve(_:with:)`` and ``clear()`` one at a time.
    let writeGate = AsyncGate<SovariaOffline>()
    /// Rebuilds the conflict index one reload at a time, so the last one to finish read the
    /// rejected list last.
    let conflictReloads = AsyncGate<ConflictIndex>()
    private let errors: AsyncStream<SyncError>.Continuation
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
        /// The head write may not be sent before this (backoff, `Retry-After`).
        var retryNotBefore: Date?
        /// A second 401: nothing is sent until the next ``flush()``.
        var pausedForAuthorization = false
        var timer: SyncTimerTicket?
        var onSyncError: (@Sendable (SyncError) -> Void)?
        /// The cached queries of each table, as `sov:meta:tables:` lists them; loaded by the first
        /// call that needs it, then kept in step with the store.
        var queriesByTable: [String: Set<String>]?
        var lastSyncedAt: Date?
        var lastError: SyncError?
        /// The last overlaid answer of each query, while nothing changed since.
        var overlays: [String: OverlayMemo] = [:]
        /// Drops `overlays` when memory runs short.
        var memoryPressure: MemoryPressureObservation?
        /// The rows unresolved conflicts hold, from the rejected list.
        var conflicts = ConflictIndex()
        /// Queued writes the last flush passed over because a conflict holds their row.
        var waitingOnConflicts = 0
        /// The versions this run's own writes replaced: `table\0key\0version` → the version the
        /// write left, so a write made against a cached row this device already changed expects
        /// the row as it is now, not as the cache still shows it.
        var replacedVersions: [StoreKey.Bytes: String] = [:]
    }

    /// An overlaid answer, the change version and the server answer it was computed from.
    struct OverlayMemo {
        let version: UInt64
        let server: CachedResponse?
        /// `nil`: no write applies.
        let answer: OverlayAnswer?
    }

    /// Overlaid answers kept for reads repeated while nothing changes; past this all go.
    static let maxOverlaysKept = 200

    /// Opens the controller on `store`: its queue (what an earlier run left is flushed by the first
    /// trigger), its rejected list and its cache.
    public init(
        store: any OfflineStore, transport: any SyncTransport, configuration: Configuration
    )
        async throws
    {
        self.store = store
        self.transport = transport
        self.configuration = configuration
        sessions = OverlaySessions(
            countLimit: configuration.overlaySessionLimits.count, byteLimit: configuration.overlaySessionLimits.bytes)
        queue = try await WriteQueue(store: store, maxQueued: configuration.maxQueued, clock: configuration.clock)
        var cacheConfiguration = QueryCache.Configuration()
        cacheConfiguration.size = configuration.cacheSize
        cacheConfiguration.clock = configuration.clock
        cacheConfiguration.memoryPressure = configuration.memoryPressure
        let (signals, synced, api) = (signals, synced, configuration.api)
        cacheConfiguration.onEviction = { _ in signals.changed(table: nil) }
        cacheConfiguration.onStored = { query in
            // The answer now cached holds the writes synced before its fetch started.
            synced.stored(query)
            signals.changed(table: Self.table(ofCacheKey: query, api: api))
        }
        cache = try await QueryCache(store: store, configuration: cacheConfiguration)
        (syncErrors, errors) = AsyncStream.makeStream(of: SyncError.self)
        // Before the timer's first flush: held rows must be known. A damaged rejected entry holds
        // nothing back (it is reported when the app lists the rejected writes).
        let conflicts = ConflictIndex(
            (try? await queue.rejected()) ?? [], rules: configuration.conflictRules, api: configuration.api)
        state.withLock { $0.conflicts = conflicts }
        // The writes an earlier run left waiting for a conflict count at once, not at the first flush.
        if !conflicts.isEmpty, let pending = try? await queue.pending() {
            let waiting = pending.count { isHeld($0.request) }
            state.withLock { $0.waitingOnConflicts = waiting }
        }
        let ticket = configuration.timer.repeating(every: configuration.flushInterval) { [weak self] in
            await self?.timerFired()
        }
        state.withLock { $0.timer = ticket }
        let observation = try? configuration.memoryPressure?.observe { [weak self] level in
            self?.shedOverlays(for: level)
        }
        state.withLock { $0.memoryPressure = observation }
    }

    /// Gives back what the overlay keeps in memory for `level`: the memoized answers, and the
    /// sessions as ``OverlaySessions/shed(for:keeping:)`` says (those of queries a live reader
    /// shows stay on a warning).
    func shedOverlays(for level: MemoryPressure) {
        state.withLock { $0.overlays.removeAll() }
        let cache = cache
        sessions.shed(for: level) { cache.isBeingRead($0) }
    }

    deinit {
        state.withLock { $0.timer }?.cancel()
        errors.finish()
    }

    // MARK: - State

    /// `false` after a request failed for lack of network; `true` after one reached the server.
    public var online: Bool { state.withLock { $0.online } }

    /// Called with every sync error, as ``syncErrors`` delivers them.
    public var onSyncError: (@Sendable (SyncError) -> Void)? {
        get { state.withLock { $0.onSyncError } }
        set { state.withLock { $0.onSyncError = newValue } }
    }

    /// Writes queued that have not reached the server yet, oldest first.
    public func pendingWrites() async throws -> [QueuedWrite] {
        try checkOpen()
        return try await queue.pending()
    }

    /// Writes that did not apply, newest first: refused by the server, matching no row, or in
    /// conflict (`RejectedWrite.reason`). The newest 100 are kept; conflicts waiting for the app
    /// are never dropped.
    public func rejectedWrites() async throws -> [RejectedWrite] {
        try checkOpen()
        return try await queue.rejected()
    }

    /// Puts a rejected write back at the end of the queue as a new attempt, under a new client id
    /// (the old one's answer may be stored by the server, which would replay it).
    ///
    /// A conflict (`RejectionReason.conflict`) is resolved with its own write instead:
    /// ``resolve(_:with:)`` sends it again against the server's row as the conflict found it,
    /// ahead of the writes that waited for it.
    ///
    /// - Throws: `WriteQueueError` with `WriteQueueError.Code.notFound` when no rejected
    ///   write has that id, or `WriteQueueError.Code.queueFull`.
    @discardableResult
    public func requeue(_ rejectedID: String) async throws -> QueuedWrite {
        try checkOpen()
        if state.withLock({ $0.conflicts.ids.contains(rejectedID) }),
            let conflict = try await conflicts().first(where: { $0.id == rejectedID })
        {
            return try await resolve(rejectedID, with: conflict.write.request)
        }
        let write = try await writeGate.withGate { _ in try await queue.requeue(rejectedID) }
        signals.changed(table: api.table(of: write.request))
        return write
    }

    /// Forgets a rejected write. Forgetting a conflict keeps the server's row; the writes to the
    /// same row that waited for it are sent as they are (expecting the version the dropped write
    /// expected, they become conflicts of their own if the row changed).
    public func discard(_ rejectedID: String) async throws {
        try checkOpen()
        try await queue.discard(rejectedID)
        await reloadConflicts()
        signals.changed(table: nil)
        flushReleasedWrites()
    }

    // MARK: - Writes

    /// Sends `request` now when online and nothing is pending; otherwise queues it durably.
    ///
    /// A refusal is reported the same way on both paths: a write the server refuses (a 4xx
    /// other than 401, 408 and 429) moves to the rejected list (``rejectedWrites()``) and is
    /// reported through ``syncErrors`` and ``onSyncError`` as ``SyncError/Kind/rejected(_:)``,
    /// whether this call sent it or a later flush did.
    ///
    /// - Returns: ``WriteOutcome/sent(_:)`` with the server's answer when it took the write (2xx;
    ///   an update or delete changed a row, or its answer does not say) or answered 401 (the write is not kept; refresh the token and write again) or another
    ///   status that is not a refusal; ``WriteOutcome/rejected(_:)`` when it refused the write or the
    ///   write did not apply (no row matched, a conflict), now in the rejected list; ``WriteOutcome/queued(_:)`` once the write is in the store (offline,
    ///   writes pending, no network, or 408, 429, 5xx).
    /// - Throws: `WriteQueueError` with `WriteQueueError.Code.queueFull` (`OFFLINE_QUEUE_FULL`)
    ///   past ``Configuration/maxQueued``, with nothing written; the store's errors as
    ///   `OfflineStoreError`; ``SovariaOfflineError/Code/closed`` after ``close()``.
    public func write(_ request: DataRequest) async throws -> WriteOutcome {
        try checkOpen()
        defer { signals.changed(table: api.table(of: request)) }
        return try await writeGate.withGate { gated in try await sendOrQueue(request, gated) }
    }

    /// ``write(_:)`` inside the write gate: a write made while another is sent or queued waits
    /// for it, so none overtakes another.
    private func sendOrQueue(
        _ request: DataRequest, _ gated: borrowing GateToken<SovariaOffline>
    ) async throws -> WriteOutcome {
        // One client id for both paths: when the answer to the direct send is lost, the
        // queued replay carries the same Idempotency-Key.
        let id = WriteQueue.makeClientID()
        let request = try await recordingVersion(request)
        // A write to a row in conflict waits with it, in the queue.
        var noNetwork: SyncTransportError?
        if online, queue.count == 0, !isHeld(request) {
            do {
                let write = QueuedWrite(id: id, sequence: 0, request: request, queuedAt: configuration.clock())
                let delivery = try await deliver(write)
                reachedServer()
                switch delivery {
                case .applied(let response, let sent, let newVersion):
                    // Shown in the answers fetched before it until they are fetched again.
                    recordSynced(QueuedWrite(id: id, sequence: 0, request: sent, queuedAt: write.queuedAt))
                    recordReplacedVersion(by: write, newVersion: newVersion)
                    try await markTableStale(of: request)
                    return .sent(response)
                case .noMatch(let response), .conflict(let response, _, _):
                    let serverRow: String?
                    let reason: RejectionReason
                    if case .conflict(_, let row, let why) = delivery {
                        (serverRow, reason) = (row, why)
                    } else {
                        (serverRow, reason) = (nil, .noMatchingRow)
                    }
                    let message = Self.message(for: delivery, write)
                    if reason == .conflict { holdProvisionally(request, id: id) }
                    let rejected = try await queue.rejectUnqueued(
                        request, id: id, status: response.status, message: message, reason: reason,
                        serverRow: serverRow, sparing: conflictIDs())
                    report(SyncError(kind: .rejected(rejected), write: rejected.write, message: message))
                    if reason == .conflict { await reloadConflicts() }
                    return .rejected(rejected)
                case .retry:
                    break
                case .answered(let response):
                    if Self.isRefusal(response.status) {
                        // Kept as the queue keeps a write the server refused: the request as made.
                        let rejected = try await queue.rejectUnqueued(
                            request, id: id, status: response.status, message: response.body,
                            sparing: conflictIDs())
                        report(SyncError(kind: .rejected(rejected), write: rejected.write, message: response.body))
                        return .rejected(rejected)
                    }
                    if !Self.isRetryable(response.status) { return .sent(response) }
                }
            } catch let error as SyncTransportError {
                noNetwork = error
            }
        }
        let queued = try await queue.enqueue(request, id: id)
        if let noNetwork { wentOffline(noNetwork, leaving: queued) }
        if isHeld(request) {
            // It waits with a conflict: the status counts it at once, not at the next flush.
            state.withLock { $0.waitingOnConflicts += 1 }
            signals.statusChanged()
        } else if online, state.withLock({ !$0.conflicts.isEmpty }) {
            // Behind writes that wait for a conflict, nothing else would send it before the timer.
            _ = startFlush()
        }
        return .queued(queued)
    }

    /// Sends the queued writes now, oldest first, one at a time, passing over those that wait for a
    /// conflict; returns how many synced.
    ///
    /// Shares a flush already running. Resumes a queue paused by a second 401, but keeps to a
    /// retry delay the server asked for (the head waits until it passes).
    @discardableResult
    public func flush() async throws -> Int {
        try checkOpen()
        state.withLock { $0.pausedForAuthorization = false }
        return try await sharedFlush()
    }

    private func sharedFlush() async throws -> Int {
        try await startFlush().value
    }

    /// The running flush, or a new one.
    func startFlush() -> Task<Int, any Error> {
        let (flight, started) = state.withLock { state in
            if let running = state.flight { return (running, false) }
            let task = Task { try await self.drainQueue() }
            state.flight = task
            return (task, true)
        }
        if started { signals.statusChanged() }
        return flight
    }

    /// Waits for the flush running now, if any (tests use it after a reconnect started one).
    func waitForRunningFlush() async {
        _ = try? await state.withLock({ $0.flight })?.value
    }

    /// One flush: sends heads until the queue is empty or an answer stops it.
    private func drainQueue() async throws -> Int {
        var synced = 0
        while true {
            let ending: (synced: Int, emptied: Bool, held: Int)
            do {
                ending = try await sendHeads()
            } catch {
                state.withLock { $0.flight = nil }
                signals.statusChanged()
                throw error
            }
            synced += ending.synced
            // The flush ends under the lock a caller joins it with, after one more look at the
            // queue: a write queued after the last look by a caller that then joined this flush
            // is sent by it, not left for the next trigger.
            let ended = state.withLock { state in
                guard ending.emptied, queue.count > ending.held else {
                    state.flight = nil
                    return true
                }
                return false
            }
            if ended {
                signals.statusChanged()
                return synced
            }
        }
    }

    /// Sends heads until no write is left to send (`emptied`; `held` wait for conflicts) or an
    /// answer stops the flush; returns how many synced.
    private func sendHeads() async throws -> (synced: Int, emptied: Bool, held: Int) {
        var synced = 0
        var refreshedFor: String?
        while true {
            let (next, held) = try await nextToSend()
            let heldChanged = state.withLock { state in
                defer { state.waitingOnConflicts = held }
                return state.waitingOnConflicts != held
            }
            if heldChanged { signals.statusChanged() }
            guard let next else { return (synced, true, held) }
            let head = try await expectingCurrentVersion(next)
            let (closed, paused, notBefore) = state.withLock {
                ($0.closed, $0.pausedForAuthorization, $0.retryNotBefore)
            }
            if closed || paused { return (synced, false, held) }
            if let notBefore, configuration.clock() < notBefore { return (synced, false, held) }
            let delivery: Delivery
            do {
                delivery = try await deliver(head)
            } catch let error as SyncTransportError {
                wentOffline(error, leaving: head)
                return (synced, false, held)
            } catch {
                try await retryLater(head, response: nil, message: "\(error)")
                return (synced, false, held)
            }
            reachedServer(startingFlush: false)
            switch delivery {
            case .applied(_, let sent, let newVersion):
                // Kept as synced before it leaves the queue: a read between the two sees it in one
                // list or both (deduplicated by id), never in neither.
                recordSynced(
                    QueuedWrite(id: head.id, sequence: head.sequence, request: sent, queuedAt: head.queuedAt))
                recordReplacedVersion(by: head, newVersion: newVersion)
                try await queue.remove(head.id, updating: try await followers(of: head, newVersion: newVersion))
                state.withLock { $0.retryNotBefore = nil }
                try await markTableStale(of: head.request)
                signals.changed(table: api.table(of: head.request))
                synced += 1
            case .noMatch(let response), .conflict(let response, _, _):
                var serverRow: String?
                var reason = RejectionReason.noMatchingRow
                if case .conflict(_, let row, let why) = delivery { (serverRow, reason) = (row, why) }
                let message = Self.message(for: delivery, head)
                if reason == .conflict { holdProvisionally(head.request, id: head.id) }
                if let rejected = try await queue.reject(
                    head.id, status: response.status, message: message, reason: reason, serverRow: serverRow,
                    sparing: conflictIDs())
                {
                    report(SyncError(kind: .rejected(rejected), write: head, message: message))
                }
                if reason == .conflict { await reloadConflicts() }
                state.withLock { $0.retryNotBefore = nil }
                signals.changed(table: api.table(of: head.request))
            case .retry(let response):
                try await retryLater(head, response: response, message: "HTTP \(response.status): \(response.body)")
                return (synced, false, held)
            case .answered(let response):
                switch response.status {
                case 401:
                    if refreshedFor != head.id, let refresh = configuration.refreshAuthorization {
                        refreshedFor = head.id
                        try await refresh()
                        continue
                    }
                    state.withLock { $0.pausedForAuthorization = true }
                    report(SyncError(kind: .unauthorized, write: head, message: response.body))
                    return (synced, false, held)
                case _ where Self.isRefusal(response.status):
                    if let rejected = try await queue.reject(
                        head.id, status: response.status, message: response.body, sparing: conflictIDs())
                    {
                        report(SyncError(kind: .rejected(rejected), write: head, message: response.body))
                    }
                    signals.changed(table: api.table(of: head.request))
                default:
                    try await retryLater(
                        head, response: response, message: "HTTP \(response.status): \(response.body)")
                    return (synced, false, held)
                }
            }
        }
    }

    /// The oldest queued write no conflict holds, and how many writes older than it wait for one.
    private func nextToSend() async throws -> (write: QueuedWrite?, held: Int) {
        let conflicts = state.withLock { $0.conflicts }
        if conflicts.isEmpty { return (try await queue.head(), 0) }
        let (write, passedOver) = try await queue.firstPending { [self] write in
            !conflicts.holds(
                write.request, keyColumn: conflictRule(of: api.table(of: write.request)).keyColumn, api: api)
        }
        return (write, passedOver)
    }

    /// Keeps a write the server took for the overlay of the answers fetched before it.
    private func recordSynced(_ write: QueuedWrite) {
        synced.record(write)
        let now = configuration.clock()
        state.withLock { state in
            state.lastSyncedAt = now
            state.lastError = nil
        }
    }

    /// Keeps `head` for a later try: counts the failure, sets the delay, reports it, and says
    /// when the queue has stalled.
    private func retryLater(_ head: QueuedWrite, response: DataResponse?, message: String) async throws {
        try await queue.recordFailure(head.id, message: message)
        let failures = head.attempts + 1
        let now = configuration.clock()
        let delay = RetryDelay.after(
            response ?? DataResponse(status: 0), failures: failures, base: configuration.retryBaseDelay,
            maximum: configuration.retryMaxDelay, jitter: configuration.jitter(), now: now)
        state.withLock { $0.retryNotBefore = now.addingTimeInterval(delay.timeInterval) }
        report(
            SyncError(
                kind: .retryLater(status: response?.status ?? 0, retryAfter: delay), write: head, message: message))
        let waited = now.timeIntervalSince(head.queuedAt)
        if failures >= configuration.stalledAfterAttempts || waited >= configuration.stalledAfter.timeInterval {
            report(SyncError(kind: .stalled(attempts: failures, since: head.queuedAt), write: head, message: message))
        }
    }

    /// 408, 429 and 5xx: the server may take the same request later.
    static func isRetryable(_ status: Int) -> Bool {
        status == 408 || status == 429 || (500..<600).contains(status)
    }

    /// A 4xx other than 401, 408 and 429: the server refused the write, and the same request
    /// would be refused again.
    static func isRefusal(_ status: Int) -> Bool {
        (400..<500).contains(status) && status != 401 && !isRetryable(status)
    }

    // MARK: - Reads

    /// Answers `request` through the query cache, by `policy`; offline, from the last cached
    /// result: the server's answer, before any overlay.
    func readThroughCache(_ request: DataRequest, policy: ReadPolicy, maxAge: Duration?) async throws -> CacheRead {
        try checkOpen()
        let query = Self.cacheKey(of: request)
        try await rememberTable(of: request, query: query)
        let answer = try await cache.read(query, policy: policy, maxAge: maxAge) { [self] etag in
            // The synced writes this fetch's answer will hold: every one synced before it starts.
            synced.fetchStarted(query)
            var conditional = request
            if let etag { conditional.setHeader("If-None-Match", etag) }
            let response: DataResponse
            do {
                response = try await transport.send(conditional)
            } catch let error as SyncTransportError {
                wentOffline(error)
                throw error
            }
            reachedServer()
            let serverTime = response.header("Date").flatMap(HTTPDate.parse) ?? configuration.clock()
            guard response.status == 304 || response.isSuccess else { throw ServerError(response: response) }
            if response.status == 304 { return .notModified(serverTime: serverTime) }
            return .response(body: response.body, serverTime: serverTime, etag: response.header("ETag"))
        }
        if answer.source == .network { try await cache.evict(downToResponses: configuration.maxCached) }
        return answer
    }

    /// The cache key of a read: its method and path with query.
    static func cacheKey(of request: DataRequest) -> String {
        request.method.uppercased() + " " + request.path
    }

    /// The table of the read a cache key names (`nil` for a path that names none).
    static func table(ofCacheKey key: String, api: any DataAPI) -> String? {
        guard let space = key.firstIndex(of: " ") else { return nil }
        return api.table(of: DataRequest(method: String(key[..<space]), path: String(key[key.index(after: space)...])))
    }

    // MARK: - Lifetime

    /// Forgets the cache, the queue and the rejected list (sign-out), and gives the space back.
    public func clear() async throws {
        try checkOpen()
        try await writeGate.withGate { gated in try await clearLocalData(gated) }
        signals.changed(table: nil)
    }

    /// ``clear()`` inside the write gate: no write is sent or queued meanwhile.
    private func clearLocalData(_ gated: borrowing GateToken<SovariaOffline>) async throws {
        try await queue.clear()
        try await cache.clearLocalData()
        let tables = try await store.keys(Self.tablesPrefix)
        try await store.write(tables.map { .delete(key: $0) })
        state.withLock { state in
            state.queriesByTable = [:]
            state.lastError = nil
            state.conflicts = ConflictIndex()
            state.waitingOnConflicts = 0
            state.replacedVersions = [:]
        }
        synced.clear()
        sessions.removeAll()
        try await store.compact()
    }

    /// Stops the timer and waits for a running flush; later calls throw
    /// ``SovariaOfflineError/Code/closed``.
    public func close() async {
        let (ticket, flight) = state.withLock { state in
            state.closed = true
            return (state.timer, state.flight)
        }
        ticket?.cancel()
        _ = try? await flight?.value
        errors.finish()
        signals.finish()
    }

    func checkOpen() throws {
        if state.withLock({ $0.closed }) {
            throw SovariaOfflineError(.closed, "This SovariaOffline was closed: make a new one to go on.")
        }
    }

    // MARK: - Triggers

    private func timerFired() async {
        let idle = state.withLock { $0.closed || $0.pausedForAuthorization }
        guard !idle, queue.count > 0 else { return }
        _ = try? await sharedFlush()
    }

    /// A request reached the server: after a time offline, that is a reconnect, which flushes.
    private func reachedServer(startingFlush: Bool = true) {
        let reconnected = state.withLock { state in
            defer { (state.online, state.triedNetwork, state.offlineRetryAt) = (true, true, nil) }
            if state.lastError?.kind == .offline { state.lastError = nil }
            return !state.online || !state.triedNetwork
        }
        if reconnected { signals.statusChanged() }
        if reconnected, startingFlush, queue.count > 0 { _ = startFlush() }
    }

    /// A request failed for lack of network; `head`, when given, is the queued write it left
    /// waiting, which the status names as the reason (``SyncError/Kind/offline``).
    func wentOffline(_ error: SyncTransportError, leaving head: QueuedWrite? = nil) {
        let retryAt = configuration.clock().addingTimeInterval(configuration.flushInterval.timeInterval)
        let changed = state.withLock { state in
            defer { (state.online, state.triedNetwork, state.offlineRetryAt) = (false, true, retryAt) }
            if let head { state.lastError = SyncError(kind: .offline, write: head, message: "\(error)") }
            return state.online || !state.triedNetwork || head != nil
        }
        if changed { signals.statusChanged() }
    }

    private func report(_ error: SyncError) {
        state.withLock { $0.lastError = error }
        signals.statusChanged()
        errors.yield(error)
        state.withLock { $0.onSyncError }?(error)
    }

    // MARK: - Tables

    /// Where the queries read from each table are listed: `sov:meta:tables:<table>:<hash>` holds
    /// the query, so a write to the table finds its cached lists after a restart too.
    static let tablesPrefix = "sov:meta:tables:"

    private func rememberTable(of request: DataRequest, query: String) async throws {
        guard let table = api.table(of: request) else { return }
        let known = try await queriesByTable()
        guard known[table]?.contains(query) != true else { return }
        let hash = String(EntryChecksum.of(key: table, value: query), radix: 16)
        try await store.set(Self.tablesPrefix + table + ":" + hash, query)
        state.withLock { _ = $0.queriesByTable?[table, default: []].insert(query) }
    }

    private func markTableStale(of request: DataRequest) async throws {
        let known = try await queriesByTable()
        guard !known.isEmpty, let table = api.table(of: request) else { return }
        for query in known[table] ?? [] { try await cache.markStale(query) }
    }

    /// The cached queries of `table`.
    func cachedQueries(of table: String) async throws -> Set<String> {
        try await queriesByTable()[table] ?? []
    }

    /// The cached queries of each table: from memory, or listed once from the store.
    private func queriesByTable() async throws -> [String: Set<String>] {
        if let known = state.withLock({ $0.queriesByTable }) { return known }
        var listed: [String: Set<String>] = [:]
        var after: String?
        while true {
            let page = try await store.entries(Self.tablesPrefix, after: after, limit: 1_000)
            for entry in page {
                let table = entry.key.dropFirst(Self.tablesPrefix.count).split(separator: ":").dropLast().joined(
                    separator: ":")
                listed[table, default: []].insert(entry.value)
            }
            guard page.count == 1_000, let last = page.last else { break }
            after = last.key
        }
        return state.withLock { state in
            if let known = state.queriesByTable { return known }
            state.queriesByTable = listed
            return listed
        }
    }
}

/// A read answered with neither 2xx nor 304.
public struct ServerError: Error, Sendable, Hashable {
    /// The answer.
    public let response: DataResponse
}
