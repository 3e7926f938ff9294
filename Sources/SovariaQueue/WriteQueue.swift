import Foundation
import Sovaria
import SovariaPlumbing
import Synchronization

/// The durable queue of writes made offline, oldest first, and the list of writes the server
/// rejected, written once against `OfflineStore` so it runs on every engine.
///
/// The queue only keeps writes; the controller that sends them (in order, one at a time, with
/// backoff) calls ``head()`` or ``pending()``, then ``remove(_:)`` when the server took a write,
/// ``recordFailure(_:message:)`` when a try failed and may be retried, or
/// ``reject(_:status:message:reason:serverRow:sparing:)`` when the server refused it.
///
/// ```swift
/// let queue = try await WriteQueue(store: try SQLiteOfflineStore(fileURL: url))
/// let write = try await queue.enqueue(DataRequest(method: "POST", path: "/rest/v1/notes", body: #"{"title":"Hi"}"#))
/// // later, online:
/// while let next = try await queue.head() {
///     let status = try await send(next.request, idempotencyKey: next.id)
///     if (200..<300).contains(status) { try await queue.remove(next.id) } else { … }
/// }
/// ```
///
/// Each entry is one store key whose name carries its sequence and client id (layout in
/// docs/ARCHITECTURE.md, "Write queue and rejected list"), so opening the queue lists key
/// names only and reads no value.
///
/// - Important: Every change is one store batch, written before the call returns: on a store
///   with `StoreCapabilities.atomicBatch` (every store in this package) a crash at any point
///   loses no acknowledged write and applies none twice. Durability is the store's
///   (`Durability.synced` survives power loss). Safe from any number of tasks: changes go
///   through one async gate, in call order; reads take no gate. Open one queue per store at a
///   time.
public final class WriteQueue: Sendable {
    /// The default bound on waiting writes: 1,000. Writes are small (a request and a few
    /// headers, typically under 1 KiB each), so a full queue costs about a megabyte; past it
    /// `enqueue(_:)` refuses with ``WriteQueueError/Code/queueFull`` rather than growing the
    /// store without bound while the device stays offline.
    public static let defaultMaxQueued = 1_000
    /// How many rejected writes are kept: the newest 100; older ones are dropped in
    /// the batch that adds a newer one.
    public static let maxRejected = 100
    /// The header that carries a write's client id on every try: `Idempotency-Key`.
    public static let idempotencyHeader = "Idempotency-Key"

    /// The store the queue keeps its entries in.
    public let store: any OfflineStore
    /// How many writes may wait at once (at least 1).
    public let maxQueued: Int

    let clock: @Sendable () -> Date
    /// Waits between read-backs after a write whose outcome the store could not tell.
    let pause: @Sendable (Duration) async throws -> Void
    // State and locking: `gate` orders the changes, one at a time in call order; `state` guards
    // the index of key names (its rank: SovariaPlumbing/LockOrder.swift). Changing the index takes
    // the gate's token (`changeIndex`), so it changes only inside the gate, after the store batch
    // it describes succeeded; reading it (`readIndex`) takes no gate.

    /// Orders the changes: one at a time, in call order.
    let gate = AsyncGate<WriteQueue>()
    /// The index; see ``readIndex(_:)`` and ``changeIndex(_:_:)``.
    private let state: RankedMutex<QueueIndex>
    /// The queued writes as last read or written, while they are known to be the store's:
    /// ``pending()`` answers from it without reading the store. Every
    /// ``commit(_:_:givingOut:appending:)`` moves `revision` at its start and at its end and
    /// drops the list, but for an append, which it extends; every other change of the index
    /// drops it too. A read keeps what it read only when the revision did not move meanwhile.
    /// A lock of its own, a leaf: a read fills it outside the gate, which the index may not be.
    private let knownPending = Mutex(KnownPending())

    /// The writes ``pending()`` knows, and the revision that tells a read whether a change ran
    /// while it read the store.
    struct KnownPending {
        /// Moved by every change; compared before and after a read of the store.
        var revision: UInt64 = 0
        /// The queued writes, oldest first, or `nil` when they are not known.
        var writes: [QueuedWrite]?
    }

    /// Opens the queue kept in `store`, from its key names alone.
    ///
    /// - Parameters:
    ///   - store: the store the queue keeps its entries in.
    ///   - maxQueued: the most writes that may wait; below 1 counts as 1. A queue reopened with
    ///     more writes than this keeps them all and refuses new ones until it is below.
    ///   - clock: the time of ``QueuedWrite/queuedAt`` and ``RejectedWrite/rejectedAt``; inject
    ///     one in tests.
    ///   - pause: how the queue waits between read-backs after a write whose outcome the store
    ///     could not tell (`OfflineStoreError.Code.outcomeUnknown`: see ``enqueue(_:id:)``);
    ///     default `Task.sleep`. Tests pass one that returns at once.
    /// - Throws: the store's errors; `OfflineStoreError.Code.corrupt` naming a key under the
    ///   queue's prefixes that the queue did not write.
    public init(
        store: any OfflineStore,
        maxQueued: Int = defaultMaxQueued,
        clock: @escaping @Sendable () -> Date = Date.init,
        pause: @escaping @Sendable (Duration) async throws -> Void = { try await Task.sleep(for: $0) }
    ) async throws {
        self.store = store
        self.maxQueued = max(1, maxQueued)
        self.clock = clock
        self.pause = pause
        let (loaded, repairs) = try await QueueIndex.load(from: store)
        if !repairs.isEmpty { try await store.write(repairs) }
        state = RankedMutex(LockRank.writeQueueState, loaded)
    }

    /// Reads the index, from any task.
    func readIndex<Result: Sendable, Failure: Error>(
        _ body: (borrowing QueueIndex) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        try state.withLock { (index: inout QueueIndex) throws(Failure) -> Result in try body(index) }
    }

    /// Changes the index: only inside the gate, after the store batch the change describes
    /// succeeded (or, in ``commit(_:_:givingOut:appending:)``, to the store's state after a failed
    /// one). The writes ``pending()`` knows are dropped, but for the append a commit has just
    /// added to them (`keepingKnownPending`).
    func changeIndex<Result: Sendable, Failure: Error>(
        _ gated: borrowing GateToken<WriteQueue>, keepingKnownPending: Bool = false,
        _ body: (inout QueueIndex) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        if !keepingKnownPending {
            knownPending.withLock { known in
                known.revision &+= 1
                known.writes = nil
            }
        }
        return try state.withLock { (index: inout QueueIndex) throws(Failure) -> Result in try body(&index) }
    }

    /// How many writes are waiting: exact, kept in memory, costs no store call.
    public var count: Int { readIndex { $0.queued.count } }

    /// How many rejected writes are kept: exact, kept in memory.
    public var rejectedCount: Int { readIndex { $0.rejected.count } }

    /// Queues `request` at the tail with the next sequence and client id `id` (a new one when
    /// `nil`).
    ///
    /// Pass an id when the write was already sent once under it (as an `Idempotency-Key`) and
    /// the answer was lost: the queued write then carries the same key, so the server can tell
    /// the replay from a new write.
    ///
    /// - Important: Durable before it returns: one store batch of one key. A crash before the
    ///   batch leaves no trace; after it, the write is there once. When the store cannot say
    ///   whether the batch was applied (`OfflineStoreError.Code.outcomeUnknown`: a database
    ///   failing over), the queue reads its key back once the store answers again (waiting up to
    ///   a minute) and sends it again only if it is not there: the call returns the write queued
    ///   once, or throws an error that leaves no doubt. The same holds for every change the queue
    ///   and the rejected list make.
    /// - Throws: ``WriteQueueError`` with ``WriteQueueError/Code/queueFull`` (message
    ///   `OFFLINE_QUEUE_FULL…`) when ``maxQueued`` writes are waiting, or with
    ///   ``WriteQueueError/Code/invalidClientID`` when `id` is empty, longer than 128 bytes, holds
    ///   a control character, or is already queued; nothing is written then. The store's errors
    ///   as `OfflineStoreError`.
    @discardableResult
    public func enqueue(_ request: DataRequest, id: String? = nil) async throws -> QueuedWrite {
        if let id { try Self.checkClientID(id) }
        return try await gate.withGate { gated in
            let (waiting, sequence) = try readIndex { index in
                if let id, index.queued[id] != nil { throw QueueErrors.badClientID(id, "a queued write has it") }
                return (index.queued.count, try index.nextSequence())
            }
            guard waiting < maxQueued else { throw QueueErrors.full(maxQueued) }
            let write = QueuedWrite(
                id: id ?? ClientID.make(), sequence: sequence, request: request,
                queuedAt: QueueCoding.truncatedToMilliseconds(clock()))
            try await commit(
                gated, [.set(key: QueueKeys.queued(sequence, write.id), value: try QueueCoding.encode(write))],
                givingOut: sequence, appending: write)
            changeIndex(gated, keepingKnownPending: true) { $0.appendQueued(.init(sequence: sequence, id: write.id)) }
            return write
        }
    }

    /// A new client id: a random (version 4) UUID in lowercase text.
    public static func makeClientID() -> String { ClientID.make() }

    static func checkClientID(_ id: String) throws {
        guard !id.isEmpty, id.utf8.count <= 128 else { throw QueueErrors.badClientID(id, "1 to 128 bytes") }
        guard !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw QueueErrors.badClientID(id, "a control character")
        }
    }

    /// Every waiting write, oldest first (ascending sequence).
    ///
    /// - Complexity: O(n) copies from memory when the queue knows its writes: it keeps those it
    ///   last read, and the writes queued since, until another change (a removal, a retry
    ///   recorded, a rejection). Otherwise it reads every queued value, in pages of 1,000.
    /// - Throws: `OfflineStoreError.Code.corrupt` naming the first key whose value is not a
    ///   queued write (it is never skipped; ``remove(_:)`` it or ``clear()``).
    public func pending() async throws -> [QueuedWrite] {
        let (revision, known) = knownPending.withLock { ($0.revision, $0.writes) }
        if let known { return known }
        let writes = try await storedPending()
        knownPending.withLock { if $0.revision == revision { $0.writes = writes } }
        return writes
    }

    /// Every waiting write as the store holds it, read in pages of 1,000.
    func storedPending() async throws -> [QueuedWrite] {
        let reader = QueueEntryReader()
        var writes: [QueuedWrite] = []
        var after: String?
        while true {
            let page = try await store.entries(QueueKeys.queuePrefix, after: after, limit: Self.pageSize)
            for entry in page { writes.append(try reader.queuedWrite(entry)) }
            guard page.count == Self.pageSize, let last = page.last else { return writes }
            after = last.key
        }
    }

    /// The oldest waiting write, the next to send, or `nil` when none waits. Reads one value
    /// (its key comes from memory), so it costs the same however long the queue is.
    public func head() async throws -> QueuedWrite? {
        guard let head = readIndex({ $0.head }) else { return nil }
        if let write = try await storedWrite(QueueKeys.queued(head.sequence, head.id)) { return write }
        // Removed between reading the index and the store: ask the store for its first entry.
        return try await store.entries(QueueKeys.queuePrefix, after: nil, limit: 1).first.map(
            QueueEntryReader().queuedWrite)
    }

    /// Takes the write with client id `id` out of the queue: the server has it.
    ///
    /// - Returns: `false` when no queued write has that id (already removed, rejected or cleared).
    /// - Important: One store batch (plus the record of the last sequence when the newest write
    ///   goes, in the same batch), so sequences keep growing after the queue empties.
    @discardableResult
    public func remove(_ id: String) async throws -> Bool {
        try await gate.withGate { gated in
            let planned = readIndex { index in
                index.queued[id].map { ($0, index.sequenceRecord(deleting: [$0])) }
            }
            guard let (sequence, record) = planned else { return false }
            try await commit(gated, record.writes + [.delete(key: QueueKeys.queued(sequence, id))])
            changeIndex(gated) { index in
                index.removeQueued(id)
                index.recordedSequences = record.recorded
            }
            return true
        }
    }

    /// Counts a failed try of write `id` (``QueuedWrite/attempts`` + 1) and keeps `message` as
    /// its ``QueuedWrite/lastError``; the write keeps its place.
    ///
    /// - Returns: the updated write, or `nil` when no queued write has that id.
    @discardableResult
    public func recordFailure(_ id: String, message: String) async throws -> QueuedWrite? {
        try await gate.withGate { gated in
            guard let sequence = readIndex({ $0.queued[id] }) else { return nil }
            let key = QueueKeys.queued(sequence, id)
            guard var write = try await storedWrite(key) else {
                changeIndex(gated) { $0.removeQueued(id) }  // gone from the store
                return nil
            }
            write.attempts += 1
            write.lastError = message
            try await commit(gated, [.set(key: key, value: try QueueCoding.encode(write))])
            return write
        }
    }

    /// How many writes wait in the queue `store` holds, from its key names (no value is read):
    /// for a count of a queue no one has open, such as another account's.
    public static func pendingCount(in store: any OfflineStore) async throws -> Int {
        try await store.keys(QueueKeys.queuePrefix).count { QueueKeys.parse($0, prefix: QueueKeys.queuePrefix) != nil }
    }

    /// Forgets every queued and rejected write (sign-out). Sequences keep growing.
    ///
    /// - Important: One store batch: a crash leaves either everything or nothing.
    public func clear() async throws {
        try await gate.withGate { gated in
            // The store's key names, not the index: whatever is under the prefixes goes.
            let keys = try await store.keys(QueueKeys.queuePrefix) + store.keys(QueueKeys.rejectedPrefix)
            let sequences =
                keys.compactMap { QueueKeys.parse($0, prefix: QueueKeys.queuePrefix)?.sequence }
                + keys.compactMap { QueueKeys.parse($0, prefix: QueueKeys.rejectedPrefix)?.sequence }
            let record = readIndex { $0.sequenceRecord(deleting: sequences) }
            try await commit(gated, record.writes + keys.map { .delete(key: $0) })
            changeIndex(gated) { index in
                index.removeAll()
                index.recordedSequences = record.recorded
            }
        }
    }

    static let pageSize = 1_000

    /// Writes `batch`, learning its outcome when the store cannot tell it. If it fails, the
    /// index is rebuilt from the store's keys (a store without atomic batches may have applied
    /// part of it); the sequences given out so far, `sequence` included if the batch used a new
    /// one, are never given out again. `appended`: the write the batch queues at the tail, which
    /// the writes ``pending()`` knows then include.
    func commit(
        _ gated: borrowing GateToken<WriteQueue>, _ batch: [StoreWrite], givingOut sequence: UInt64 = 0,
        appending appended: QueuedWrite? = nil
    ) async throws {
        let known = knownPending.withLock { known in
            known.revision &+= 1
            defer { known.writes = nil }
            return known.writes
        }
        var kept: [QueuedWrite]?
        defer {
            knownPending.withLock { known in
                known.revision &+= 1
                known.writes = kept
            }
        }
        do {
            try await store.writeLearningOutcome(batch, pause: pause)
        } catch {
            let reloaded = try? await QueueIndex.load(from: store).index
            changeIndex(gated) { index in
                let givenOut = max(index.lastSequence, sequence)  // never handed out again
                if let reloaded { index = reloaded }
                index.lastSequence = max(index.lastSequence, givenOut)
            }
            throw error
        }
        if let appended, let known { kept = known + [appended] }
    }

    /// The queued write stored under `key`, or `nil` when the key has no value.
    func storedWrite(_ key: String) async throws -> QueuedWrite? {
        guard let value = try await store.get(key) else { return nil }
        return try QueueEntryReader().queuedWrite(StoreEntry(key: key, value: value))
    }
}
