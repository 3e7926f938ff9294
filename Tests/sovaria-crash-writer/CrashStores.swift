import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaSodium

/// The stores the crash tests can run, by scheme name, opened through `OfflineStores` with the
/// `StoreScheme` registry: `encrypted-<engine>` (or `encrypted(<engine>)`, a test engine's name)
/// wraps that engine's store in an ``EncryptedOfflineStore`` with ``testKeyBytes``.
enum CrashStores {
    /// The schemes the crash writer opens: the engines it links and the encryption wrapper.
    static let schemes: [StoreScheme] = [.file, .sqlite, .lmdb, .leveldb, .postgres, .encrypted]
    /// The prefix of an engine name that wraps the store in encryption.
    static let encryptedPrefix = "encrypted-"
    /// The key of the encrypted stores: fixed, so the test process can read what the child wrote.
    static let testKeyBytes = (0..<32).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
    /// The secrets the encrypted stores take: ``testKeyBytes``.
    static let secrets = StoreSecrets(key: testKeyBytes)
    /// The name of SQLite's database file in the folder.
    static let sqliteFile = "store.sqlite"

    /// The store at `location`: a folder for the embedded engines, a libpq conninfo for
    /// `postgres` (whose entries go to the table `sovaria_crash`).
    static func open(_ engine: String, location: String, durability: Durability) async throws -> any OfflineStore {
        guard engine == StoreScheme.postgres.name else {
            return try await open(engine, at: URL(fileURLWithPath: location), durability: durability)
        }
        return try await OfflineStores.open(
            StoreURL(engine: engine, location: location, durability: durability, options: ["table": "sovaria_crash"]),
            using: schemes)
    }

    /// The store of the embedded engine `engine` in the folder `path` (SQLite's database is
    /// ``sqliteFile`` in it).
    static func open(_ engine: String, at path: URL, durability: Durability) async throws -> any OfflineStore {
        var wrappers: [String] = []
        var name = engine
        if name.hasPrefix(encryptedPrefix) {
            wrappers = [StoreScheme.encrypted.name]
            name = String(name.dropFirst(encryptedPrefix.count))
        } else if let open = name.firstIndex(of: "("), name.hasSuffix(")") {
            wrappers = [String(name[..<open])]
            name = String(name[name.index(after: open)..<name.index(before: name.endIndex)])
        }
        guard let scheme = schemes.first(where: { $0.name == name && !$0.isWrapper }), scheme.location == .required
        else { throw OfflineStoreError(.unsupported, "unknown engine \(engine)") }
        let location = name == StoreScheme.sqlite.name ? path.appendingPathComponent(sqliteFile) : path
        return try await OfflineStores.open(
            StoreURL(engine: name, location: location.path, durability: durability, wrappers: wrappers),
            using: schemes, secrets: secrets)
    }
}
