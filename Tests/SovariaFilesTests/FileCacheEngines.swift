import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaSQLite
import SovariaSodium
import SovariaTestEngines
import SovariaTestKit
import Synchronization

@testable import SovariaFiles

/// The metadata stores every file-cache test runs on (the package's one engine list): encrypted
/// SQLite included.
typealias MetadataEngine = TestEngine

extension TestEngine {
    static let all = standard(sqliteFile: "meta.sqlite", including: .encrypted)
}

/// A clock the test moves by hand, in whole milliseconds (sums of 0.005 s stay exact).
final class TestClock: Sendable {
    private let millis = Mutex<Int64>(1_800_000_000_000)

    var date: Date { Date(timeIntervalSince1970: Double(millis.withLock { $0 }) / 1_000) }
    func advance(by seconds: TimeInterval) { millis.withLock { $0 += Int64((seconds * 1_000).rounded()) } }
    var function: @Sendable () -> Date { { self.date } }
}

/// One test's cache folder and metadata folder, and ways to look at both from outside.
struct CacheBench {
    let folder: TemporaryFolder
    let engine: MetadataEngine
    let clock = TestClock()
    var directory: URL { folder.child("cache") }
    var metadataFolder: URL { folder.child("meta") }

    init(_ engine: MetadataEngine) throws {
        folder = try TemporaryFolder()
        self.engine = engine
    }

    func metadata() async throws -> any OfflineStore { try await engine.open(metadataFolder) }

    func open(_ size: FileCacheSize, store: (any OfflineStore)? = nil) async throws -> FileCache {
        let metadata = if let store { store } else { try await metadata() }
        return try await FileCache(directory: directory, metadata: metadata, size: size, clock: clock.function)
    }

    /// The files in `files/`, by name, with their sizes.
    func filesOnDisk() throws -> [String: Int] {
        var found: [String: Int] = [:]
        let path = directory.appendingPathComponent("files").path
        for name in try FileManager.default.contentsOfDirectory(atPath: path) {
            found[name] =
                (try FileManager.default.attributesOfItem(atPath: path + "/" + name)[.size] as? NSNumber)?
                .intValue
        }
        return found
    }

    /// The names in `tmp/`.
    func temporaryFiles() throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: directory.appendingPathComponent("tmp").path).sorted()
    }

    /// The metadata keys, parsed.
    func metadataKeys(_ store: any OfflineStore) async throws -> [(id: String, sizeBytes: Int, lastUseMillis: Int64)] {
        try await store.keys("sov:file:").map { key in
            guard let parsed = FileKeys.parse(key) else { return ("malformed " + key, -1, -1) }
            return (parsed.id.hex, parsed.sizeBytes, parsed.lastUseMillis)
        }
    }
}

/// `count` bytes that say which file they belong to, so a swapped or torn file shows.
func body(_ tag: Int, _ count: Int) -> Data {
    let pattern = Array("file \(tag);".utf8)
    return Data((0..<count).map { pattern[$0 % pattern.count] })
}

/// The id (file name) of `key`.
func fileID(_ key: String) -> String { FileKeys.id(of: key).hex }

/// Stores `count` bytes under `key`.
@discardableResult
func put(_ cache: FileCache, _ key: String, _ count: Int, tag: Int = 0) async throws -> Int {
    try await cache.store(key, data: body(tag, count))
}

/// Wraps a store and records what the cache asks of it.
final class SpyStore: OfflineStore {
    struct Log {
        var gets: [String] = []
        var entriesPrefixes: [String] = []
        var keysPrefixes: [String] = []
        var batches: [[StoreWrite]] = []
    }

    let inner: any OfflineStore
    let log = Mutex(Log())

    init(_ inner: any OfflineStore) { self.inner = inner }

    var batches: [[StoreWrite]] { log.withLock { $0.batches } }
    func reset() { log.withLock { $0 = Log() } }

    func get(_ key: String) async throws -> String? {
        log.withLock { $0.gets.append(key) }
        return try await inner.get(key)
    }

    func set(_ key: String, _ value: String) async throws { try await write([.set(key: key, value: value)]) }

    func delete(_ key: String) async throws { try await write([.delete(key: key)]) }

    func keys(_ prefix: String) async throws -> [String] {
        log.withLock { $0.keysPrefixes.append(prefix) }
        return try await inner.keys(prefix)
    }

    func write(_ batch: [StoreWrite]) async throws {
        log.withLock { $0.batches.append(batch) }
        try await inner.write(batch)
    }

    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        log.withLock { $0.entriesPrefixes.append(prefix) }
        return try await inner.entries(prefix, after: after, limit: limit)
    }

    func compact() async throws { try await inner.compact() }
    var capabilities: StoreCapabilities { inner.capabilities }
}
