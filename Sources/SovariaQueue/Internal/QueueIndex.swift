import Sovaria

/// What the write queue knows from key names alone: every queued and rejected write's
/// sequence and client id, and the last sequence given out. Rebuilt at open from three key
/// listings (no value is read); changed in place, only under the queue's gate and only after
/// the store batch it describes succeeded.
struct QueueIndex: Sendable {
    /// A write's key: its sequence (of queueing, or of rejection) and its client id.
    struct Entry: Sendable, Hashable {
        let sequence: UInt64
        let id: String
    }

    /// The highest sequence given out (queued, rejected or recorded).
    var lastSequence: UInt64 = 0
    /// The sequences in `sov:meta:queue:sequence:` keys (normally one, none before the first
    /// removal of the newest entry).
    var recordedSequences: [UInt64] = []
    /// Queued writes: client id → sequence.
    private(set) var queued: [String: UInt64] = [:]
    /// Queued writes, oldest first: ``head`` without a store scan.
    private(set) var queueOrder: [Entry] = []
    /// Rejected writes, oldest rejection first.
    var rejected: [Entry] = []

    /// The oldest queued write's key.
    var head: Entry? { queueOrder.first }

    /// The sequence after ``lastSequence``; throws once all 2^64 are used (a damaged key name,
    /// in practice).
    func nextSequence() throws -> UInt64 {
        guard lastSequence < UInt64.max else {
            throw OfflineStoreError(
                .corrupt,
                "The write queue has used its last sequence number (a damaged key under \(QueueKeys.sequencePrefix)?): "
                    + "clear the queue.")
        }
        return lastSequence + 1
    }

    /// The oldest rejected entries to drop so that `count` more fit in ``WriteQueue/maxRejected``,
    /// passing over the ids in `sparing`.
    func oldestRejected(makingRoomFor count: Int, sparing: Set<String>) -> [Entry] {
        let excess = rejected.count + count - WriteQueue.maxRejected
        guard excess > 0 else { return [] }
        return Array(rejected.lazy.filter { !sparing.contains($0.id) }.prefix(excess))
    }

    /// Adds a queued write whose sequence is above every other (enqueue, requeue).
    mutating func appendQueued(_ entry: Entry) {
        queued[entry.id] = entry.sequence
        queueOrder.append(entry)
        lastSequence = max(lastSequence, entry.sequence)
    }

    /// Takes queued write `id` out.
    mutating func removeQueued(_ id: String) {
        guard let sequence = queued.removeValue(forKey: id) else { return }
        // Sequences ascend: binary search, then one move of the tail (usually the head goes).
        var low = 0
        var high = queueOrder.count
        while low < high {
            let middle = (low + high) / 2
            if queueOrder[middle].sequence < sequence { low = middle + 1 } else { high = middle }
        }
        if low < queueOrder.count, queueOrder[low].id == id { queueOrder.remove(at: low) }
    }

    /// Empties the queue and the rejected list.
    mutating func removeAll() {
        queued = [:]
        queueOrder = []
        rejected = []
    }

    /// The writes that keep ``lastSequence`` in the store when a batch deletes the entries with
    /// `deleted` sequences: when the newest entry goes, its sequence is recorded under
    /// `sov:meta:queue:sequence:` (the new record first, then the old ones deleted). Put them
    /// first in the batch, so a store without atomic batches never loses the sequence either.
    /// `recorded` is the new ``recordedSequences`` once the batch succeeded.
    func sequenceRecord(deleting deleted: some Sequence<UInt64>) -> (writes: [StoreWrite], recorded: [UInt64]) {
        guard deleted.contains(lastSequence), recordedSequences.max() != lastSequence else {
            return ([], recordedSequences)
        }
        let writes =
            [StoreWrite.set(key: QueueKeys.lastSequence(lastSequence), value: "")]
            + recordedSequences.map { .delete(key: QueueKeys.lastSequence($0)) }
        return (writes, [lastSequence])
    }

    /// Rebuilds the index from the key names under `sov:queue:`, `sov:rejected:` and
    /// `sov:meta:queue:sequence:`.
    ///
    /// A client id under two keys can only be left by a crash inside a batch on a store without
    /// atomic batches (a reject or requeue half applied); the key with the higher sequence is
    /// the newer state and wins, and `repairs` deletes the others.
    ///
    /// - Throws: ``OfflineStoreError/Code/corrupt`` naming a key under those prefixes whose name
    ///   does not have the queue's form.
    static func load(from store: any OfflineStore) async throws -> (index: QueueIndex, repairs: [StoreWrite]) {
        struct Found {
            let sequence: UInt64
            let id: String
            let key: String
            let isQueued: Bool
        }
        var found: [Found] = []
        for (prefix, isQueued) in [(QueueKeys.queuePrefix, true), (QueueKeys.rejectedPrefix, false)] {
            for key in try await store.keys(prefix) {
                guard let (sequence, id) = QueueKeys.parse(key, prefix: prefix) else {
                    throw QueueErrors.malformedKey(key)
                }
                found.append(Found(sequence: sequence, id: id, key: key, isQueued: isQueued))
            }
        }
        var index = QueueIndex()
        for key in try await store.keys(QueueKeys.sequencePrefix) {
            guard let sequence = QueueKeys.parseLastSequence(key) else { throw QueueErrors.malformedKey(key) }
            index.recordedSequences.append(sequence)
        }
        var newest: [String: Found] = [:]
        for entry in found {
            if let current = newest[entry.id], current.sequence >= entry.sequence { continue }
            newest[entry.id] = entry
        }
        var repairs: [StoreWrite] = []
        for entry in found {
            guard newest[entry.id]?.key == entry.key else {
                repairs.append(.delete(key: entry.key))
                continue
            }
            if entry.isQueued {
                index.queued[entry.id] = entry.sequence
                index.queueOrder.append(Entry(sequence: entry.sequence, id: entry.id))
            } else {
                index.rejected.append(Entry(sequence: entry.sequence, id: entry.id))
            }
        }
        // Listed in byte order, which is sequence order; sorted again for stores that list otherwise.
        index.queueOrder.sort { $0.sequence < $1.sequence }
        index.rejected.sort { $0.sequence < $1.sequence }
        index.lastSequence = max(found.map(\.sequence).max() ?? 0, index.recordedSequences.max() ?? 0)
        return (index, repairs)
    }
}
