import Foundation
import Sovaria
import SovariaQueue

extension SovariaOffline {
    // MARK: - Flush

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

    func sharedFlush() async throws -> Int {
        try await startFlush().value
    }

    /// The running flush, or a new one.
    func startFlush() -> Task<Int, any Error> {
        let (flight, started) = state.withLock { state in
            if let running = state.flight { return (running, false) }
            let flagging = state.conflictFlagging
            let task = Task {
                // The feed's conflicts first: the flush does not send a write being listed as one.
                _ = try? await flagging?.value
                return try await self.drainQueue()
            }
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
            } catch let error as SyncTransportError where error.code == .offline {
                wentOffline(error, leaving: head)
                return (synced, false, held)
            } catch let error as SyncTransportError where error.code == .wrongAccount {
                // Not sent with another's token: the write waits for its own, tries not counted.
                pauseForAccount(error, leaving: head)
                return (synced, false, held)
            } catch {
                try await retryLater(head, response: nil, message: "\(error)")
                return (synced, false, held)
            }
            reachedServer(startingFlush: false)
            switch delivery {
            case .applied(let response, let sent, let newVersion):
                // Kept as synced before it leaves the queue: a read between the two sees it in one
                // list or both (deduplicated by id), never in neither.
                recordSynced(
                    QueuedWrite(id: head.id, sequence: head.sequence, request: sent, queuedAt: head.queuedAt),
                    response: response)
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

    /// The transport held no credentials of this controller's account: the queue waits for
    /// ``flush()``, and the status and ``syncErrors`` say why.
    func pauseForAccount(_ error: SyncTransportError, leaving head: QueuedWrite) {
        state.withLock { $0.pausedForAuthorization = true }
        report(SyncError(kind: .wrongAccount, write: head, message: error.message))
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

    /// Keeps a write the server took for the overlay of the answers fetched before it, with the
    /// feed position of its change when the server's `response` says it.
    func recordSynced(_ write: QueuedWrite, response: DataResponse) {
        synced.record(write, position: configuration.changeFeed?.position(ofWrite: response))
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

    /// 408, 429 and 5xx: the server may take the same request later
    /// (``DataResponse/asksToTryLater``).
    static func isRetryable(_ status: Int) -> Bool {
        DataResponse(status: status).asksToTryLater
    }

    /// A 4xx other than 401, 408 and 429: the server refused the write, and the same request
    /// would be refused again.
    static func isRefusal(_ status: Int) -> Bool {
        (400..<500).contains(status) && status != 401 && !isRetryable(status)
    }
}
