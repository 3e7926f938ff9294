import Foundation
import Sovaria

extension WriteQueue {
    /// Moves write `id` from the queue to the rejected list with the server's answer: the
    /// server refused it, and sending it again as it is would fail again.
    ///
    /// The rejected list keeps the newest ``maxRejected``; the oldest past that are dropped in
    /// the same batch.
    ///
    /// - Parameters:
    ///   - id: the queued write's client id.
    ///   - status: the HTTP status of the server's answer.
    ///   - message: the server's reason, as the rejected list shows it.
    ///   - reason: why the write did not apply; ``RejectionReason/refused`` by default.
    ///   - serverRow: the server's current row (JSON) for a conflict, if known.
    ///   - sparing: rejected writes never dropped to make room (conflicts waiting for the app);
    ///     the list may then hold more than ``maxRejected``.
    /// - Returns: the rejected write, or `nil` when no queued write has that id.
    /// - Important: One atomic store batch: the rejected entry in, the queue entry out, the
    ///   oldest rejected entries out. A crash leaves the write either queued or rejected, never
    ///   both, never neither.
    @discardableResult
    public func reject(
        _ id: String, status: Int, message: String, reason: RejectionReason = .refused, serverRow: String? = nil,
        sparing: Set<String> = []
    ) async throws -> RejectedWrite? {
        try await gate.withGate { gated in
            guard let queuedSequence = readIndex({ $0.queued[id] }) else { return nil }
            let queuedKey = QueueKeys.queued(queuedSequence, id)
            guard let write = try await storedWrite(queuedKey) else {
                changeIndex(gated) { $0.removeQueued(id) }  // gone from the store
                return nil
            }
            let rejected = RejectedWrite(
                write: write, status: status, message: message,
                rejectedAt: QueueCoding.truncatedToMilliseconds(clock()), reason: reason, serverRow: serverRow)
            let (sequence, dropped) = try readIndex { index in
                (try index.nextSequence(), index.oldestRejected(makingRoomFor: 1, sparing: sparing))
            }
            try await commit(
                gated,
                [
                    .set(key: QueueKeys.rejected(sequence, id), value: try QueueCoding.encode(rejected)),
                    .delete(key: queuedKey),
                ] + dropped.map { .delete(key: QueueKeys.rejected($0.sequence, $0.id)) },
                givingOut: sequence)
            changeIndex(gated) { index in
                index.removeQueued(id)
                let droppedIDs = Set(dropped.map(\.id))
                index.rejected.removeAll { droppedIDs.contains($0.id) }
                index.rejected.append(.init(sequence: sequence, id: id))
                index.lastSequence = sequence
            }
            return rejected
        }
    }

    /// Adds a write that was never queued to the rejected list with the server's answer: a
    /// controller sent it at once, and the server refused it. It is kept exactly as a queued write
    /// the server refused (``reject(_:status:message:reason:serverRow:sparing:)``), so the app finds every refusal in one
    /// list, whichever way the write was sent.
    ///
    /// - Parameters:
    ///   - request: the request as it was sent.
    ///   - id: the client id it was sent with (its `Idempotency-Key`).
    ///   - status: the HTTP status the server refused it with.
    ///   - message: the server's reason, as the rejected list shows it.
    ///   - reason: why the write did not apply; ``RejectionReason/refused`` by default.
    ///   - serverRow: the server's current row (JSON) for a conflict, if known.
    ///   - sparing: rejected writes never dropped to make room (conflicts waiting for the app).
    /// - Returns: the rejected write; its ``RejectedWrite/write`` has the rejection's sequence
    ///   and no failed attempts.
    /// - Important: One atomic store batch: the rejected entry in, the oldest rejected entries
    ///   past ``maxRejected`` out.
    /// - Throws: ``WriteQueueError`` with ``WriteQueueError/Code/invalidClientID`` when `id`
    ///   cannot be a client id or a queued write has it; nothing is written then.
    @discardableResult
    public func rejectUnqueued(
        _ request: DataRequest, id: String, status: Int, message: String, reason: RejectionReason = .refused,
        serverRow: String? = nil, sparing: Set<String> = []
    ) async throws -> RejectedWrite {
        try Self.checkClientID(id)
        return try await gate.withGate { gated in
            let (sequence, dropped) = try readIndex { index in
                if index.queued[id] != nil { throw QueueErrors.badClientID(id, "a queued write has it") }
                return (try index.nextSequence(), index.oldestRejected(makingRoomFor: 1, sparing: sparing))
            }
            let now = QueueCoding.truncatedToMilliseconds(clock())
            let rejected = RejectedWrite(
                write: QueuedWrite(id: id, sequence: sequence, request: request, queuedAt: now), status: status,
                message: message, rejectedAt: now, reason: reason, serverRow: serverRow)
            try await commit(
                gated,
                [.set(key: QueueKeys.rejected(sequence, id), value: try QueueCoding.encode(rejected))]
                    + dropped.map { .delete(key: QueueKeys.rejected($0.sequence, $0.id)) },
                givingOut: sequence)
            changeIndex(gated) { index in
                let droppedIDs = Set(dropped.map(\.id))
                index.rejected.removeAll { droppedIDs.contains($0.id) }
                index.rejected.append(.init(sequence: sequence, id: id))
                index.lastSequence = sequence
            }
            return rejected
        }
    }

    /// The rejected writes, newest rejection first.
    ///
    /// - Throws: `OfflineStoreError.Code.corrupt` naming the first key whose value is not a
    ///   rejected write (never skipped; ``discard(_:)`` it or ``clear()``).
    public func rejected() async throws -> [RejectedWrite] {
        let reader = QueueEntryReader()
        var list: [RejectedWrite] = []
        var after: String?
        while true {
            let page = try await store.entries(QueueKeys.rejectedPrefix, after: after, limit: Self.pageSize)
            for entry in page { list.append(try reader.rejectedWrite(entry)) }
            guard page.count == Self.pageSize, let last = page.last else { return list.reversed() }
            after = last.key
        }
    }

    /// Puts rejected write `rejectedID` back at the tail of the queue as a new attempt, for
    /// example after the user fixed what the server refused or the row it missed came back: a new
    /// sequence, the new client id `newID`, its ``QueuedWrite/queuedAt`` now and no failed attempts.
    ///
    /// The client id is new because the old one was used for a request the server answered: a
    /// server that stores its answers by idempotency key would replay the refusal. An
    /// ``idempotencyHeader`` the request carried for the same reason is left out.
    ///
    /// - Important: One atomic store batch: the queue entry in, the rejected entry out.
    /// - Throws: ``WriteQueueError`` with ``WriteQueueError/Code/notFound`` when no rejected write
    ///   has that id, ``WriteQueueError/Code/invalidClientID`` for a bad or used `newID`, or
    ///   ``WriteQueueError/Code/queueFull`` when ``maxQueued`` writes are waiting (it stays
    ///   rejected).
    @discardableResult
    public func requeue(_ rejectedID: String, id newID: String = WriteQueue.makeClientID()) async throws -> QueuedWrite
    {
        try Self.checkClientID(newID)
        return try await gate.withGate { gated in
            let (entry, waiting, sequence) = try readIndex { index in
                if index.queued[newID] != nil { throw QueueErrors.badClientID(newID, "a queued write has it") }
                return (index.rejected.first { $0.id == rejectedID }, index.queued.count, try index.nextSequence())
            }
            guard let entry else { throw QueueErrors.notRejected(rejectedID) }
            guard waiting < maxQueued else { throw QueueErrors.full(maxQueued) }
            let rejectedKey = QueueKeys.rejected(entry.sequence, rejectedID)
            guard let value = try await store.get(rejectedKey) else {
                changeIndex(gated) { $0.rejected.removeAll { $0.id == rejectedID } }  // gone from the store
                throw QueueErrors.notRejected(rejectedID)
            }
            let rejected = try QueueEntryReader().rejectedWrite(StoreEntry(key: rejectedKey, value: value))
            var request = rejected.write.request
            request.setHeader(Self.idempotencyHeader, nil)
            let write = QueuedWrite(
                id: newID, sequence: sequence, request: request, queuedAt: QueueCoding.truncatedToMilliseconds(clock()))
            try await commit(
                gated,
                [
                    .set(key: QueueKeys.queued(sequence, newID), value: try QueueCoding.encode(write)),
                    .delete(key: rejectedKey),
                ],
                givingOut: sequence)
            changeIndex(gated) { index in
                index.rejected.removeAll { $0.id == rejectedID }
                index.appendQueued(.init(sequence: sequence, id: newID))
            }
            return write
        }
    }

    /// Forgets rejected write `rejectedID`.
    ///
    /// - Returns: `false` when no rejected write has that id.
    /// - Important: One store batch (with the record of the last sequence when it was the newest
    ///   entry).
    @discardableResult
    public func discard(_ rejectedID: String) async throws -> Bool {
        try await gate.withGate { gated in
            let planned = readIndex { index in
                index.rejected.first { $0.id == rejectedID }.map { ($0, index.sequenceRecord(deleting: [$0.sequence])) }
            }
            guard let (entry, record) = planned else { return false }
            try await commit(gated, record.writes + [.delete(key: QueueKeys.rejected(entry.sequence, entry.id))])
            changeIndex(gated) { index in
                index.rejected.removeAll { $0.id == rejectedID }
                index.recordedSequences = record.recorded
            }
            return true
        }
    }
}
