import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaQueue
import SovariaSQLite
import SovariaSodium
import SovariaTestServers
import Synchronization

/// The stores every queue test runs on: each engine, and `EncryptedOfflineStore` around SQLite.
/// `open` makes a store on a folder; called again on the same folder it reopens the same data.
struct QueueEngine: Sendable, CustomStringConvertible {
    let name: String
    let open: @Sendable (URL) throws -> any OfflineStore
    var description: String { name }

    static let all: [QueueEngine] = [
        QueueEngine(name: "memory") { SharedMemoryStores.store(for: $0) },
        QueueEngine(name: "file") { FileOfflineStore(directory: $0, durability: .flushed) },
        QueueEngine(name: "sqlite", open: sqlite),
        QueueEngine(name: "lmdb") { try LMDBOfflineStore(directory: $0, durability: .flushed) },
        QueueEngine(name: "leveldb") { try LevelDBOfflineStore(directory: $0, durability: .flushed) },
        QueueEngine(name: "encrypted(sqlite)") { EncryptedOfflineStore(wrapping: try sqlite($0), key: try key.get()) },
        // A table per folder in the shared test database: suites using it carry `.sharedPostgresDatabase`.
        QueueEngine(name: "postgres") {
            try PostgresOfflineStore(
                connection: try SharedPostgresDatabase.conninfo(), table: PostgresCluster.tableName(for: $0),
                durability: .flushed)
        },
    ]

    private static func sqlite(_ folder: URL) throws -> any OfflineStore {
        try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("queue.sqlite"), durability: .flushed)
    }

    /// One key for the run: a reopened encrypted store must read what the first one wrote.
    private static let key = Result { try EncryptionKey.random() }
}

/// Memory stores by folder, so "reopening" a memory store finds its data, as a persistent
/// engine would.
enum SharedMemoryStores {
    private static let stores = Mutex<[URL: MemoryOfflineStore]>([:])

    static func store(for folder: URL) -> MemoryOfflineStore {
        stores.withLock { byFolder in
            if let store = byFolder[folder] { return store }
            let store = MemoryOfflineStore()
            byFolder[folder] = store
            return store
        }
    }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let current = Mutex(Date(timeIntervalSince1970: 1_800_000_000.123_456))

    var date: Date { current.withLock { $0 } }
    func advance(by seconds: TimeInterval) { current.withLock { $0 += seconds } }
    var function: @Sendable () -> Date { { self.date } }
}

/// A numbered request whose body says its number.
func request(_ number: Int, method: String = "POST") -> DataRequest {
    DataRequest(
        method: method, path: "/rest/v1/notes?id=eq.\(number)", headers: ["Prefer": "return=minimal"],
        body: #"{"n":\#(number),"title":"é/\u{0}"}"#)
}

/// The number a ``request(_:method:)`` carries.
func number(of write: QueuedWrite) -> Int {
    Int(write.request.path.split(separator: ".").last ?? "") ?? -1
}

/// Wraps a store and records what the queue asks of it; can fail the next batches.
final class SpyStore: OfflineStore {
    struct Log {
        var gets: [String] = []
        var entriesPrefixes: [String] = []
        var keysPrefixes: [String] = []
        var batches: [[StoreWrite]] = []
    }

    let inner: any OfflineStore
    let log = Mutex(Log())
    /// Batches fail with this error while it is set.
    let failWrites = Mutex<OfflineStoreError?>(nil)

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
        if let error = failWrites.withLock({ $0 }) { throw error }
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
