import Foundation
import Sovaria
import Testing

@testable import SovariaFiles

/// A download whose metadata write fails is not cached (issue 47, section 2a): the call throws the
/// store's error, the key keeps what it held (nothing, or the old file with its old bytes), and
/// the next read-through downloads anew; on every metadata engine.
@Suite struct FileCacheFailedCommitTests {
    /// `store(_:data:)` and `download(_:using:)`, each as a way to put bytes under a key.
    enum Commit: String, CaseIterable, Sendable {
        case storeData
        case download

        func run(_ cache: FileCache, _ key: String, _ data: Data) async throws {
            switch self {
            case .storeData: try await cache.store(key, data: data)
            case .download: try await cache.download(key) { url in try data.write(to: url) }
            }
        }
    }

    @Test(arguments: MetadataEngine.all)
    func aStoreWhoseMetadataWriteFailsThrowsAndCachesNothing(engine: MetadataEngine) async throws {
        try await failedCommitOfANewKeyCachesNothing(engine, .storeData)
    }

    @Test(arguments: MetadataEngine.all)
    func aDownloadWhoseMetadataWriteFailsThrowsAndCachesNothing(engine: MetadataEngine) async throws {
        try await failedCommitOfANewKeyCachesNothing(engine, .download)
    }

    @Test(arguments: MetadataEngine.all)
    func aStoreReplacingAFileWhoseMetadataWriteFailsKeepsTheOldFile(engine: MetadataEngine) async throws {
        try await failedReplacementKeepsTheOldFile(engine, .storeData)
    }

    @Test(arguments: MetadataEngine.all)
    func aDownloadReplacingAFileWhoseMetadataWriteFailsKeepsTheOldFile(engine: MetadataEngine) async throws {
        try await failedReplacementKeepsTheOldFile(engine, .download)
    }

    @Test(arguments: MetadataEngine.all)
    func aReadThroughWhoseMetadataWriteFailsFailsEveryWaiterAndTheNextCallDownloadsAnew(
        engine: MetadataEngine
    ) async throws {
        let bench = try CacheBench(engine)
        let store = FailingWritesStore(try await bench.metadata())
        let cache = try await bench.open(.unlimited, store: store)
        store.failNextWrite(ofKeysStartingWith: FileKeys.prefix)
        let downloads = Downloads(body: body(4, 900), limit: 2)
        let outcomes = await withTaskGroup(of: Result<FileLease, any Error>.self) { group in
            for _ in 0..<6 {
                group.addTask {
                    do {
                        return .success(try await cache.open("avatar", orDownload: downloads.write))
                    } catch {
                        return .failure(error)
                    }
                }
            }
            await waitUntil { cache.flights.waiterCount(for: "avatar") == 6 }
            downloads.gate.open()
            return await group.reduce(into: []) { $0.append($1) }
        }
        #expect(downloads.count == 1, "one download for six callers")
        #expect(store.failures == 1)
        #expect(outcomes.count == 6)
        for outcome in outcomes {
            let error = #expect(throws: OfflineStoreError.self) { try outcome.get() }
            #expect(error?.code == .io, "each waiter gets the store's error")
        }
        try await expectNothingCached(bench, cache, store, key: "avatar")
        let lease = try await cache.open("avatar", orDownload: downloads.write)
        #expect(downloads.count == 2, "the next call downloads anew")
        #expect(try lease.fileHandle.readToEnd() == body(4, 900))
        #expect(try await bench.metadataKeys(store).map(\.sizeBytes) == [900])
    }

    // MARK: - The scenarios, for each way to commit

    private func failedCommitOfANewKeyCachesNothing(_ engine: MetadataEngine, _ commit: Commit) async throws {
        let bench = try CacheBench(engine)
        let store = FailingWritesStore(try await bench.metadata())
        let cache = try await bench.open(.unlimited, store: store)
        store.failNextWrite(ofKeysStartingWith: FileKeys.prefix)
        let error = await #expect(throws: OfflineStoreError.self) {
            try await commit.run(cache, "k", body(2, 500))
        }
        #expect(error?.code == .io, "the store's error")
        #expect(store.failures == 1)
        try await expectNothingCached(bench, cache, store, key: "k")
        // The read-through downloads anew, and the download is cached.
        let downloads = Downloads(body: body(3, 700), limit: 1)
        downloads.gate.open()
        let lease = try await cache.open("k", orDownload: downloads.write)
        #expect(downloads.count == 1, "the read-through downloads anew")
        #expect(try lease.fileHandle.readToEnd() == body(3, 700))
        #expect(cache.totalBytes == 700)
        #expect(try await bench.metadataKeys(store).map(\.sizeBytes) == [700])
    }

    private func failedReplacementKeepsTheOldFile(_ engine: MetadataEngine, _ commit: Commit) async throws {
        let bench = try CacheBench(engine)
        let store = FailingWritesStore(try await bench.metadata())
        do {
            let cache = try await bench.open(.unlimited, store: store)
            try await put(cache, "k", 300, tag: 1)
            bench.clock.advance(by: 5)
            // The new file's key (its size is 500) fails; the old key's delete goes through.
            store.failNextWrite(ofKeysStartingWith: metadataKeyPrefix("k", sizeBytes: 500))
            let error = await #expect(throws: OfflineStoreError.self) {
                try await commit.run(cache, "k", body(2, 500))
            }
            #expect(error?.code == .io, "the store's error")
            #expect(store.failures == 1)
            #expect(cache.contains("k"), "the old entry stays")
            #expect(cache.totalBytes == 300)
            #expect(cache.fileCount == 1)
            let lease = try #require(try await cache.open("k"))
            #expect(try lease.fileHandle.readToEnd() == body(1, 300), "the old bytes")
            #expect(lease.sizeBytes == 300)
            lease.end()
            #expect(try bench.filesOnDisk() == [fileID("k"): 300])
            #expect(try bench.temporaryFiles().isEmpty, "neither the download nor the old file's copy is left")
            #expect(try await bench.metadataKeys(store).map(\.sizeBytes) == [300], "the old key is back")
            // The read-through finds the old file: no download.
            let downloads = Downloads(body: body(3, 700), limit: 0)
            downloads.gate.open()
            let again = try await cache.open("k", orDownload: downloads.write)
            #expect(try again.fileHandle.readToEnd() == body(1, 300))
            #expect(downloads.count == 0)
            again.end()
            await cache.waitForPendingWork()
        }
        // What the next open finds agrees.
        let reopened = try await bench.open(.unlimited, store: store)
        #expect(reopened.totalBytes == 300)
        let lease = try #require(try await reopened.open("k"))
        #expect(try lease.fileHandle.readToEnd() == body(1, 300))
        lease.end()
        // A replacement that commits leaves no copy of the old file behind.
        try await commit.run(reopened, "k", body(3, 800))
        #expect(try bench.temporaryFiles().isEmpty, "the old file's second name is gone")
        #expect(try bench.filesOnDisk() == [fileID("k"): 800])
        #expect(reopened.totalBytes == 800)
        #expect(try await bench.metadataKeys(store).map(\.sizeBytes) == [800])
    }

    /// Checks that nothing is cached under `key`, in memory, in the folder and in the store.
    private func expectNothingCached(
        _ bench: CacheBench, _ cache: FileCache, _ store: any OfflineStore, key: String,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws {
        #expect(!cache.contains(key), "not cached", sourceLocation: sourceLocation)
        #expect(try await cache.open(key) == nil, "plain open misses", sourceLocation: sourceLocation)
        #expect(cache.totalBytes == 0, sourceLocation: sourceLocation)
        #expect(cache.fileCount == 0, sourceLocation: sourceLocation)
        #expect(try bench.filesOnDisk().isEmpty, "no file left in files/", sourceLocation: sourceLocation)
        #expect(try bench.temporaryFiles().isEmpty, "no file left in tmp/", sourceLocation: sourceLocation)
        #expect(try await bench.metadataKeys(store).isEmpty, "no key", sourceLocation: sourceLocation)
    }
}
