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

    /// Says it takes bytes (it forwards the inner store's capabilities) but forwards only the four
    /// string methods: the protocol's defaults then refuse bytes that are not UTF-8.
    final class ForgetfulWrapper: OfflineStore {
        let inner = MemoryOfflineStore()
        var capabilities: StoreCapabilities { inner.capabilities }
        func get(_ key: String) async throws -> String? { try await inner.get(key) }
        func set(_ key: String, _ value: String) async throws { try await inner.set(key, value) }
        func delete(_ key: String) async throws { try await inner.delete(key) }
        func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
        func write(_ batch: [StoreWrite]) async throws { try await inner.write(batch) }
    }

    /// Keeps bytes, but its string read repairs what is not UTF-8 instead of throwing.
    final class RepairingStore: OfflineStore {
        let inner = MemoryOfflineStore()
        var capabilities: StoreCapabilities { inner.capabilities }
        func get(_ key: String) async throws -> String? {
            try await inner.data(key).map { String(decoding: $0, as: UTF8.self) }
        }
        func data(_ key: String) async throws -> Data? { try await inner.data(key) }
        func set(_ key: String, _ value: String) async throws { try await inner.set(key, value) }
        func set(_ key: String, data: Data) async throws { try await inner.set(key, data: data) }
        func delete(_ key: String) async throws { try await inner.delete(key) }
        func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
        func write(_ batch: [StoreWrite]) async throws { try await inner.write(batch) }
        func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
            try await inner.dataEntries(prefix, after: after, limit: limit)
        }
    }

    /// A batch that forgets its byte writes, as an exhaustive `if case .set` would.
    final class DroppingByteWritesStore: OfflineStore {
        let inner = MemoryOfflineStore()
        var capabilities: StoreCapabilities { inner.capabilities }
        func get(_ key: String) async throws -> String? { try await inner.get(key) }
        func data(_ key: String) async throws -> Data? { try await inner.data(key) }
        func set(_ key: String, _ value: String) async throws { try await inner.set(key, value) }
        func set(_ key: String, data: Data) async throws { try await inner.set(key, data: data) }
        func delete(_ key: String) async throws { try await inner.delete(key) }
        func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
        func write(_ batch: [StoreWrite]) async throws {
            try await inner.write(batch.filter { if case .setData = $0 { false } else { true } })
        }
    }

    static let shared = MemoryOfflineStore()

    @Test func catchesAWrapperThatForgetsTheByteMethods() async {
        let failures = await OfflineStoreConformance.run(StoreFactory("forgetful") { _ in ForgetfulWrapper() })
        let failed = Set(failures.map(\.check))
        #expect(failed.isSuperset(of: ["bytesKeepEveryByte", "stringReadsOfBytesThrowNotUTF8"]))
    }

    @Test func catchesAStringReadThatRepairsBytes() async {
        let failures = await OfflineStoreConformance.run(StoreFactory("repairing") { _ in RepairingStore() })
        #expect(failures.map(\.check) == ["stringReadsOfBytesThrowNotUTF8"])
    }

    @Test func catchesABatchThatDropsByteWrites() async {
        let failures = await OfflineStoreConformance.run(StoreFactory("dropping") { _ in DroppingByteWritesStore() })
        #expect(Set(failures.map(\.check)).contains("batchesMixStringsAndBytes"))
    }

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
