import Foundation

/// One scheme of the store-URL grammar and how to open it: an engine (`sqlite:`) or a wrapper
/// around one (`encrypted+`).
///
/// `Sovaria` has `memory`, `file` and `checksummed`; each engine module adds its own
/// (`.sqlite` in SovariaSQLite, `.lmdb`, `.leveldb`, `.postgres`, and `.encrypted` in
/// SovariaSodium), so an app links only the engines it uses and passes their schemes to
/// ``OfflineStores``. An app's own engine is a scheme too:
///
/// ```swift
/// let redis = StoreScheme.engine("redis", product: "MyRedisStore", location: .optional) { url in
///     try RedisOfflineStore(address: url.location)
/// }
/// let store = try await OfflineStores.open("redis:10.0.0.5", using: [redis])
/// ```
public struct StoreScheme: Sendable {
    /// Whether the URL names a place after the scheme's colon.
    public enum Location: Sendable {
        /// None (`memory:`).
        case absent
        /// A folder or file, never empty.
        case required
        /// Anything, empty included (a PostgreSQL conninfo).
        case optional
    }

    enum Kind {
        case engine(@Sendable (StoreURL) async throws -> any OfflineStore)
        case wrapper(@Sendable (any OfflineStore, StoreURL, StoreSecrets) async throws -> any OfflineStore)
        /// A Sovaria scheme whose module is not linked: its form is known, it cannot open.
        case unlinked(isWrapper: Bool)
    }

    /// The name in the URL, lowercase.
    public let name: String
    /// The library product that has it, for the message when it is not linked.
    public let product: String
    /// What comes after the colon (engines only).
    public let location: Location
    /// The options after `?` it takes, besides `durability`.
    public let options: Set<String>
    let kind: Kind

    /// Whether it wraps an engine (`name+ENGINE:`) rather than being one.
    public var isWrapper: Bool {
        switch kind {
        case .engine: false
        case .wrapper: true
        case .unlinked(let isWrapper): isWrapper
        }
    }

    /// An engine: `open` makes the store the URL names (``StoreURL/location``,
    /// ``StoreURL/durability`` and the `options`).
    public static func engine(
        _ name: String, product: String, location: Location, options: Set<String> = [],
        open: @escaping @Sendable (StoreURL) async throws -> any OfflineStore
    ) -> StoreScheme {
        StoreScheme(
            name: name.lowercased(), product: product, location: location, options: options, kind: .engine(open))
    }

    /// A wrapper: `wrap` puts it around the engine the rest of the URL opened.
    public static func wrapper(
        _ name: String, product: String, options: Set<String> = [],
        wrap: @escaping @Sendable (any OfflineStore, StoreURL, StoreSecrets) async throws -> any OfflineStore
    ) -> StoreScheme {
        StoreScheme(
            name: name.lowercased(), product: product, location: .optional, options: options, kind: .wrapper(wrap))
    }

    /// An empty ``MemoryOfflineStore``: `memory:`.
    public static let memory = engine("memory", product: "Sovaria", location: .absent) { _ in MemoryOfflineStore() }

    /// A ``FileOfflineStore`` in a folder: `file:DIR`. A folder it cannot make or write is an
    /// error here, not a store that falls back to memory.
    public static let file = engine("file", product: "Sovaria", location: .required) { url in
        let store = FileOfflineStore(
            directory: URL(fileURLWithPath: url.location, isDirectory: true), durability: url.durability)
        if let reason = store.fallbackReason { throw reason }
        return store
    }

    /// A ``ChecksummedOfflineStore`` around the engine: `checksummed+ENGINE:…`.
    public static let checksummed = wrapper("checksummed", product: "Sovaria") { store, _, _ in
        ChecksummedOfflineStore(wrapping: store)
    }

    /// Sovaria's schemes in other modules, known by form so a URL naming one parses and says
    /// which product to add when it is not linked. Each module's own scheme has the same form.
    static let unlinked: [StoreScheme] = [
        StoreScheme(
            name: "sqlite", product: "SovariaSQLite", location: .required, options: [],
            kind: .unlinked(isWrapper: false)),
        StoreScheme(
            name: "lmdb", product: "SovariaLMDB", location: .required, options: [], kind: .unlinked(isWrapper: false)),
        StoreScheme(
            name: "leveldb", product: "SovariaLevelDB", location: .required, options: [],
            kind: .unlinked(isWrapper: false)),
        StoreScheme(
            name: "postgres", product: "SovariaPostgres", location: .optional, options: ["table"],
            kind: .unlinked(isWrapper: false)),
        StoreScheme(
            name: "encrypted", product: "SovariaSodium", location: .optional, options: ["key-file"],
            kind: .unlinked(isWrapper: true)),
    ]
}
