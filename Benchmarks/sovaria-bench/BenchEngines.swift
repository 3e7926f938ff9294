import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaSodium

/// An engine the benchmark can open, with its raw C baseline when it has one: a `StoreScheme` of
/// the registry (inside its wrappers), each store opened by `OfflineStores` at the store URL for
/// its folder, the durability in the URL.
struct BenchEngine: Sendable {
    /// The engine's scheme.
    let scheme: StoreScheme
    /// The wrappers around it, outermost first.
    var wrappers: [StoreScheme] = []
    /// Fewer keys for engines too slow for the full count (one file and one fsync per key).
    var maxKeys: (full: Int, standard: Int, quick: Int)?
    /// The URL's location for a store in the folder.
    let location: @Sendable (_ folder: URL) throws -> String
    /// The URL's options for a store in the folder.
    var options: @Sendable (_ folder: URL) throws -> [String: String] = { _ in [:] }
    var raw: (@Sendable (_ folder: URL, _ durability: Durability, _ workload: Workload) throws -> any BenchSubject)?

    /// The engine `scheme`, its store in the folder at `location` (by default the folder's path for
    /// a scheme that takes a place, else none).
    init(
        _ scheme: StoreScheme, maxKeys: (full: Int, standard: Int, quick: Int)? = nil,
        location: (@Sendable (_ folder: URL) throws -> String)? = nil,
        options: @escaping @Sendable (_ folder: URL) throws -> [String: String] = { _ in [:] },
        raw: (@Sendable (_ folder: URL, _ durability: Durability, _ workload: Workload) throws -> any BenchSubject)? =
            nil
    ) {
        self.scheme = scheme
        self.maxKeys = maxKeys
        self.location = location ?? { folder in scheme.location == .required ? folder.path : "" }
        self.options = options
        self.raw = raw
    }

    /// The row subject: the scheme's name inside its wrappers' (`encrypted(sqlite)`).
    var name: String { wrappers.reversed().reduce(scheme.name) { inner, wrapper in "\(wrapper.name)(\(inner))" } }

    /// Whether its stores outlive the process: every engine but memory (a scheme without a place).
    var persistent: Bool { scheme.location != .absent }

    /// This engine inside `wrapper` (no raw baseline of its own).
    func wrapped(in wrapper: StoreScheme) -> BenchEngine {
        var engine = self
        engine.wrappers.insert(wrapper, at: 0)
        engine.raw = nil
        return engine
    }

    /// Opens its store in `folder`, writing with `durability`.
    func open(_ folder: URL, _ durability: Durability) async throws -> any OfflineStore {
        let url = StoreURL(
            engine: scheme.name, location: try location(folder), durability: durability,
            wrappers: wrappers.map(\.name), options: try options(folder))
        return try await OfflineStores.open(url, using: wrappers + [scheme], secrets: BenchEngines.runSecrets)
    }
}

/// The bench's engines, from the `StoreScheme` registry: adding an engine is adding its scheme and
/// one line in ``plain``.
enum BenchEngines {
    /// Every engine, then `EncryptedOfflineStore` and `ChecksummedOfflineStore` around each
    /// persistent one.
    static let all: [BenchEngine] =
        plain + plain.filter(\.persistent).map(encrypted) + plain.filter(\.persistent).map(checksummed)

    /// The engines on their own.
    static let plain: [BenchEngine] = [
        BenchEngine(.memory),
        BenchEngine(.file, maxKeys: (full: 10_000, standard: 300, quick: 300)),
        BenchEngine(
            .lmdb,
            raw: { folder, durability, workload in
                try RawLMDBSubject(folder: folder, durability: durability, workload: workload)
            }),
        BenchEngine(
            .leveldb,
            raw: { folder, durability, workload in
                try RawLevelDBSubject(folder: folder, durability: durability, workload: workload)
            }),
        BenchEngine(
            .sqlite, location: { $0.appendingPathComponent("store.sqlite").path },
            raw: { folder, durability, workload in
                try RawSQLiteSubject(folder: folder, durability: durability, workload: workload)
            }),
        // A server on this machine over its Unix socket (see BenchPostgres): one round trip a call.
        BenchEngine(
            .postgres, maxKeys: (full: 20_000, standard: 1_000, quick: 2_000),
            location: { _ in try BenchPostgres.conninfo() },
            options: { ["table": try BenchPostgres.table(for: $0)] },
            raw: { _, durability, workload in
                try RawPostgresSubject(
                    conninfo: try BenchPostgres.conninfo(), durability: durability, workload: workload)
            }),
    ]

    /// `engine` wrapped in `EncryptedOfflineStore` with one random key for the run.
    static func encrypted(_ engine: BenchEngine) -> BenchEngine { engine.wrapped(in: .encrypted) }

    /// `engine` wrapped in `ChecksummedOfflineStore`: the cost of checking every value.
    static func checksummed(_ engine: BenchEngine) -> BenchEngine { engine.wrapped(in: .checksummed) }

    /// One key for the run, for every encrypted store.
    static let runSecrets = StoreSecrets(key: (0..<32).map { _ in UInt8.random(in: .min ... .max) })
}
