import Foundation
import Sovaria
import Synchronization

@testable import SovariaFiles

/// Wraps a metadata store; once armed with ``failNextWrite(ofKeysStartingWith:)``, the next batch
/// that writes (sets or deletes) a key starting with the prefix throws `OfflineStoreError(.io)`
/// without reaching the store, and the wrapper disarms. Everything else passes through.
final class FailingWritesStore: OfflineStore {
    let inner: any OfflineStore
    private let state = Mutex<(prefix: String?, failures: Int)>((nil, 0))

    init(_ inner: any OfflineStore) { self.inner = inner }

    /// Fails the next batch writing a key that starts with `prefix` (byte prefix).
    func failNextWrite(ofKeysStartingWith prefix: String) { state.withLock { $0.prefix = prefix } }

    /// How many batches the wrapper failed.
    var failures: Int { state.withLock { $0.failures } }

    /// Whether the wrapper is still armed (no matching write came).
    var isArmed: Bool { state.withLock { $0.prefix != nil } }

    func get(_ key: String) async throws -> String? { try await inner.get(key) }
    func set(_ key: String, _ value: String) async throws { try await write([.set(key: key, value: value)]) }
    func delete(_ key: String) async throws { try await write([.delete(key: key)]) }
    func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }

    func write(_ batch: [StoreWrite]) async throws {
        let fails = state.withLock { state -> Bool in
            guard let prefix = state.prefix,
                batch.contains(where: { Array($0.key.utf8).starts(with: Array(prefix.utf8)) })
            else { return false }
            state.prefix = nil
            state.failures += 1
            return true
        }
        if fails {
            throw OfflineStoreError(.io, "The test's store failed this write on purpose.")
        }
        try await inner.write(batch)
    }

    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        try await inner.entries(prefix, after: after, limit: limit)
    }

    func compact() async throws { try await inner.compact() }
    var capabilities: StoreCapabilities { inner.capabilities }
}

/// The start of every metadata key `key`'s file can have at `sizeBytes` (any last use): a prefix
/// that matches the new key of a download of that size, not the old key of another size.
func metadataKeyPrefix(_ key: String, sizeBytes: Int) -> String {
    String(FileKeys.metadataKey(id: FileKeys.id(of: key), sizeBytes: sizeBytes, lastUseMillis: 0).dropLast(16))
}
