import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaSQLite

/// The stores the crash tests can run, by name.
enum CrashStores {
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
