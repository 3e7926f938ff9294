import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaSodium

/// The stores the crash tests can run, by name; `encrypted-<engine>` wraps that engine's store in
/// an ``EncryptedOfflineStore`` with ``testKeyBytes``.
enum CrashStores {
    /// The prefix of an engine name that wraps the store in encryption.
    static let encryptedPrefix = "encrypted-"
    /// The key of the encrypted stores: fixed, so the test process can read what the child wrote.
    static let testKeyBytes = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }

    /// The store at `location`: a folder for the embedded engines, a libpq conninfo for
    /// `postgres` (whose entries go to the table `sovaria_crash`).
    static func open(_ engine: String, location: String, durability: Durability) throws -> any OfflineStore {
        guard engine == "postgres" else {
            return try open(engine, at: URL(fileURLWithPath: location), durability: durability)
        }
        return try PostgresOfflineStore(connection: location, table: "sovaria_crash", durability: durability)
    }

    static func open(_ engine: String, at path: URL, durability: Durability) throws -> any OfflineStore {
        if engine.hasPrefix(encryptedPrefix) {
            let inner = try open(String(engine.dropFirst(encryptedPrefix.count)), at: path, durability: durability)
            return EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey(bytes: testKeyBytes))
        }
        switch engine {
        case "file":
            let store = FileOfflineStore(directory: path, durability: durability)
            if let reason = store.fallbackReason { throw reason }
            return store
        case "lmdb":
            return try LMDBOfflineStore(directory: path, durability: durability)
        case "leveldb":
            return try LevelDBOfflineStore(directory: path, durability: durability)
        case "sqlite":
            return try SQLiteOfflineStore(fileURL: path.appendingPathComponent("store.sqlite"), durability: durability)
        default:
            throw OfflineStoreError(.unsupported, "unknown engine \(engine)")
        }
    }
}
