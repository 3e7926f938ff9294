import Foundation
import Sovaria
import SovariaLevelDB
import SovariaSQLite

/// An engine the benchmark can open, with its raw C baseline when it has one.
struct BenchEngine: Sendable {
    let name: String
    let persistent: Bool
    /// Fewer keys for engines too slow for the full count (one file and one fsync per key).
    var maxKeys: (full: Int, quick: Int)?
    let open: @Sendable (_ folder: URL, _ durability: Durability) throws -> any OfflineStore
    var raw: (@Sendable (_ folder: URL, _ durability: Durability, _ workload: Workload) throws -> any BenchSubject)?
}

enum BenchEngines {
    static let all: [BenchEngine] = [
        BenchEngine(name: "memory", persistent: false) { _, _ in MemoryOfflineStore() },
        BenchEngine(name: "file", persistent: true, maxKeys: (full: 10_000, quick: 300)) { folder, durability in
            let store = FileOfflineStore(directory: folder, durability: durability)
            if let reason = store.fallbackReason { throw reason }
            return store
        },
        BenchEngine(name: "leveldb", persistent: true) { folder, durability in
            try LevelDBOfflineStore(directory: folder, durability: durability)
        },
        BenchEngine(name: "sqlite", persistent: true) { folder, durability in
            try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("store.sqlite"), durability: durability)
        },
    ]
}
