import Foundation
import Sovaria
import SovariaTestKit
import Testing

/// The suite must catch broken stores, or it proves nothing: each store here breaks one contract.
@Suite struct ConformanceSuiteTests {
    /// Keys by `String` equality and `String` order: merges "é" forms, sorts by characters.
    final class CharacterKeyedStore: OfflineStore, @unchecked Sendable {
        private let lock = NSLock()
        private var values: [String: String] = [:]
        func get(_ key: String) async throws -> String? { lock.withLock { values[key] } }
        func set(_ key: String, _ value: String) async throws {
            try StoreKey.validate(key)
            lock.withLock { values[key] = value }
        }
        func delete(_ key: String) async throws { lock.withLock { values[key] = nil } }
        func keys(_ prefix: String) async throws -> [String] {
            lock.withLock { values.keys.filter { $0.hasPrefix(prefix) }.sorted() }
        }
    }

    /// Accepts any key, so a batch with an invalid key is half written.
    final class UncheckedKeyStore: OfflineStore, @unchecked Sendable {
        let inner = MemoryOfflineStore()
        func get(_ key: String) async throws -> String? { key.isEmpty ? nil : try await inner.get(key) }
        func set(_ key: String, _ value: String) async throws { if !key.isEmpty { try await inner.set(key, value) } }
        func delete(_ key: String) async throws { if !key.isEmpty { try await inner.delete(key) } }
        func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
        func write(_ batch: [StoreWrite]) async throws {
            for write in batch {
                guard write.key.utf8.count <= StoreKey.maxUTF8Count else { throw OfflineStoreError(.invalidKey, "") }
                if case .set(let key, let value) = write { try await set(key, value) }
            }
        }
    }

    static let shared = MemoryOfflineStore()

    @Test func catchesCharacterKeyedStore() async {
        let failures = await OfflineStoreConformance.run(StoreFactory("broken") { _ in CharacterKeyedStore() })
        let failed = Set(failures.map(\.check))
        #expect(failed.isSuperset(of: ["keysAreBytes", "keysListInByteOrder", "prefixIsBytePrefix"]))
    }

    @Test func catchesHalfWrittenBatchesAndUncheckedKeys() async {
        let failures = await OfflineStoreConformance.run(StoreFactory("broken") { _ in UncheckedKeyStore() })
        let failed = Set(failures.map(\.check))
        #expect(failed.isSuperset(of: ["keyLengthLimits", "batchWithInvalidKeyChangesNothing"]))
    }

    @Test func catchesStoresThatShareState() async {
        let failures = await OfflineStoreConformance.run(StoreFactory("shared") { _ in Self.shared })
        #expect(failures.contains { $0.check == "storesShareNothing" })
    }

    @Test func passesACorrectStoreBuiltOnTheFourSeedMethods() async {
        // Only get/set/delete/keys: the default write, entries and compact must make it conform.
        final class SeedOnlyStore: OfflineStore {
            let inner = MemoryOfflineStore()
            func get(_ key: String) async throws -> String? { try await inner.get(key) }
            func set(_ key: String, _ value: String) async throws { try await inner.set(key, value) }
            func delete(_ key: String) async throws { try await inner.delete(key) }
            func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
        }
        let failures = await OfflineStoreConformance.run(StoreFactory("seed-only") { _ in SeedOnlyStore() })
        #expect(failures.isEmpty, "\(failures)")
    }
}
