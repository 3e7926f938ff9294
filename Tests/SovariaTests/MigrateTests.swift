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
        let getCalls = Mutex(0)
        let entriesCalls = Mutex(0)

        func get(_ key: String) async throws -> String? {
            getCalls.withLock { $0 += 1 }
            return try await inner.get(key)
        }
        func data(_ key: String) async throws -> Data? {
            getCalls.withLock { $0 += 1 }
            return try await inner.data(key)
        }
        func set(_ key: String, _ value: String) async throws { try await inner.set(key, value) }
        func set(_ key: String, data: Data) async throws { try await inner.set(key, data: data) }
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
            entriesCalls.withLock { $0 += 1 }
            let page = try await inner.entries(prefix, after: after, limit: limit)
            largestPage.withLock { $0 = max($0, page.count) }
            return page
        }
        func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
            entriesCalls.withLock { $0 += 1 }
            let page = try await inner.dataEntries(prefix, after: after, limit: limit)
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
        #expect(try await OfflineMigration.migrate(from: source, to: target, prefix: "queue:") == 2)
        #expect(try await target.keys("") == ["sov:queue:1", "sov:queue:2"])
        #expect(try await OfflineMigration.migrate(from: source, to: target) == 1)
        #expect(try await target.keys("") == ["sov:cache:a", "sov:queue:1", "sov:queue:2"])
        #expect(try await target.get("app:other") == nil)
    }

    @Test func keepsEveryKeyTheTargetAlreadyHas() async throws {
        let source = MemoryOfflineStore()
        try await source.write((0..<10).map { .set(key: "sov:k\($0)", value: "from source") })
        let target = MemoryOfflineStore()
        try await target.set("sov:k3", "target's own")
        try await target.set("sov:k7", "")
        #expect(try await OfflineMigration.migrate(from: source, to: target, batchSize: 3) == 8)
        #expect(try await target.get("sov:k3") == "target's own")
        #expect(try await target.get("sov:k7") == "")
        #expect(try await target.get("sov:k9") == "from source")
        #expect(try await OfflineMigration.migrate(from: source, to: target, batchSize: 3) == 0)
    }

    @Test func pagesInBoundedBatchesWithoutListingEverything() async throws {
        let source = RecordingStore()
        let count = 20_000
        try await source.inner.write((0..<count).map { .set(key: "sov:cache:\($0)", value: "v\($0)") })
        let target = RecordingStore()
        #expect(try await OfflineMigration.migrate(from: source, to: target, batchSize: 500) == count)
        #expect(source.largestPage.withLock { $0 } == 500)
        #expect(target.largestBatch.withLock { $0 } == 500)
        #expect(source.keysCalls.withLock { $0 } == 0)
        #expect(source.getCalls.withLock { $0 } == 0)
        // Which keys target has is read in pages, not one get per entry: an empty target in one read.
        #expect(target.getCalls.withLock { $0 } == 0)
        #expect(target.entriesCalls.withLock { $0 } == 1)
        #expect(try await target.inner.keys("sov:").count == count)
        #expect(try await target.inner.get("sov:cache:12345") == "v12345")
    }

    @Test func movesDataFromMemoryToFiles() async throws {
        let folder = try TemporaryFolder()
        let source = MemoryOfflineStore()
        try await source.write([.set(key: "sov:queue:0001", value: "{}"), .set(key: "sov:e\u{301}", value: "é")])
        let target = FileOfflineStore(directory: folder.child("files"))
        #expect(try await OfflineMigration.migrate(from: source, to: target) == 2)
        let reopened = FileOfflineStore(directory: folder.child("files"))
        #expect(
            try await reopened.keys("sov:").map { Array($0.utf8) } == [
                Array("sov:e\u{301}".utf8), Array("sov:queue:0001".utf8),
            ])
    }

    @Test func keepsTargetKeysWhenTheTargetIsDenserThanAPage() async throws {
        let source = MemoryOfflineStore()
        let sourceIndices = Array(stride(from: 0, to: 100, by: 3))
        try await source.write(sourceIndices.map { .set(key: Self.key($0), value: "from source") })
        let target = RecordingStore()
        let targetOwn = [0, 45, 99]
        try await target.inner.write(
            (0..<100).filter { $0 % 3 != 0 || targetOwn.contains($0) }.map { .set(key: Self.key($0), value: "own") })
        let copied = try await OfflineMigration.migrate(from: source, to: target, batchSize: 4)
        #expect(copied == sourceIndices.count - targetOwn.count)
        #expect(target.getCalls.withLock { $0 } == 0)
        // Each of target's 69 keys read once, in pages of 4, plus the last (short) page.
        #expect(target.entriesCalls.withLock { $0 } == 69 / 4 + 1)
        for index in 0..<100 {
            let expected = index % 3 != 0 || targetOwn.contains(index) ? "own" : "from source"
            #expect(try await target.inner.get(Self.key(index)) == expected, "\(index)")
        }
    }

    @Test func treatsCanonicallyEqualKeysAsTwoKeys() async throws {
        let source = MemoryOfflineStore()
        try await source.set("sov:\u{E9}", "precomposed")
        let target = MemoryOfflineStore()
        try await target.set("sov:e\u{301}", "decomposed")
        #expect(try await OfflineMigration.migrate(from: source, to: target) == 1)
        #expect(try await target.keys("sov:").count == 2)
        #expect(try await target.get("sov:\u{E9}") == "precomposed")
        #expect(try await target.get("sov:e\u{301}") == "decomposed")
    }

    // MARK: - Byte values

    /// Binary values a string read refuses: a lone `FF`, `C3` alone, overlong `C0 80`, a surrogate.
    static let binaryValues = [Data([0xFF]), Data([0xC3]), Data([0xC0, 0x80]), Data([0xED, 0xA0, 0x80])]

    @Test func copiesBinaryAndStringValuesByteForByte() async throws {
        let source = MemoryOfflineStore()
        try await source.write(
            Self.binaryValues.enumerated().map { .setData(key: "sov:b:\($0.offset)", data: $0.element) } + [
                .set(key: "sov:s:0", value: "\u{E9}"), .set(key: "sov:s:1", value: "e\u{301}"),
                .set(key: "sov:s:2", value: ""), .setData(key: "sov:s:3", data: Data()),
            ])
        let target = MemoryOfflineStore()
        #expect(try await OfflineMigration.migrate(from: source, to: target, batchSize: 3) == 8)
        for (index, data) in Self.binaryValues.enumerated() {
            #expect(try await target.data("sov:b:\(index)") == data, "sov:b:\(index)")
        }
        #expect(try await target.data("sov:s:0") == Data("\u{E9}".utf8))
        #expect(try await target.data("sov:s:1") == Data("e\u{301}".utf8))
        #expect(try await target.data("sov:s:2") == Data())
        #expect(try await target.data("sov:s:3") == Data())
    }

    /// Which keys target has is learned from byte pages: a target value that is not UTF-8 is kept,
    /// not a reason to stop.
    @Test func aBinaryTargetValueIsKeptAndDoesNotStopMigrate() async throws {
        let source = MemoryOfflineStore()
        try await source.write((0..<6).map { .set(key: Self.key($0), value: "from source") })
        let target = MemoryOfflineStore()
        try await target.set(Self.key(2), data: Data([0xFF]))
        #expect(try await OfflineMigration.migrate(from: source, to: target, batchSize: 2) == 5)
        #expect(try await target.data(Self.key(2)) == Data([0xFF]))
        #expect(try await target.get(Self.key(3)) == "from source")
    }

    /// `.skip` copies binary values: a value that is not UTF-8 is no damaged entry.
    @Test func skippingDoesNotTreatBinaryValuesAsDamage() async throws {
        let source = MemoryOfflineStore()
        try await source.write(
            Self.binaryValues.enumerated().map { .setData(key: Self.key($0.offset), data: $0.element) })
        let target = MemoryOfflineStore()
        let report = try await OfflineMigration.migrate(from: source, to: target, batchSize: 3, onDamagedEntry: .skip)
        #expect(report.skipped.isEmpty)
        #expect(report.copied == Self.binaryValues.count)
        for (index, data) in Self.binaryValues.enumerated() {
            #expect(try await target.data(Self.key(index)) == data)
        }
    }

    // MARK: - Damaged source entries

    static func key(_ index: Int) -> String { "sov:e:" + String(1_000 + index).dropFirst() }

    /// 50 entries through a checksummed store, with the raw stored values of `damaged` changed
    /// (one ASCII letter of the value replaced by another).
    static func checksummedSource(damaged: [Int]) async throws -> (ChecksummedOfflineStore, MemoryOfflineStore) {
        let inner = MemoryOfflineStore()
        let source = ChecksummedOfflineStore(wrapping: inner)
        try await source.write((0..<50).map { .set(key: key($0), value: "value \($0)") })
        for index in damaged {
            let raw = try #require(try await inner.get(key(index)))
            try #require(raw.hasSuffix("value \(index)"))
            try await inner.set(key(index), String(raw.dropLast("value \(index)".count)) + "valve \(index)")
        }
        return (source, inner)
    }

    @Test func skipsAndReportsDamagedEntriesWhenAsked() async throws {
        let damaged = [0, 17, 20, 49]  // the first key, one in a page, two at the ends of pages
        let (source, _) = try await Self.checksummedSource(damaged: damaged)
        let target = RecordingStore()
        try await target.set(Self.key(30), "target's own")
        let report = try await OfflineMigration.migrate(from: source, to: target, batchSize: 7, onDamagedEntry: .skip)
        #expect(report.skipped.map(\.key) == damaged.map(Self.key))
        #expect(report.skipped.allSatisfy { $0.error.code == .corrupt && $0.error.engine == "checksum" })
        #expect(report.skipped.map { $0.error.key } == damaged.map(Self.key))
        #expect(report.copied == 50 - damaged.count - 1)
        let expectedKeys = (0..<50).filter { !damaged.contains($0) }.map(Self.key)
        #expect(try await target.inner.keys("") == expectedKeys)
        for index in 0..<50 where !damaged.contains(index) {
            #expect(try await target.inner.get(Self.key(index)) == (index == 30 ? "target's own" : "value \(index)"))
        }
        #expect(target.largestBatch.withLock { $0 } <= 7)

        // Again: nothing left to copy, the same damage reported.
        let again = try await OfflineMigration.migrate(from: source, to: target, batchSize: 7, onDamagedEntry: .skip)
        #expect(again.copied == 0)
        #expect(again.skipped.map(\.key) == damaged.map(Self.key))
    }

    @Test func skippingCopiesEverythingWhenNothingIsDamaged() async throws {
        let (source, _) = try await Self.checksummedSource(damaged: [])
        let target = MemoryOfflineStore()
        let report = try await OfflineMigration.migrate(from: source, to: target, batchSize: 7, onDamagedEntry: .skip)
        #expect(report.copied == 50)
        #expect(report.skipped.isEmpty)
    }

    @Test func stopsAtTheFirstDamagedEntryByDefault() async throws {
        let (source, _) = try await Self.checksummedSource(damaged: [17])
        for policy in [nil, OfflineMigration.DamagedEntryPolicy.stop] {
            let target = MemoryOfflineStore()
            do {
                if let policy {
                    _ = try await OfflineMigration.migrate(
                        from: source, to: target, batchSize: 7, onDamagedEntry: policy)
                } else {
                    _ = try await OfflineMigration.migrate(from: source, to: target, batchSize: 7)
                }
                Issue.record("migrate copied a damaged entry without throwing (\(String(describing: policy)))")
            } catch let error as OfflineStoreError {
                #expect(error.code == .corrupt)
                #expect(error.key == Self.key(17))
            }
            // The two pages before the damaged one were copied, nothing after it.
            #expect(try await target.keys("") == (0..<14).map(Self.key))
        }
    }

    @Test func aDamagedTargetValueStopsOnlyWhenTheSourceHasItsKey() async throws {
        let source = MemoryOfflineStore()
        try await source.write((0..<20).filter { $0 != 7 }.map { .set(key: Self.key($0), value: "from source") })
        for (damagedKey, sourceHasIt) in [(7, false), (3, true)] {
            let inner = MemoryOfflineStore()
            let target = ChecksummedOfflineStore(wrapping: inner)
            try await target.set(Self.key(damagedKey), "target's own")
            try await inner.set(Self.key(damagedKey), "damaged")
            do {
                let report = try await OfflineMigration.migrate(
                    from: source, to: target, batchSize: 4, onDamagedEntry: .skip)
                #expect(!sourceHasIt, "a damaged target value under a copied key must stop migrate")
                #expect(report.copied == 19)
                #expect(report.skipped.isEmpty)
            } catch let error as OfflineStoreError {
                #expect(sourceHasIt, "\(error)")
                #expect(error.code == .corrupt && error.key == Self.key(damagedKey))
            }
            #expect(try await inner.get(Self.key(damagedKey)) == "damaged")  // never overwritten
        }
    }

    /// Serves one key's `get` with `getError`, and every page of entries with `entriesError`.
    final class FailingStore: OfflineStore {
        let inner = MemoryOfflineStore()
        let failingKey: String
        let entriesError: OfflineStoreError.Code
        let getError: OfflineStoreError.Code

        init(failingKey: String, entriesError: OfflineStoreError.Code, getError: OfflineStoreError.Code) {
            self.failingKey = failingKey
            self.entriesError = entriesError
            self.getError = getError
        }

        func get(_ key: String) async throws -> String? {
            if key == failingKey { throw OfflineStoreError(getError, "failing on purpose", key: key) }
            return try await inner.get(key)
        }
        func data(_ key: String) async throws -> Data? {
            if key == failingKey { throw OfflineStoreError(getError, "failing on purpose", key: key) }
            return try await inner.data(key)
        }
        func set(_ key: String, _ value: String) async throws { try await inner.set(key, value) }
        func delete(_ key: String) async throws { try await inner.delete(key) }
        func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
        func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
            throw OfflineStoreError(entriesError, "failing on purpose")
        }
        func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] {
            throw OfflineStoreError(entriesError, "failing on purpose")
        }
    }

    @Test func skippingStillThrowsEveryOtherError() async throws {
        let cases: [(OfflineStoreError.Code, OfflineStoreError.Code, OfflineStoreError.Code)] = [
            (.io, .io, .io),  // a page that fails for another reason
            (.corrupt, .io, .io),  // a damaged page whose key then fails for another reason
            (.decryptionFailed, .decryptionFailed, .decryptionFailed),  // both damage codes are skipped
        ]
        for (entriesError, getError, expected) in cases {
            let source = FailingStore(failingKey: Self.key(2), entriesError: entriesError, getError: getError)
            try await source.inner.write((0..<5).map { .set(key: Self.key($0), value: "v") })
            let target = MemoryOfflineStore()
            do {
                let report = try await OfflineMigration.migrate(from: source, to: target, onDamagedEntry: .skip)
                #expect(expected == .decryptionFailed, "\(entriesError)/\(getError): did not throw")
                #expect(report.skipped.map(\.key) == [Self.key(2)])
                #expect(report.copied == 4)
            } catch let error as OfflineStoreError {
                #expect(error.code == expected, "\(entriesError)/\(getError): \(error)")
                #expect(expected != .decryptionFailed, "\(error)")
            }
        }
    }
}
