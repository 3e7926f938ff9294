import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite

/// The stores the crash tests can run, by name.
enum CrashStores {
    /// The store at `location`: a folder for the embedded engines, a libpq conninfo for
    /// `postgres` (whose entries go to the table `sovaria_crash`).
    static func open(_ engine: String, location: String, durability: Durability) throws -> any OfflineStore {
        guard engine == "postgres" else {
            return try open(engine, at: URL(fileURLWithPath: location), durability: durability)
        }
        return try PostgresOfflineStore(connection: location, table: "sovaria_crash", durability: durability)
    }

    static func open(_ engine: String, at path: URL, durability: Durability) throws -> any OfflineStore {
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
