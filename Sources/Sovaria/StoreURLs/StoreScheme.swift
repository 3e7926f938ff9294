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

    /// What a wrapper's `prepare` hands back: puts the wrapper around the engine the rest of the URL
    /// opened.
    public typealias Wrap = @Sendable (any OfflineStore) async throws -> any OfflineStore

    enum Kind {
        case engine(@Sendable (StoreURL) async throws -> any OfflineStore)
        case wrapper(@Sendable (StoreURL, StoreSecrets) async throws -> Wrap)
        /// A Sovaria scheme not registered: its form is known, it cannot open.
        case unregistered(isWrapper: Bool)
    }

    /// The name in the URL, lowercase.
    public let name: String
    /// The library product that has it, for the message when it is not registered.
    public let product: String
    /// What comes after the colon (engines only).
    public let location: Location
    /// The options after `?` it takes, besides `durability`.
    public let options: Set<String>
    /// The values an option takes, for the options that take only some (postgres `read=`),
    /// lowercase; ``OfflineStores`` refuses any other value before anything opens, with
    /// ``StoreURLError/Reason/badValue(option:allowed:)``. Options not here take any value.
    public let optionValues: [String: [String]]
    let kind: Kind

    init(
        name: String, product: String, location: Location, options: Set<String>,
        optionValues: [String: [String]] = [:], kind: Kind
    ) {
        self.name = name
        self.product = product
        self.location = location
        self.options = options
        self.optionValues = optionValues
        self.kind = kind
    }

    /// Whether it wraps an engine (`name+ENGINE:`) rather than being one.
    public var isWrapper: Bool {
        switch kind {
        case .engine: false
        case .wrapper: true
        case .unregistered(let isWrapper): isWrapper
        }
    }

    /// An engine: `open` makes the store the URL names (``StoreURL/location``,
    /// ``StoreURL/durability`` and the `options`). An option of `optionValues` takes one of its
    /// values (any case), checked before `open` runs.
    public static func engine(
        _ name: String, product: String, location: Location, options: Set<String> = [],
        optionValues: [String: [String]] = [:],
        open: @escaping @Sendable (StoreURL) async throws -> any OfflineStore
    ) -> StoreScheme {
        StoreScheme(
            name: name.lowercased(), product: product, location: location, options: options,
            optionValues: optionValues.mapValues { $0.map { $0.lowercased() } }, kind: .engine(open))
    }

    /// A wrapper that checks its options and secrets before anything opens: `prepare` throws for a
    /// URL or secrets it cannot use, else returns what puts the wrapper around the engine.
    ///
    /// ``OfflineStores`` prepares every wrapper of a URL before it opens the engine, so a refused
    /// key or option leaves nothing behind: not a new, unwrapped store.
    ///
    /// ```swift
    /// let sealed = StoreScheme.wrapper("sealed", product: "MySealing", options: ["key-id"]) { url, secrets in
    ///     let key = try KeyRing.key(named: url.options["key-id"])  // throws before the engine opens
    ///     return { store in SealedStore(wrapping: store, key: key) }
    /// }
    /// ```
    public static func wrapper(
        _ name: String, product: String, options: Set<String> = [],
        prepare: @escaping @Sendable (StoreURL, StoreSecrets) async throws -> Wrap
    ) -> StoreScheme {
        StoreScheme(
            name: name.lowercased(), product: product, location: .optional, options: options, kind: .wrapper(prepare))
    }

    /// A wrapper with nothing to check before the engine opens: `wrap` puts it around the engine
    /// the rest of the URL opened.
    public static func wrapper(
        _ name: String, product: String, options: Set<String> = [],
        wrap: @escaping @Sendable (any OfflineStore, StoreURL, StoreSecrets) async throws -> any OfflineStore
    ) -> StoreScheme {
        wrapper(
            name, product: product, options: options,
            prepare: { url, secrets in
                { store in try await wrap(store, url, secrets) }
            })
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

    /// Sovaria's schemes in other modules, known by form so a URL naming one parses and, until the
    /// app registers it, says which registration is missing. Each module's own scheme has the same
    /// form.
    static let unregistered: [StoreScheme] = [
        StoreScheme(
            name: "sqlite", product: "SovariaSQLite", location: .required, options: [],
            kind: .unregistered(isWrapper: false)),
        StoreScheme(
            name: "lmdb", product: "SovariaLMDB", location: .required, options: [],
            kind: .unregistered(isWrapper: false)),
        StoreScheme(
            name: "leveldb", product: "SovariaLevelDB", location: .required, options: [],
            kind: .unregistered(isWrapper: false)),
        StoreScheme(
            name: "postgres", product: "SovariaPostgres", location: .optional, options: ["table", "read"],
            optionValues: ["read": ["primary", "standby-if-caught-up", "any-standby"]],
            kind: .unregistered(isWrapper: false)),
        StoreScheme(
            name: "encrypted", product: "SovariaSodium", location: .optional, options: ["key-file"],
            kind: .unregistered(isWrapper: true)),
    ]
}
