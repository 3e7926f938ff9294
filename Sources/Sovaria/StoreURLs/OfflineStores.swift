import Foundation
import Synchronization

/// Opens stores named by URL: the engine chosen by configuration, per deployment.
///
/// `Sovaria` alone opens `memory:` and `file:` (and `checksummed+`); each engine module adds its
/// scheme, so an app links only the engines it uses. Register them once at launch, or pass them
/// per call:
///
/// ```swift
/// import Sovaria
/// import SovariaLMDB
/// import SovariaSQLite
///
/// OfflineStores.register(.sqlite, .lmdb)
/// // SQLite on the phone, LMDB on the kiosk: the URL comes from the deployment's configuration.
/// let store = try await OfflineStores.open("sqlite:/var/lib/app/offline.sqlite?durability=flushed")
/// ```
///
/// ``openConfigured(otherwise:using:secrets:environment:)`` reads the URL from
/// `SOVARIA_STORE`, so one build runs on any engine. ``StoreURL`` lists the forms.
public enum OfflineStores {
    /// The environment variable that names the store when the app passes none: `SOVARIA_STORE`.
    public static let environmentVariable = "SOVARIA_STORE"

    private static let registry = Mutex<[String: StoreScheme]>(
        Dictionary(
            uniqueKeysWithValues: (StoreScheme.unlinked + [.memory, .file, .checksummed]).map { ($0.name, $0) }))

    /// Adds schemes every later ``open(_:using:secrets:)-(String,_,_)`` and ``StoreURL/init(_:)`` know (a
    /// scheme of the same name is replaced). Registering the same scheme again does nothing new.
    public static func register(_ schemes: StoreScheme...) {
        registry.withLock { registered in
            for scheme in schemes { registered[scheme.name] = scheme }
        }
    }

    static var registeredSchemes: [String: StoreScheme] { registry.withLock { $0 } }

    /// `text` parsed with the registered schemes and `schemes`.
    ///
    /// - Throws: ``StoreURLError`` naming the wrong part.
    public static func parse(_ text: String, using schemes: [StoreScheme] = []) throws(StoreURLError) -> StoreURL {
        try StoreURLParser(text: text, schemes: known(adding: schemes)).parse()
    }

    /// Opens the store `text` names, with its wrappers.
    ///
    /// - Parameters:
    ///   - text: the store URL (``StoreURL`` lists its forms).
    ///   - schemes: schemes for this call besides the registered ones.
    ///   - secrets: the key or passphrase of an `encrypted+` store whose URL names no key file.
    /// - Throws: ``StoreURLError`` for a URL that is wrong or names an engine not linked;
    ///   ``OfflineStoreError`` from the engine (a folder it cannot create, a wrong passphrase).
    public static func open(
        _ text: String, using schemes: [StoreScheme] = [], secrets: StoreSecrets = StoreSecrets()
    ) async throws -> any OfflineStore {
        try await open(parse(text, using: schemes), using: schemes, secrets: secrets)
    }

    /// Opens the store `url` names, with its wrappers (the outermost first in ``StoreURL/wrappers``).
    public static func open(
        _ url: StoreURL, using schemes: [StoreScheme] = [], secrets: StoreSecrets = StoreSecrets()
    ) async throws -> any OfflineStore {
        try await wrap(openEngine(url, using: schemes), as: url, using: schemes, secrets: secrets)
    }

    /// Puts `url`'s wrappers around `engine`, an engine ``openEngine(_:using:)`` opened for it.
    public static func wrap(
        _ engine: any OfflineStore, as url: StoreURL, using schemes: [StoreScheme] = [],
        secrets: StoreSecrets = StoreSecrets()
    ) async throws -> any OfflineStore {
        let known = known(adding: schemes)
        var store = engine
        for name in url.wrappers.reversed() {
            guard case .wrapper(let wrap) = try scheme(name, of: url, in: known).kind else {
                throw StoreURLError(url: "\(url)", part: name, reason: .unknownWrapper)
            }
            store = try await wrap(store, url, secrets)
        }
        return store
    }

    /// Opens the engine `url` names without its wrappers (what `sovaria verify` checks beneath
    /// an encrypted store).
    public static func openEngine(_ url: StoreURL, using schemes: [StoreScheme] = []) async throws -> any OfflineStore {
        let engine = try scheme(url.engine, of: url, in: known(adding: schemes))
        guard case .engine(let open) = engine.kind else {
            throw StoreURLError(url: "\(url)", part: url.engine, reason: .unknownEngine)
        }
        return try await open(url)
    }

    /// Opens the store named by `SOVARIA_STORE` in `environment`, else `fallback`.
    ///
    /// - Throws: ``StoreURLError/Reason/missingStore`` when neither is there.
    public static func openConfigured(
        otherwise fallback: String? = nil, using schemes: [StoreScheme] = [], secrets: StoreSecrets = StoreSecrets(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws -> any OfflineStore {
        guard let text = environment[environmentVariable].flatMap({ $0.isEmpty ? nil : $0 }) ?? fallback else {
            throw StoreURLError(url: "", part: environmentVariable, reason: .missingStore)
        }
        return try await open(text, using: schemes, secrets: secrets)
    }

    private static func known(adding schemes: [StoreScheme]) -> [String: StoreScheme] {
        var known = registeredSchemes
        for scheme in schemes { known[scheme.name] = scheme }
        return known
    }

    private static func scheme(
        _ name: String, of url: StoreURL, in known: [String: StoreScheme]
    ) throws(StoreURLError) -> StoreScheme {
        guard let scheme = known[name] else {
            throw StoreURLError(
                url: "\(url)", part: name, reason: url.engine == name ? .unknownEngine : .unknownWrapper)
        }
        if case .unlinked = scheme.kind {
            throw StoreURLError(url: "\(url)", part: name, reason: .notLinked(product: scheme.product))
        }
        return scheme
    }
}
