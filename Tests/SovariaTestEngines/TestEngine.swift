import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaSodium
import SovariaTestServers
import Synchronization

/// One engine the layer tests run on: its name and how to open a store of it in a folder.
///
/// Opened again on the same folder, a store reopens the same data: the memory engine hands back
/// the store it made for that folder (``SharedMemoryStores``), and the encrypted engine uses one
/// key for the whole run. The engine list every layer's tests use is ``standard(durability:sqliteFile:including:)``:
/// the one place to add an engine so that the cache, queue, file-cache and controller tests
/// all run on it.
public struct TestEngine: Sendable, CustomStringConvertible {
    /// The engine's name in test output: `memory`, `file`, `sqlite`, `lmdb`, `leveldb`,
    /// `encrypted(sqlite)`, `postgres`.
    public let name: String
    /// Opens a store of this engine in the folder.
    public let open: @Sendable (URL) throws -> any OfflineStore

    /// An engine named `name` that opens its stores with `open`.
    public init(name: String, open: @escaping @Sendable (URL) throws -> any OfflineStore) {
        self.name = name
        self.open = open
    }

    /// The name.
    public var description: String { name }

    /// Engines beyond the five local ones that a test target adds.
    public struct Extras: OptionSet, Sendable {
        /// The bit set.
        public let rawValue: Int
        /// Makes the set from its bits.
        public init(rawValue: Int) { self.rawValue = rawValue }
        /// `EncryptedOfflineStore` around SQLite.
        public static let encrypted = Extras(rawValue: 1 << 0)
        /// A table in the shared test database: suites using it carry `.sharedPostgresDatabase`.
        public static let postgres = Extras(rawValue: 1 << 1)
    }

    /// memory, file, sqlite, lmdb, leveldb, then the `extras` (encrypted SQLite, PostgreSQL), each
    /// writing with `durability`; SQLite's file is `sqliteFile` inside the folder.
    public static func standard(
        durability: Durability = .flushed, sqliteFile: String = "store.sqlite", including extras: Extras = []
    ) -> [TestEngine] {
        var engines = [
            memory,
            file(durability),
            sqlite(durability, file: sqliteFile),
            lmdb(durability),
            leveldb(durability),
        ]
        if extras.contains(.encrypted) { engines.append(encryptedSQLite(durability, file: sqliteFile)) }
        if extras.contains(.postgres) { engines.append(postgres(durability)) }
        return engines
    }

    /// A memory store per folder.
    public static let memory = TestEngine(name: "memory") { SharedMemoryStores.store(for: $0) }

    /// A file-per-key store in the folder.
    public static func file(_ durability: Durability) -> TestEngine {
        TestEngine(name: "file") { FileOfflineStore(directory: $0, durability: durability) }
    }

    /// An SQLite database named `file` in the folder.
    public static func sqlite(_ durability: Durability, file: String = "store.sqlite") -> TestEngine {
        TestEngine(name: "sqlite") {
            try SQLiteOfflineStore(fileURL: $0.appendingPathComponent(file), durability: durability)
        }
    }

    /// An LMDB environment in the folder.
    public static func lmdb(_ durability: Durability) -> TestEngine {
        TestEngine(name: "lmdb") { try LMDBOfflineStore(directory: $0, durability: durability) }
    }

    /// A LevelDB database in the folder.
    public static func leveldb(_ durability: Durability) -> TestEngine {
        TestEngine(name: "leveldb") { try LevelDBOfflineStore(directory: $0, durability: durability) }
    }

    /// `EncryptedOfflineStore` around an SQLite database named `file`, with the run's key.
    public static func encryptedSQLite(_ durability: Durability, file: String = "store.sqlite") -> TestEngine {
        TestEngine(name: "encrypted(sqlite)") {
            EncryptedOfflineStore(
                wrapping: try SQLiteOfflineStore(fileURL: $0.appendingPathComponent(file), durability: durability),
                key: try runKey.get())
        }
    }

    /// A table named after the folder in the shared test database; needs `.sharedPostgresDatabase`.
    public static func postgres(_ durability: Durability) -> TestEngine {
        TestEngine(name: "postgres") {
            try PostgresOfflineStore(
                connection: try SharedPostgresDatabase.conninfo(), table: PostgresCluster.tableName(for: $0),
                durability: durability)
        }
    }

    /// One key for the run: a reopened encrypted store must read what the first one wrote.
    private static let runKey = Result { try EncryptionKey.random() }
}

/// Memory stores by folder, so "reopening" a memory store finds its data, as a persistent
/// engine would.
public enum SharedMemoryStores {
    private static let stores = Mutex<[URL: MemoryOfflineStore]>([:])

    /// The memory store made for `folder`, made now if there is none.
    public static func store(for folder: URL) -> MemoryOfflineStore {
        stores.withLock { byFolder in
            if let store = byFolder[folder] { return store }
            let store = MemoryOfflineStore()
            byFolder[folder] = store
            return store
        }
    }
}
