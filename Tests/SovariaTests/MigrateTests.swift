import Foundation
import Sovaria
import SovariaTestKit
import Synchronization
import Testing

@Suite struct MigrateTests {
    /// Records how it is called, to show that migrate pages instead of loading everything.
    final class RecordingStore: OfflineStore {
        let inner = MemoryOfflineStore()
        let largestBatch = Mutex(0)
        let largestPage = Mutex(0)
        let keysCalls = Mutex(0)

        func get(_ key: String) async throws -> String? { try await inner.get(key) }
        func set(_ key: String, _ value: String) async throws { try await inner.set(key, value) }
        func delete(_ key: String) async throws { try await inner.delete(key) }
        func keys(_ prefix: String) async throws -> [String] {
            keysCalls.withLock { $0 += 1 }
            return try await inner.keys(prefix)
        }
        func write(_ batch: [StoreWrite]) async throws {
            largestBatch.withLock { $0 = max($0, batch.count) }
            try await inner.write(batch)
        }
        func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
            let page = try await inner.entries(prefix, after: after, limit: limit)
            largestPage.withLock { $0 = max($0, page.count) }
            return page
        }
        var capabilities: StoreCapabilities { inner.capabilities }
    }

    @Test func copiesOnlyEngineKeysUnderThePrefix() async throws {
        let source = MemoryOfflineStore()
        try await source.write([
            .set(key: "sov:queue:1", value: "q1"), .set(key: "sov:queue:2", value: "q2"),
            .set(key: "sov:cache:a", value: "c"), .set(key: "app:other", value: "x"), .set(key: "sov", value: "y"),
        ])
        let target = MemoryOfflineStore()
        #expect(try await SovariaOffline.migrate(from: source, to: target, prefix: "queue:") == 2)
        #expect(try await target.keys("") == ["sov:queue:1", "sov:queue:2"])
        #expect(try await SovariaOffline.migrate(from: source, to: target) == 1)
        #expect(try await target.keys("") == ["sov:cache:a", "sov:queue:1", "sov:queue:2"])
        #expect(try await target.get("app:other") == nil)
    }

    @Test func keepsEveryKeyTheTargetAlreadyHas() async throws {
        let source = MemoryOfflineStore()
        try await source.write((0..<10).map { .set(key: "sov:k\($0)", value: "from source") })
        let target = MemoryOfflineStore()
        try await target.set("sov:k3", "target's own")
        try await target.set("sov:k7", "")
        #expect(try await SovariaOffline.migrate(from: source, to: target, batchSize: 3) == 8)
        #expect(try await target.get("sov:k3") == "target's own")
        #expect(try await target.get("sov:k7") == "")
        #expect(try await target.get("sov:k9") == "from source")
        #expect(try await SovariaOffline.migrate(from: source, to: target, batchSize: 3) == 0)
    }

    @Test func pagesInBoundedBatchesWithoutListingEverything() async throws {
        let source = RecordingStore()
        let count = 20_000
        try await source.inner.write((0..<count).map { .set(key: "sov:cache:\($0)", value: "v\($0)") })
        let target = RecordingStore()
        #expect(try await SovariaOffline.migrate(from: source, to: target, batchSize: 500) == count)
        #expect(source.largestPage.withLock { $0 } == 500)
        #expect(target.largestBatch.withLock { $0 } == 500)
        #expect(source.keysCalls.withLock { $0 } == 0)
        #expect(try await target.inner.keys("sov:").count == count)
        #expect(try await target.inner.get("sov:cache:12345") == "v12345")
    }

    @Test func movesDataFromMemoryToFiles() async throws {
        let folder = try TemporaryFolder()
        let source = MemoryOfflineStore()
        try await source.write([.set(key: "sov:queue:0001", value: "{}"), .set(key: "sov:e\u{301}", value: "é")])
        let target = FileOfflineStore(directory: folder.child("files"))
        #expect(try await SovariaOffline.migrate(from: source, to: target) == 2)
        let reopened = FileOfflineStore(directory: folder.child("files"))
        #expect(
            try await reopened.keys("sov:").map { Array($0.utf8) } == [
                Array("sov:e\u{301}".utf8), Array("sov:queue:0001".utf8),
            ])
    }
}
