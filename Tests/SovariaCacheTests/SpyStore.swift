import Foundation
import Sovaria
import Synchronization

/// Wraps a store, records what the cache asks of it, and can fail or run a hook on a write.
final class SpyStore: OfflineStore {
    struct Log {
        var gets: [String] = []
        var entriesPrefixes: [String] = []
        var keysPrefixes: [String] = []
        var batches: [[StoreWrite]] = []
    }

    let inner: any OfflineStore
    let log = Mutex(Log())
    /// Called before each batch is written; throwing fails that batch.
    let beforeWrite = Mutex<(@Sendable ([StoreWrite]) throws -> Void)?>(nil)
    /// Awaited before each batch is written (after `beforeWrite`): holds a write until the
    /// test has seen what it waits for.
    let holdWrite = Mutex<(@Sendable ([StoreWrite]) async -> Void)?>(nil)
    /// Awaited before each key listing, given its prefix; throwing fails the listing.
    let beforeKeys = Mutex<(@Sendable (String) async throws -> Void)?>(nil)
    /// Called after each batch is written; throwing fails the call although the batch applied
    /// (a commit whose acknowledgement was lost).
    let afterWrite = Mutex<(@Sendable ([StoreWrite]) throws -> Void)?>(nil)
    /// Called after a get has read its value and before it returns it.
    let afterGet = Mutex<(@Sendable (String) async throws -> Void)?>(nil)

    init(_ inner: any OfflineStore) { self.inner = inner }

    func reset() { log.withLock { $0 = Log() } }

    /// Whether `batch` only deletes, as an eviction pass's batches do.
    static func isEviction(_ batch: [StoreWrite]) -> Bool {
        batch.allSatisfy { if case .delete = $0 { true } else { false } }
    }

    /// Calls `body` before each batch of an eviction pass (throwing fails that batch); `nil` stops.
    func beforeEvictionBatch(_ body: (@Sendable ([StoreWrite]) throws -> Void)?) {
        guard let body else {
            beforeWrite.withLock { $0 = nil }
            return
        }
        beforeWrite.withLock { hook in
            hook = { batch in
                if Self.isEviction(batch) { try body(batch) }
            }
        }
    }

    /// Holds each batch of an eviction pass, after `reached` is told, until `release` finishes.
    func holdEvictionBatches(reached: AsyncStream<Void>.Continuation, until release: AsyncStream<Void>) {
        holdWrite.withLock { hook in
            hook = { batch in
                guard Self.isEviction(batch) else { return }
                reached.yield()
                for await _ in release {}
            }
        }
    }

    func get(_ key: String) async throws -> String? {
        log.withLock { $0.gets.append(key) }
        let value = try await inner.get(key)
        if let hook = afterGet.withLock({ $0 }) { try await hook(key) }
        return value
    }

    func set(_ key: String, _ value: String) async throws { try await write([.set(key: key, value: value)]) }

    func delete(_ key: String) async throws { try await write([.delete(key: key)]) }

    func keys(_ prefix: String) async throws -> [String] {
        log.withLock { $0.keysPrefixes.append(prefix) }
        if let hook = beforeKeys.withLock({ $0 }) { try await hook(prefix) }
        return try await inner.keys(prefix)
    }

    func write(_ batch: [StoreWrite]) async throws {
        try beforeWrite.withLock { $0 }?(batch)
        if let hold = holdWrite.withLock({ $0 }) { await hold(batch) }
        log.withLock { $0.batches.append(batch) }
        try await inner.write(batch)
        try afterWrite.withLock { $0 }?(batch)
    }

    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        log.withLock { $0.entriesPrefixes.append(prefix) }
        return try await inner.entries(prefix, after: after, limit: limit)
    }

    func compact() async throws { try await inner.compact() }
    var capabilities: StoreCapabilities { inner.capabilities }
}
