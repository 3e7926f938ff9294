import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaSQLite
import SovariaSodium

/// An engine the benchmark can open, with its raw C baseline when it has one.
struct BenchEngine: Sendable {
    let name: String
    let persistent: Bool
    /// Fewer keys for engines too slow for the full count (one file and one fsync per key).
    var maxKeys: (full: Int, standard: Int, quick: Int)?
    let open: @Sendable (_ folder: URL, _ durability: Durability) throws -> any OfflineStore
    var raw: (@Sendable (_ folder: URL, _ durability: Durability, _ workload: Workload) throws -> any BenchSubject)?
}

enum BenchEngines {
    /// Every engine, then `EncryptedOfflineStore` and `ChecksummedOfflineStore` around each
    /// persistent one.
    static let all: [BenchEngine] =
        plain + plain.filter(\.persistent).map(encrypted) + plain.filter(\.persistent).map(checksummed)

    /// The engines on their own.
    static let plain: [BenchEngine] = [
        BenchEngine(name: "memory", persistent: false) { _, _ in MemoryOfflineStore() },
        BenchEngine(name: "file", persistent: true, maxKeys: (full: 10_000, standard: 300, quick: 300)) {
            folder, durability in
            let store = FileOfflineStore(directory: folder, durability: durability)
            if let reason = store.fallbackReason { throw reason }
            return store
        },
        BenchEngine(
            name: "lmdb", persistent: true,
            open: { folder, durability in try LMDBOfflineStore(directory: folder, durability: durability) },
            raw: { folder, durability, workload in
                try RawLMDBSubject(folder: folder, durability: durability, workload: workload)
            }),
        BenchEngine(
            name: "leveldb", persistent: true,
            open: { folder, durability in try LevelDBOfflineStore(directory: folder, durability: durability) },
            raw: { folder, durability, workload in
                try RawLevelDBSubject(folder: folder, durability: durability, workload: workload)
            }),
        BenchEngine(
            name: "sqlite", persistent: true,
            open: { folder, durability in
                try SQLiteOfflineStore(fileURL: folder.appendingPathComponent("store.sqlite"), durability: durability)
            },
            raw: { folder, durability, workload in
                try RawSQLiteSubject(folder: folder, durability: durability, workload: workload)
            }),
        // A server on this machine over its Unix socket (see BenchPostgres): one round trip a call.
        BenchEngine(
            name: "postgres", persistent: true, maxKeys: (full: 20_000, standard: 1_000, quick: 2_000),
            open: BenchPostgres.open,
            raw: { _, durability, workload in
                try RawPostgresSubject(
                    conninfo: try BenchPostgres.conninfo(), durability: durability, workload: workload)
            }),
    ]

    /// `engine` wrapped in `EncryptedOfflineStore` with one random key for the run.
    static func encrypted(_ engine: BenchEngine) -> BenchEngine {
        BenchEngine(name: "encrypted(\(engine.name))", persistent: true, maxKeys: engine.maxKeys) {
            folder, durability in
            EncryptedOfflineStore(wrapping: try engine.open(folder, durability), key: try runKey.get())
        }
    }

    /// `engine` wrapped in `ChecksummedOfflineStore`: the cost of checking every value.
    static func checksummed(_ engine: BenchEngine) -> BenchEngine {
        BenchEngine(name: "checksummed(\(engine.name))", persistent: true, maxKeys: engine.maxKeys) {
            folder, durability in
            ChecksummedOfflineStore(wrapping: try engine.open(folder, durability))
        }
    }

    private static let runKey = Result { try EncryptionKey.random() }
}
