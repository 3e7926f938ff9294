import Foundation
import Sovaria
import SovariaCache
import SovariaFiles
import SovariaQueue
import SovariaSodium
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import sovaria_crash_writer

/// A full disk under the parts above the engines (the write queue, the query cache, the file
/// cache) and under the encryption wrapper, on every persistent engine: the call that finds the
/// disk full throws ``OfflineStoreError/Code/full`` with advice and leaves nothing of itself;
/// everything acknowledged before is there after a reopen; once space is freed, writes work
/// again without repair (LevelDB after a reopen, as ``OfflineStoreError/Code/reopenRequired``
/// asks).
@Suite struct FullDiskStackTests {
    static let engines = TestEngine.onDisk + ["encrypted(file)", "encrypted(lmdb)"]

    /// A full disk while enqueueing never loses a queued write, and a failed enqueue is not half
    /// written: the queue holds exactly the acknowledged writes, in order, before and after a reopen.
    @Test(arguments: engines)
    func aFullDiskNeverLosesAQueuedWrite(engine: String) async throws {
        let disk = try SmallDisk(sizeBytes: 2 << 20)
        let stores = FaultStores(engine, at: disk.child("store"))
        var acknowledged: [Int] = []
        do {
            let queue = try await WriteQueue(store: try await stores.open(), maxQueued: .max)
            var failure: OfflineStoreError?
            for index in 0..<2_000 {
                do {
                    try await queue.enqueue(Self.request(index))
                    acknowledged.append(index)
                } catch let error as OfflineStoreError {
                    failure = error
                    break
                }
            }
            try Self.expectFull(failure, engine)
            #expect(queue.count == acknowledged.count, "the failed enqueue is not counted")
            #expect(try await queue.pending().map(Self.number) == acknowledged, "the failed enqueue left nothing")
            try disk.resize(toBytes: 16 << 20)
            if try await Self.writesAfterSpaceIsFreed(engine, { try await queue.enqueue(Self.request(-1)) }) {
                acknowledged.append(-1)
            }
        }
        let queue = try await WriteQueue(store: try await stores.open(), maxQueued: .max)
        #expect(try await queue.pending().map(Self.number) == acknowledged, "after reopen")
        try await queue.enqueue(Self.request(-2))
        #expect(queue.count == acknowledged.count + 1)
    }

    /// The query cache: a put that finds the disk full caches nothing; every acknowledged put is
    /// cached after a reopen; puts work once there is space.
    @Test(arguments: engines)
    func aFullDiskKeepsEveryCachedListAndCachesNoHalfList(engine: String) async throws {
        let disk = try SmallDisk(sizeBytes: 2 << 20)
        let stores = FaultStores(engine, at: disk.child("store"))
        let serverTime = Date(timeIntervalSince1970: 1_800_000_000)
        var acknowledged: [String: String] = [:]
        var failedQuery: String?
        do {
            let cache = try await QueryCache(store: try await stores.open(), size: .unlimited)
            var failure: OfflineStoreError?
            for index in 0..<2_000 {
                let query = "/rest/v1/notes?page=\(index)"
                let body = letters(4_000, seed: index)
                do {
                    try await cache.put(query, body: body, serverTime: serverTime)
                    acknowledged[query] = body
                } catch let error as OfflineStoreError {
                    (failure, failedQuery) = (error, query)
                    break
                }
            }
            try Self.expectFull(failure, engine)
            #expect(try await cache.responseCount == acknowledged.count)
            #expect(try await cache.cachedResponse(for: try #require(failedQuery)) == nil)
            try disk.resize(toBytes: 16 << 20)
            if try await Self.writesAfterSpaceIsFreed(
                engine, { try await cache.put("/after", body: "space", serverTime: serverTime) })
            {
                acknowledged["/after"] = "space"
            }
        }
        let cache = try await QueryCache(store: try await stores.open(), size: .unlimited)
        #expect(try await cache.responseCount == acknowledged.count, "after reopen")
        for (query, body) in acknowledged {
            #expect(try await cache.cachedResponse(for: query)?.body == body, "\(query) after reopen")
        }
        try await cache.put("/after/reopen", body: "works", serverTime: serverTime)
    }

    /// The file cache, with its files and its metadata on the full disk: a download that does not
    /// fit leaves no file and no metadata; every acknowledged file is whole after a reopen.
    @Test(arguments: engines)
    func aFullDiskKeepsEveryCachedFileAndLeavesNoHalfFile(engine: String) async throws {
        let disk = try SmallDisk(sizeBytes: 2 << 20)
        let stores = FaultStores(engine, at: disk.child("meta"))
        let directory = disk.child("files")
        var acknowledged: [String: Data] = [:]
        do {
            let cache = try await FileCache(directory: directory, metadata: try await stores.open(), size: .unlimited)
            var failure: OfflineStoreError?
            for index in 0..<200 {
                let key = "https://example.com/\(index).jpg"
                let body = Data(letters(48 * 1_024, seed: index).utf8)
                do {
                    try await cache.store(key, data: body)
                    acknowledged[key] = body
                } catch let error as OfflineStoreError {
                    failure = error
                    #expect(!cache.contains(key), "a download that failed is cached")
                    break
                }
            }
            try Self.expectFull(failure, engine)
            #expect(cache.fileCount == acknowledged.count)
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path + "/tmp").isEmpty)
            await cache.waitForPendingWork()
        }
        try disk.resize(toBytes: 16 << 20)
        let cache = try await FileCache(directory: directory, metadata: try await stores.open(), size: .unlimited)
        #expect(cache.fileCount == acknowledged.count, "after reopen")
        for (key, body) in acknowledged {
            let lease = try #require(try await cache.open(key), "\(key) after reopen")
            #expect(try lease.fileHandle.readToEnd() == body, "\(key) is whole")
            lease.end()
        }
        try await cache.store("https://example.com/after.jpg", data: Data("space".utf8))
        await cache.waitForPendingWork()
    }

    /// Caching a copy of a file (``FileCache/store(_:contentsOf:)``) that does not fit is a typed
    /// `.full`, as a download is, and leaves nothing; a source that does not exist is `.notFound`.
    /// (The copy was Foundation's `copyItem`, whose `CocoaError` no caller could match.)
    @Test func aCopyThatDoesNotFitIsFullAndLeavesNothing() async throws {
        let disk = try SmallDisk(sizeBytes: 1 << 20)
        let outside = try TemporaryFolder()
        let source = outside.child("photo.jpg")
        try Data(String(repeating: "x", count: 2 << 20).utf8).write(to: source)
        let cache = try await FileCache(
            directory: disk.child("files"), metadata: try await FaultStores("sqlite", at: disk.child("meta")).open(),
            size: .unlimited)
        let full = await #expect(throws: OfflineStoreError.self) { try await cache.store("photo", contentsOf: source) }
        #expect(full?.code == .full, "\(String(describing: full))")
        #expect(full?.message.contains("free") == true, "\(String(describing: full))")
        #expect(!cache.contains("photo"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: disk.child("files/tmp").path).isEmpty)
        let missing = await #expect(throws: OfflineStoreError.self) {
            try await cache.store("none", contentsOf: outside.child("missing.jpg"))
        }
        #expect(missing?.code == .notFound, "\(String(describing: missing))")
        let small = outside.child("small.jpg")
        try Data("small".utf8).write(to: small)
        #expect(try await cache.store("small", contentsOf: small) == 5, "a copy that fits")
        await cache.waitForPendingWork()
    }

    /// Queued write `number`: a 4 KB body that says its number.
    static func request(_ number: Int) -> DataRequest {
        DataRequest(method: "POST", path: "/rest/v1/notes?n=\(number)", body: letters(4_000, seed: number))
    }

    /// The number a queued write's path carries.
    static func number(_ write: QueuedWrite) -> Int { Int(write.request.path.split(separator: "=").last ?? "") ?? 0 }

    /// The first failure is `.full` and its message says to free space.
    static func expectFull(_ failure: OfflineStoreError?, _ engine: String) throws {
        let failure = try #require(failure, "\(engine): the disk never filled")
        #expect(failure.code == .full, "\(engine): \(failure)")
        #expect(failure.message.contains("free"), "\(engine): the message says what to do: \(failure)")
    }

    /// Runs `write` once space is freed: it works, or on LevelDB throws `.reopenRequired` (its log
    /// may hold a torn record, so it refuses writes until the reopen that follows). Returns
    /// whether the write was made.
    static func writesAfterSpaceIsFreed(_ engine: String, _ write: () async throws -> Void) async throws -> Bool {
        guard engine.contains("leveldb") else {
            try await write()
            return true
        }
        let error = await #expect(throws: OfflineStoreError.self) { try await write() }
        #expect(error?.code == .reopenRequired, "\(String(describing: error))")
        return false
    }
}

/// Opens the store a fault test names: an engine of the crash writer, or `encrypted(ENGINE)`,
/// the encryption wrapper around one with a key kept for reopening.
struct FaultStores: Sendable {
    let engine: String
    let folder: URL
    private let key: EncryptionKey?

    /// Stores of `engine` on `folder`; an encrypted one gets a new random key, kept for reopening.
    init(_ engine: String, at folder: URL) {
        self.engine = engine
        self.folder = folder
        key = engine.hasPrefix("encrypted(") ? try? EncryptionKey.random() : nil
    }

    /// A new store on ``folder``; the previous one must be released first.
    func open() async throws -> any OfflineStore {
        guard let key else { return try await CrashStores.open(engine, at: folder, durability: .synced) }
        let inner = String(engine.dropFirst("encrypted(".count).dropLast())
        return EncryptedOfflineStore(
            wrapping: try await CrashStores.open(inner, at: folder, durability: .synced), key: key)
    }
}
