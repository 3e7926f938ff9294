import Foundation
import Sovaria

extension WriteQueue {
    /// Takes write `id` out of the queue, as ``remove(_:)`` does, and in the same batch stores
    /// `followers` (queued writes, each under its own key) as given: the server took `id`, and the
    /// writes made after it now expect the row as `id` left it.
    ///
    /// - Parameters:
    ///   - id: the client id of the write the server took.
    ///   - followers: queued writes with their requests changed; one no longer queued is skipped.
    /// - Returns: `false` when no queued write has that id (nothing is written then).
    /// - Important: One atomic store batch: a crash leaves `id` queued with the followers as they
    ///   were, or gone with the followers changed.
    @discardableResult
    public func remove(_ id: String, updating followers: [QueuedWrite]) async throws -> Bool {
        guard !followers.isEmpty else { return try await remove(id) }
        return try await gate.withGate { gated in
            let planned = readIndex { index in
                index.queued[id].map { sequence in
                    (
                        sequence, index.sequenceRecord(deleting: [sequence]),
                        followers.filter { index.queued[$0.id] == $0.sequence && $0.id != id }
                    )
                }
            }
            guard let (sequence, record, kept) = planned else { return false }
            // The changed followers first, so a store that applies a batch write by write and is
            // cut inside it leaves them changed with the head still queued, never the reverse.
            var batch: [StoreWrite] = try kept.map { follower in
                .set(key: QueueKeys.queued(follower.sequence, follower.id), value: try QueueCoding.encode(follower))
            }
            batch += record.writes + [.delete(key: QueueKeys.queued(sequence, id))]
            try await commit(gated, batch)
            changeIndex(gated) { index in
                index.removeQueued(id)
                index.recordedSequences = record.recorded
            }
            return true
        }
    }

    /// Replaces rejected write `rejectedID` with `request`, queued at the tail under the new client
    /// id `newID`, and moves `followers` (queued writes, oldest first, with their requests as
    /// given) behind it: the app resolved a conflict, and the writes that waited for it go after
    /// the resolution.
    ///
    /// - Parameters:
    ///   - rejectedID: the rejected write the resolution replaces.
    ///   - request: the resolution to send.
    ///   - newID: its client id: a new one, since the rejected write's key was used for a request
    ///     the server answered.
    ///   - followers: queued writes to move behind it; one no longer queued is skipped. Each keeps
    ///     its client id and gets a new sequence.
    /// - Returns: the queued resolution.
    /// - Important: One atomic store batch: the rejected entry out, the resolution in, each
    ///   follower moved. A crash leaves the conflict as it was, or resolved.
    /// - Throws: ``WriteQueueError`` with ``WriteQueueError/Code/notFound`` when no rejected write
    ///   has that id, ``WriteQueueError/Code/invalidClientID`` for a bad or used `newID`, or
    ///   ``WriteQueueError/Code/queueFull``.
    @discardableResult
    public func resolve(
        _ rejectedID: String, with request: DataRequest, id newID: String, moving followers: [QueuedWrite]
    ) async throws -> QueuedWrite {
        try Self.checkClientID(newID)
        return try await gate.withGate { gated in
            let (entry, waiting, first, moving) = try readIndex { index in
                if index.queued[newID] != nil { throw QueueErrors.badClientID(newID, "a queued write has it") }
                return (
                    index.rejected.first { $0.id == rejectedID }, index.queued.count, try index.nextSequence(),
                    followers.filter { index.queued[$0.id] == $0.sequence }
                )
            }
            guard let entry else { throw QueueErrors.notRejected(rejectedID) }
            guard waiting < maxQueued else { throw QueueErrors.full(maxQueued) }
            let now = QueueCoding.truncatedToMilliseconds(clock())
            let resolution = QueuedWrite(id: newID, sequence: first, request: request, queuedAt: now)
            // New keys before old ones, the rejected entry last: a store that applies a batch write
            // by write and is cut inside it leaves an id under two keys (open keeps the higher
            // sequence), never a write under none.
            var batch: [StoreWrite] = [
                .set(key: QueueKeys.queued(first, newID), value: try QueueCoding.encode(resolution))
            ]
            var deletes: [StoreWrite] = []
            var moved: [QueuedWrite] = []
            for (offset, follower) in moving.enumerated() {
                let (sequence, overflow) = first.addingReportingOverflow(UInt64(offset + 1))
                guard !overflow else { throw QueueErrors.full(maxQueued) }
                let write = QueuedWrite(
                    id: follower.id, sequence: sequence, request: follower.request, queuedAt: follower.queuedAt,
                    attempts: follower.attempts, lastError: follower.lastError)
                batch.append(.set(key: QueueKeys.queued(sequence, follower.id), value: try QueueCoding.encode(write)))
                deletes.append(.delete(key: QueueKeys.queued(follower.sequence, follower.id)))
                moved.append(write)
            }
            batch += deletes + [.delete(key: QueueKeys.rejected(entry.sequence, rejectedID))]
            try await commit(gated, batch, givingOut: first + UInt64(moved.count))
            changeIndex(gated) { index in
                index.rejected.removeAll { $0.id == rejectedID }
                index.appendQueued(.init(sequence: first, id: newID))
                for write in moved {
                    index.removeQueued(write.id)
                    index.appendQueued(.init(sequence: write.sequence, id: write.id))
                }
            }
            return resolution
        }
    }

    /// Stores `writes` (queued writes, each under its own key) as given: their requests changed
    /// before they are sent. One no longer queued is skipped.
    ///
    /// - Important: One atomic store batch.
    public func update(_ writes: [QueuedWrite]) async throws {
        try await gate.withGate { gated in
            let kept = readIndex { index in writes.filter { index.queued[$0.id] == $0.sequence } }
            guard !kept.isEmpty else { return }
            try await commit(
                gated,
                try kept.map { .set(key: QueueKeys.queued($0.sequence, $0.id), value: try QueueCoding.encode($0)) })
        }
    }

    /// The oldest queued write that `isSendable` accepts, and how many older ones it passed over;
    /// `nil` (with the count passed over) when it accepts none.
    ///
    /// - Complexity: reads the queued values in order until one is accepted, in pages.
    public func firstPending(
        where isSendable: (QueuedWrite) throws -> Bool
    ) async throws -> (write: QueuedWrite?, passedOver: Int) {
        let reader = QueueEntryReader()
        var passedOver = 0
        var after: String?
        while true {
            let page = try await store.entries(QueueKeys.queuePrefix, after: after, limit: 64)
            for entry in page {
                let write = try reader.queuedWrite(entry)
                if try isSendable(write) { return (write, passedOver) }
                passedOver += 1
            }
            guard page.count == 64, let last = page.last else { return (nil, passedOver) }
            after = last.key
        }
    }
}
