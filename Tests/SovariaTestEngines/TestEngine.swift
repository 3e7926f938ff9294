import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaSodium
import SovariaTestServers
import Synchronization

/// One engine the tests run on: its name and how to open a store of it in a folder.
///
/// The `StoreScheme` registry is the one list of engines: a test engine is a scheme (inside its
/// wrappers), and its store for a folder is the one `OfflineStores.open(_:using:secrets:)` opens at
/// the store URL for that folder, the durability in the URL. Adding an engine is adding its scheme
/// and one line in ``standard(durability:sqliteFile:including:secrets:)`` (a
/// `TestEngine(.scheme, durability: durability)`), the list every layer's tests, the HTTP rig, the
/// command tests and the crash and fault batteries (``onDisk``) take theirs from.
///
/// Opened again on the same folder, a store reopens the same data: the memory engine is the
/// registry's `memory` scheme keyed by folder (``SharedMemoryStores/scheme``), and an encrypted
/// engine uses one key for the whole run (``runSecrets``) unless given its own.
public struct TestEngine: Sendable, CustomStringConvertible {
    /// The engine's name in test output: the scheme's (`memory`, `file`, `sqlite`, `lmdb`,
    /// `leveldb`, `postgres`), inside its wrappers' (`encrypted(sqlite)`).
    public let name: String
    /// The scheme part of its store URL: the scheme's name after its wrappers' (`encrypted+sqlite`).
    public let urlScheme: String
    /// Opens a store of this engine in the folder.
    public let open: @Sendable (URL) async throws -> any OfflineStore

    /// The engine `scheme` inside `wrappers` (outermost first), each store opened by
    /// `OfflineStores` at the URL of `scheme` with `durability`, the location `location` gives for
    /// the folder (by default the folder's path for a scheme that takes a place, else none), and
    /// `options`.
    ///
    /// - Parameter secrets: what the wrappers take (the run's encryption key by default).
    public init(
        _ scheme: StoreScheme, wrappedIn wrappers: [StoreScheme] = [], durability: Durability,
        secrets: StoreSecrets = TestEngine.runSecrets,
        location: (@Sendable (URL) throws -> String)? = nil,
        options: @escaping @Sendable (URL) -> [String: String] = { _ in [:] }
    ) {
        let schemes = wrappers + [scheme]
        let location = location ?? { folder in scheme.location == .required ? folder.path : "" }
        self.name = wrappers.reversed().reduce(scheme.name) { inner, wrapper in "\(wrapper.name)(\(inner))" }
        self.urlScheme = schemes.map(\.name).joined(separator: "+")
        self.open = { folder in
            let url = StoreURL(
                engine: scheme.name, location: try location(folder), durability: durability,
                wrappers: wrappers.map(\.name), options: options(folder))
            return try await OfflineStores.open(url, using: schemes, secrets: secrets)
        }
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
    /// writing with `durability`; SQLite's file is `sqliteFile` inside the folder. An encrypted
    /// engine takes `secrets` (the run's key by default).
    public static func standard(
        durability: Durability = .flushed, sqliteFile: String = "store.sqlite", including extras: Extras = [],
        secrets: StoreSecrets = runSecrets
    ) -> [TestEngine] {
        var engines = [
            memory, file(durability), sqlite(durability, file: sqliteFile), lmdb(durability), leveldb(durability),
        ]
        if extras.contains(.encrypted) {
            engines.append(encryptedSQLite(durability, file: sqliteFile, secrets: secrets))
        }
        if extras.contains(.postgres) { engines.append(postgres(durability)) }
        return engines
    }

    /// The registry's memory scheme, one store per folder (``SharedMemoryStores/scheme``).
    public static let memory = TestEngine(SharedMemoryStores.scheme, durability: .synced)

    /// A file-per-key store in the folder.
    public static func file(_ durability: Durability) -> TestEngine { TestEngine(.file, durability: durability) }

    /// An SQLite database named `file` in the folder.
    public static func sqlite(_ durability: Durability, file: String = "store.sqlite") -> TestEngine {
        TestEngine(.sqlite, durability: durability) { $0.appendingPathComponent(file).path }
    }

    /// An LMDB environment in the folder.
    public static func lmdb(_ durability: Durability) -> TestEngine { TestEngine(.lmdb, durability: durability) }

    /// A LevelDB database in the folder.
    public static func leveldb(_ durability: Durability) -> TestEngine { TestEngine(.leveldb, durability: durability) }

    /// `EncryptedOfflineStore` around an SQLite database named `file`, with `secrets` (the run's key
    /// by default).
    public static func encryptedSQLite(
        _ durability: Durability, file: String = "store.sqlite", secrets: StoreSecrets = runSecrets
    ) -> TestEngine {
        TestEngine(.sqlite, wrappedIn: [.encrypted], durability: durability, secrets: secrets) {
            $0.appendingPathComponent(file).path
        }
    }

    /// A table named after the folder in the shared test database; needs `.sharedPostgresDatabase`.
    public static func postgres(_ durability: Durability) -> TestEngine {
        TestEngine(
            .postgres, durability: durability, location: { _ in try SharedPostgresDatabase.conninfo() },
            options: { ["table": PostgresCluster.tableName(for: $0)] })
    }

    /// The names of the engines of ``standard(durability:sqliteFile:including:secrets:)`` whose store
    /// is in a folder on this machine, so another process can reopen it: all but memory, which lives
    /// and dies with one process. The crash and fault batteries and the command tests run on these.
    public static let onDisk: [String] = standard().map(\.name).filter { $0 != memory.name }

    /// One key for the run: a reopened encrypted store must read what the first one wrote.
    public static let runSecrets = StoreSecrets(
        key: (0..<32).map { _ in UInt8.random(in: .min ... .max) })
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

    /// The registry's `memory` scheme as the tests open it: `memory:FOLDER` is the store made
    /// for that folder (``store(for:)``), where the registry's `memory:` is a new empty store each
    /// time. Its name and product are the registry scheme's.
    public static let scheme = StoreScheme.engine(
        StoreScheme.memory.name, product: StoreScheme.memory.product, location: .required
    ) { url in store(for: URL(fileURLWithPath: url.location, isDirectory: true)) }
}
