import Foundation
import Sovaria
import SovariaPlumbing
import SovariaQueue

extension SovariaOffline {
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
    ///   writes pending, no network, or 408, 429, 5xx; or nothing sent because the transport held
    ///   no credentials of the controller's account, ``SyncTransportError/Code/wrongAccount``: the
    ///   queue then pauses until ``flush()``).
    /// - Throws: `WriteQueueError` with `WriteQueueError.Code.queueFull` (`OFFLINE_QUEUE_FULL`)
    ///   past ``Configuration/maxQueued``, with nothing written; the store's errors as
    ///   `OfflineStoreError`; ``SovariaOfflineError/Code/closed`` after ``close()``.
    public func write(_ request: DataRequest) async throws -> WriteOutcome {
        try checkOpen()
        // Counted until it returns: a close waits for it.
        try inFlight.enter()
        defer { inFlight.leave() }
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
        // Closed while this write waited at the gate: nothing is sent or queued after a close.
        try checkOpen()
        let id = WriteQueue.makeClientID()
        let request = try await recordingVersion(request)
        // A write to a row in conflict waits with it, in the queue.
        var noNetwork: SyncTransportError?
        var noCredentials: SyncTransportError?
        if online, queue.count == 0, !isHeld(request) {
            do {
                let write = QueuedWrite(id: id, sequence: 0, request: request, queuedAt: configuration.clock())
                let delivery = try await deliver(write)
                reachedServer()
                switch delivery {
                case .applied(let response, let sent, let newVersion):
                    // Shown in the answers fetched before it until they are fetched again.
                    recordSynced(
                        QueuedWrite(id: id, sequence: 0, request: sent, queuedAt: write.queuedAt), response: response)
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
            } catch let error as SyncTransportError where error.code == .offline {
                noNetwork = error
            } catch let error as SyncTransportError where error.code == .wrongAccount {
                // Not sent with another's token: queued, it waits for its own.
                noCredentials = error
            }
        }
        let queued = try await queue.enqueue(request, id: id)
        if let noNetwork { wentOffline(noNetwork, leaving: queued) }
        if let noCredentials { pauseForAccount(noCredentials, leaving: queued) }
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

    // MARK: - Pending and rejected writes

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
}
