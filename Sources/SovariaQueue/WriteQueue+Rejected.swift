import Foundation
import Sovaria

extension WriteQueue {
    /// Moves write `id` from the queue to the rejected list with the server's answer: the
    /// server refused it, and sending it again as it is would fail again.
    ///
    /// The rejected list keeps the newest ``maxRejected``; the oldest past that are dropped in
    /// the same batch.
    ///
    /// - Returns: the rejected write, or `nil` when no queued write has that id.
    /// - Important: One atomic store batch: the rejected entry in, the queue entry out, the
    ///   oldest rejected entries out. A crash leaves the write either queued or rejected, never
    ///   both, never neither.
    @discardableResult
    public func reject(_ id: String, status: Int, message: String) async throws -> RejectedWrite? {
        try await gate.withGate {
            var next = index.withLock { $0 }
            guard let queuedSequence = next.queued[id] else { return nil }
            let queuedKey = QueueKeys.queued(queuedSequence, id)
            guard let write = try await storedWrite(queuedKey) else {
                index.withLock { _ = $0.queued.removeValue(forKey: id) }  // gone from the store
                return nil
            }
            let rejected = RejectedWrite(
                write: write, status: status, message: message,
                rejectedAt: QueueCoding.truncatedToMilliseconds(clock()))
            let sequence = try next.takeSequence()
            next.queued.removeValue(forKey: id)
            next.rejected.append(QueueIndex.Rejection(sequence: sequence, id: id))
            var batch: [StoreWrite] = [
                .set(key: QueueKeys.rejected(sequence, id), value: try QueueCoding.encode(rejected)),
                .delete(key: queuedKey),
            ]
            while next.rejected.count > Self.maxRejected {
                let oldest = next.rejected.removeFirst()
                batch.append(.delete(key: QueueKeys.rejected(oldest.sequence, oldest.id)))
            }
            try await commit(next, batch)
            return rejected
        }
    }

    /// The rejected writes, newest rejection first.
    ///
    /// - Throws: ``OfflineStoreError/Code/corrupt`` naming the first key whose value is not a
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

    /// Puts rejected write `rejectedID` back at the tail of the queue, for example after the
    /// user fixed what the server refused: a new sequence, the same client id, its
    /// ``QueuedWrite/queuedAt`` now and no failed attempts.
    ///
    /// The client id stays, since it is the same write; a server that stores its answers by
    /// idempotency key may answer it with the stored rejection.
    ///
    /// - Important: One atomic store batch: the queue entry in, the rejected entry out.
    /// - Throws: ``OfflineStoreError/Code/notFound`` when no rejected write has that id;
    ///   ``OfflineStoreError/Code/queueFull`` when ``maxQueued`` writes are waiting (it stays
    ///   rejected).
    @discardableResult
    public func requeue(_ rejectedID: String) async throws -> QueuedWrite {
        try await gate.withGate {
            var next = index.withLock { $0 }
            guard let position = next.rejected.firstIndex(where: { $0.id == rejectedID }) else {
                throw QueueErrors.notRejected(rejectedID)
            }
            guard next.queued.count < maxQueued else { throw QueueErrors.full(maxQueued) }
            let rejectedKey = QueueKeys.rejected(next.rejected[position].sequence, rejectedID)
            guard let value = try await store.get(rejectedKey) else {
                index.withLock { $0.rejected.removeAll { $0.id == rejectedID } }  // gone from the store
                throw QueueErrors.notRejected(rejectedID)
            }
            let rejected = try QueueEntryReader().rejectedWrite(StoreEntry(key: rejectedKey, value: value))
            let write = QueuedWrite(
                id: rejectedID, sequence: try next.takeSequence(), request: rejected.write.request,
                queuedAt: QueueCoding.truncatedToMilliseconds(clock()))
            next.rejected.remove(at: position)
            next.queued[rejectedID] = write.sequence
            try await commit(
                next,
                [
                    .set(key: QueueKeys.queued(write.sequence, write.id), value: try QueueCoding.encode(write)),
                    .delete(key: rejectedKey),
                ])
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
        try await gate.withGate {
            var next = index.withLock { $0 }
            guard let position = next.rejected.firstIndex(where: { $0.id == rejectedID }) else { return false }
            let removed = next.rejected.remove(at: position)
            try await commit(
                next,
                next.recordLastSequence(deleting: [removed.sequence])
                    + [.delete(key: QueueKeys.rejected(removed.sequence, removed.id))])
            return true
        }
    }
}
