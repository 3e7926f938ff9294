import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaTestKit
import SovariaTestServers

/// The stores every cache test runs on: one store per engine, opened in a folder of its own,
/// and opened again on the same folder to test reopening.
struct CacheEngine: Sendable, CustomStringConvertible {
    let name: String
    let open: @Sendable (URL) throws -> any OfflineStore
    /// Whether a store opened again on the same folder sees the data (memory: the same object).
    var description: String { name }

    static let all: [CacheEngine] = [
        CacheEngine(name: "memory") { SharedMemoryStores.store(for: $0) },
        CacheEngine(name: "file") { FileOfflineStore(directory: $0, durability: .flushed) },
        CacheEngine(name: "lmdb") { try LMDBOfflineStore(directory: $0, durability: .flushed) },
        CacheEngine(name: "leveldb") { try LevelDBOfflineStore(directory: $0, durability: .flushed) },
        CacheEngine(name: "sqlite") {
            try SQLiteOfflineStore(fileURL: $0.appendingPathComponent("cache.sqlite"), durability: .flushed)
        },
        // A table per folder in the shared test database: suites using it carry `.sharedPostgresDatabase`.
        CacheEngine(name: "postgres") {
            try PostgresOfflineStore(
                connection: try SharedPostgresDatabase.conninfo(), table: PostgresCluster.tableName(for: $0),
                durability: .flushed)
        },
    ]
}

/// Memory stores by folder, so "reopening" a memory store finds its data, as a persistent
/// engine would.
enum SharedMemoryStores {
    private static let stores = NSLock()
    nonisolated(unsafe) private static var byFolder: [URL: MemoryOfflineStore] = [:]

    static func store(for folder: URL) -> MemoryOfflineStore {
        stores.withLock {
            if let store = byFolder[folder] { return store }
            let store = MemoryOfflineStore()
            byFolder[folder] = store
            return store
        }
    }
}

/// A clock the test moves by hand.
final class TestClock: Sendable {
    private let now = NSLock()
    nonisolated(unsafe) private var current = Date(timeIntervalSince1970: 1_800_000_000)

    var date: Date { now.withLock { current } }
    func advance(by seconds: TimeInterval) { now.withLock { current += seconds } }
    var function: @Sendable () -> Date { { self.date } }
}

/// Server times one second apart, from a fixed start.
func serverTime(_ second: Int) -> Date { Date(timeIntervalSince1970: 1_700_000_000 + Double(second)) }

/// A body of exactly `bytes` UTF-8 bytes, with multi-byte characters in it.
func body(_ bytes: Int, _ tag: String = "") -> String {
    let unit = "é"  // 2 bytes
    let prefix = String(tag.prefix(8))
    let remaining = bytes - prefix.utf8.count
    return prefix + String(repeating: unit, count: remaining / 2) + String(repeating: "x", count: remaining % 2)
}
