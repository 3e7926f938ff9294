import Foundation
import Sovaria
import SovariaSodium
import SovariaTestKit
import Testing

@testable import SovariaFiles

/// Rules 5, 6 and 7 of issue 13: atomic downloads, temporary files a crash left, the folder and
/// the metadata reconciled at open, and what opening reads.
@Suite struct FileCacheRecoveryTests {
    struct DownloadFailed: Error {}

    @Test(arguments: MetadataEngine.all)
    func aFailedDownloadLeavesNothingAndKeepsTheOldFile(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let store = try await bench.metadata()
        let cache = try await bench.open(.unlimited, store: store)
        try await put(cache, "photo", 1_000, tag: 1)
        await #expect(throws: DownloadFailed.self) {
            try await cache.download("photo") { url in
                try body(2, 500).write(to: url)
                // Mid-download the key still shows the whole old file.
                let lease = try #require(try await cache.open("photo"))
                #expect(try lease.fileHandle.readToEnd() == body(1, 1_000))
                throw DownloadFailed()
            }
        }
        await #expect(throws: OfflineStoreError.self) {
            try await cache.download("photo") { _ in }  // wrote nothing
        }
        #expect(try bench.temporaryFiles().isEmpty, "the half download is gone")
        #expect(cache.totalBytes == 1_000)
        #expect(try bench.filesOnDisk() == [fileID("photo"): 1_000])
        #expect(try await bench.metadataKeys(store).map(\.sizeBytes) == [1_000])

        let size = try await cache.download("photo") { url in
            #expect(FileManager.default.createFile(atPath: url.path, contents: nil), "a URL in tmp/, free")
            let handle = try #require(FileHandle(forWritingAtPath: url.path))
            for part in 0..<4 { try handle.write(contentsOf: body(3, 4_096).prefix(1_024 * (part + 1)).suffix(1_024)) }
            try handle.close()
        }
        #expect(size == 4_096)
        let lease = try #require(try await cache.open("photo"))
        #expect(try lease.fileHandle.readToEnd() == body(3, 4_096))
        #expect(try await bench.metadataKeys(store).map(\.sizeBytes) == [4_096], "one key, the new size")
        #expect(cache.totalBytes == 4_096)
    }

    @Test(arguments: MetadataEngine.all)
    func storeCopiesAFileAndADownloadMayMoveOneIntoPlace(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let cache = try await bench.open(.unlimited)
        let source = bench.folder.child("picked.jpg")
        try body(5, 12_345).write(to: source)
        #expect(try await cache.store("picked", contentsOf: source) == 12_345)
        #expect(FileManager.default.fileExists(atPath: source.path), "the source is left as it is")
        // What a URLSession download does: a finished file elsewhere, moved to the URL given.
        #expect(
            try await cache.download("moved") { destination in
                try FileManager.default.moveItem(at: source, to: destination)
            } == 12_345)
        for key in ["picked", "moved"] {
            let lease = try #require(try await cache.open(key))
            #expect(try lease.fileHandle.readToEnd() == body(5, 12_345))
        }
        #expect(cache.totalBytes == 24_690)
        #expect(try bench.temporaryFiles().isEmpty)
    }

    @Test(arguments: MetadataEngine.all)
    func temporaryFilesACrashLeftCountUntilADayOldThenGo(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        do { _ = try await bench.open(.bytes(5_000)) }  // creates the folders
        let tmp = bench.directory.appendingPathComponent("tmp")
        for (name, ageHours, size) in [("old", 25.0, 7_000), ("recent", 1.0, 3_000)] {
            let path = tmp.appendingPathComponent(fileID(name) + "-1234").path
            #expect(FileManager.default.createFile(atPath: path, contents: body(0, size)))
            try FileManager.default.setAttributes(
                [.modificationDate: bench.clock.date.addingTimeInterval(-ageHours * 3_600)], ofItemAtPath: path)
        }
        let cache = try await bench.open(.bytes(5_000))
        #expect(try bench.temporaryFiles() == [fileID("recent") + "-1234"], "more than a day old: deleted at open")
        #expect(cache.totalBytes == 3_000, "the recent one counts")
        #expect(cache.statistics.leftoverTemporaryBytes == 3_000)

        bench.clock.advance(by: 86_400)
        try await put(cache, "photo", 2_500)  // 5,500: over the bound
        await cache.waitForPendingWork()
        #expect(try bench.temporaryFiles().isEmpty, "a day old now: deleted by the pass")
        #expect(cache.totalBytes == 2_500)
        #expect(cache.contains("photo"), "the leftover's bytes were enough")
        #expect(cache.statistics.evictions == 0)
    }

    @Test(arguments: MetadataEngine.all)
    func openAdoptsFilesWithoutMetadataAndDropsMetadataWithoutFiles(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        do {
            let cache = try await bench.open(.unlimited)
            try await put(cache, "kept", 100, tag: 1)
            try await put(cache, "file lost", 200, tag: 2)
            try await put(cache, "metadata lost", 300, tag: 3)
        }
        let store = try await bench.metadata()
        let files = bench.directory.appendingPathComponent("files")
        try FileManager.default.removeItem(at: files.appendingPathComponent(fileID("file lost")))
        let lostKey = try #require(try await store.keys("sov:file:" + fileID("metadata lost")).first)
        try await store.delete(lostKey)
        #expect(
            FileManager.default.createFile(
                atPath: files.appendingPathComponent("stray.txt").path, contents: Data([1, 2])))
        try await store.set("sov:file:not-a-file-key", "x")

        bench.clock.advance(by: 100)
        let cache = try await bench.open(.unlimited, store: store)
        #expect(cache.totalBytes == 400, "kept + adopted")
        #expect(cache.contains("kept") && cache.contains("metadata lost") && !cache.contains("file lost"))
        #expect(try bench.filesOnDisk() == [fileID("kept"): 100, fileID("metadata lost"): 300], "the stray is gone")
        let keys = try await bench.metadataKeys(store).sorted { $0.id < $1.id }
        let expected = [(fileID("kept"), 100), (fileID("metadata lost"), 300)].sorted { $0.0 < $1.0 }
        #expect(keys.map(\.id) == expected.map(\.0))
        #expect(keys.map(\.sizeBytes) == expected.map(\.1))
        let adopted = keys.first { $0.id == fileID("metadata lost") }
        #expect(adopted?.lastUseMillis == 1_800_000_100_000, "adopted: last use is now")
        let lease = try #require(try await cache.open("metadata lost"))
        #expect(try lease.fileHandle.readToEnd() == body(3, 300))
    }

    @Test(arguments: MetadataEngine.all)
    func anEmptyMetadataStoreIsRebuiltFromTheFolderNeverWiped(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        do {
            let cache = try await bench.open(.unlimited)
            for number in 0..<5 { try await put(cache, "photo \(number)", 100 + number, tag: number) }
        }
        // The metadata is lost (a new store in place of a damaged one).
        let fresh = try await engine.open(bench.folder.child("meta-new"))
        let cache = try await bench.open(.bytes(1_000_000), store: fresh)
        #expect(cache.fileCount == 5)
        #expect(cache.totalBytes == 510)
        #expect(try await fresh.keys("sov:file:").count == 5)
        for number in 0..<5 {
            let lease = try #require(try await cache.open("photo \(number)"))
            #expect(try lease.fileHandle.readToEnd() == body(number, 100 + number))
        }
    }

    @Test(arguments: MetadataEngine.all)
    func duplicateKeysOfOneFileKeepTheNewestUse(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        do {
            let cache = try await bench.open(.unlimited)
            try await put(cache, "a", 100)
        }
        let store = try await bench.metadata()
        let id = FileKeys.id(of: "a")
        // What a store without atomic batches can keep after a crash inside a use record.
        try await store.set(FileKeys.metadataKey(id: id, sizeBytes: 100, lastUseMillis: 1_900_000_000_000), "{}")
        let cache = try await bench.open(.unlimited, store: store)
        #expect(cache.totalBytes == 100)
        #expect(try await bench.metadataKeys(store).map(\.lastUseMillis) == [1_900_000_000_000])
    }

    /// Rule 6: values the cache cannot read (here: encrypted with another key) cost nothing, since
    /// the cache reads key names only; the files and their order are kept.
    @Test(arguments: MetadataEngine.all)
    func metadataWhoseValuesCannotBeReadLosesNothing(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        do {
            let sealed = EncryptedOfflineStore(wrapping: try await bench.metadata(), key: try EncryptionKey.random())
            let cache = try await bench.open(.unlimited, store: sealed)
            for number in 0..<3 {
                try await put(cache, "p\(number)", 100, tag: number)
                bench.clock.advance(by: 60)
            }
        }
        let wrongKey = EncryptedOfflineStore(wrapping: try await bench.metadata(), key: try EncryptionKey.random())
        await #expect(throws: OfflineStoreError.self) {
            _ = try await wrongKey.entries("sov:file:", after: nil, limit: 1)
        }
        let cache = try await bench.open(.bytes(250), store: wrongKey)
        #expect(cache.fileCount == 3 && cache.totalBytes == 300)
        try await put(cache, "p3", 100, tag: 3)
        await cache.waitForPendingWork()
        #expect(!cache.contains("p0") && !cache.contains("p1"), "the recorded order, read from the key names")
        #expect(cache.contains("p2") && cache.contains("p3"))
    }

    /// Rule 7: opening lists key names (one `keys` call), never a value.
    @Test(arguments: MetadataEngine.all)
    func openingListsKeyNamesOnly(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        do {
            let cache = try await bench.open(.unlimited)
            for number in 0..<20 { try await put(cache, "p\(number)", 10) }
        }
        let spy = SpyStore(try await bench.metadata())
        let cache = try await bench.open(.unlimited, store: spy)
        #expect(cache.fileCount == 20)
        spy.log.withLock { log in
            #expect(log.keysPrefixes == ["sov:file:"])
            #expect(log.gets.isEmpty && log.entriesPrefixes.isEmpty && log.batches.isEmpty)
        }
    }

    @Test(arguments: MetadataEngine.all)
    func concurrentDownloadsAndReadsKeepTheTotalRight(engine: MetadataEngine) async throws {
        let bench = try CacheBench(engine)
        let store = try await bench.metadata()
        let cache = try await bench.open(.bytes(20_000), store: store)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for number in 0..<40 {
                group.addTask {
                    try await put(cache, "k\(number % 25)", 500 + number * 10, tag: number)
                    _ = try await cache.open("k\((number + 7) % 25)")
                }
            }
            try await group.waitForAll()
        }
        await cache.waitForPendingWork()
        let onDisk = try bench.filesOnDisk()
        #expect(cache.totalBytes == onDisk.values.reduce(0, +))
        #expect(cache.fileCount == onDisk.count)
        let keys = try await bench.metadataKeys(store)
        #expect(Dictionary(keys.map { ($0.id, $0.sizeBytes) }, uniquingKeysWith: { _, _ in -1 }) == onDisk)
        _ = consume cache
        let reopened = try await bench.open(.bytes(20_000), store: store)
        #expect(reopened.totalBytes == onDisk.values.reduce(0, +))
    }

    @Test func aSecondCacheOnOneFolderIsRefused() async throws {
        let bench = try CacheBench(MetadataEngine.all[0])
        let cache = try await bench.open(.unlimited)
        await #expect(throws: OfflineStoreError.self) { _ = try await bench.open(.unlimited) }
        _ = cache
    }
}
