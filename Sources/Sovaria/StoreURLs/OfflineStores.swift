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
            uniqueKeysWithValues: (StoreScheme.unregistered + [.memory, .file, .checksummed]).map { ($0.name, $0) }))

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
    /// Every scheme of the URL, its options and each wrapper's secrets are checked first (as
    /// ``validate(_:using:secrets:)`` does): a URL refused for any of them opens and creates nothing.
    ///
    /// - Parameters:
    ///   - text: the store URL (``StoreURL`` lists its forms).
    ///   - schemes: schemes for this call besides the registered ones.
    ///   - secrets: the key or passphrase of an `encrypted+` store whose URL names no key file.
    /// - Throws: ``StoreURLError`` for a URL that is wrong or names a scheme not registered;
    ///   ``OfflineStoreError`` from the engine (a folder it cannot create, a wrong passphrase).
    public static func open(
        _ text: String, using schemes: [StoreScheme] = [], secrets: StoreSecrets = StoreSecrets()
    ) async throws -> any OfflineStore {
        try await open(parse(text, using: schemes), using: schemes, secrets: secrets)
    }

    /// Opens the store `url` names, with its wrappers (the outermost first in ``StoreURL/wrappers``),
    /// after the checks of ``validate(_:using:secrets:)``: a refused URL opens and creates nothing.
    public static func open(
        _ url: StoreURL, using schemes: [StoreScheme] = [], secrets: StoreSecrets = StoreSecrets()
    ) async throws -> any OfflineStore {
        let resolved = try resolve(url, using: schemes)
        let wraps = try await resolved.prepareWrappers(url, secrets: secrets)
        return try await wrapped(resolved.openEngine(url), in: wraps)
    }

    /// Checks that `url` can be opened as far as can be known without opening it: every scheme,
    /// wrappers included, is registered or in `schemes`; its options, their values
    /// (``StoreScheme/optionValues``) and its location fit them; each
    /// wrapper takes `secrets` (an `encrypted+` store has a key of 32 bytes, a readable key file or
    /// a passphrase). Opens and creates nothing.
    ///
    /// - Throws: ``StoreURLError`` naming the part that is wrong, or the wrapper's own error (a
    ///   key file that cannot be read, a key that is not 32 bytes).
    public static func validate(
        _ url: StoreURL, using schemes: [StoreScheme] = [], secrets: StoreSecrets = StoreSecrets()
    ) async throws {
        _ = try await resolve(url, using: schemes).prepareWrappers(url, secrets: secrets)
    }

    /// Puts `url`'s wrappers around `engine`, an engine ``openEngine(_:using:)`` opened for it.
    public static func wrap(
        _ engine: any OfflineStore, as url: StoreURL, using schemes: [StoreScheme] = [],
        secrets: StoreSecrets = StoreSecrets()
    ) async throws -> any OfflineStore {
        try await wrapped(engine, in: resolve(url, using: schemes).prepareWrappers(url, secrets: secrets))
    }

    /// Opens the engine `url` names without its wrappers (what `sovaria verify` checks beneath
    /// an encrypted store). Every scheme of the URL, wrappers included, and its options are
    /// checked first; the wrappers' secrets are not (``validate(_:using:secrets:)`` checks them).
    public static func openEngine(_ url: StoreURL, using schemes: [StoreScheme] = []) async throws -> any OfflineStore {
        try await resolve(url, using: schemes).openEngine(url)
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

    /// The schemes of a URL, each found and registered, the URL's form checked against them.
    private struct Resolved {
        let openEngine: @Sendable (StoreURL) async throws -> any OfflineStore
        /// Outermost first, as in ``StoreURL/wrappers``.
        let prepares: [@Sendable (StoreURL, StoreSecrets) async throws -> StoreScheme.Wrap]

        /// Each wrapper's check of `url` and `secrets`, outermost first; what puts each around the engine.
        func prepareWrappers(_ url: StoreURL, secrets: StoreSecrets) async throws -> [StoreScheme.Wrap] {
            var wraps: [StoreScheme.Wrap] = []
            for prepare in prepares { wraps.append(try await prepare(url, secrets)) }
            return wraps
        }
    }

    /// `url`'s schemes found among the registered ones and `schemes`, and its options and location
    /// checked against them (a URL made of its parts has met no parser). Nothing is opened.
    private static func resolve(_ url: StoreURL, using schemes: [StoreScheme]) throws(StoreURLError) -> Resolved {
        let known = known(adding: schemes)
        func failure(_ part: String, _ reason: StoreURLError.Reason) -> StoreURLError {
            StoreURLError(url: "\(url)", part: part, reason: reason)
        }
        func registered(_ name: String, isWrapper: Bool) throws(StoreURLError) -> StoreScheme {
            guard let scheme = known[name], scheme.isWrapper == isWrapper else {
                throw failure(name, isWrapper ? .unknownWrapper : .unknownEngine)
            }
            if case .unregistered = scheme.kind {
                throw failure(name, .notRegistered(product: scheme.product))
            }
            return scheme
        }
        // In the order they are written: the outermost wrapper first, the engine last.
        let wrappers = try url.wrappers.map { name throws(StoreURLError) in try registered(name, isWrapper: true) }
        let engine = try registered(url.engine, isWrapper: false)
        let allowed = wrappers.reduce(engine.options) { $0.union($1.options) }
        if let option = url.options.keys.sorted().first(where: { !allowed.contains($0) }) {
            throw failure(option, .unknownOption)
        }
        for scheme in wrappers + [engine] {
            for (option, values) in scheme.optionValues.sorted(by: { $0.key < $1.key }) {
                if let value = url.options[option], !values.contains(value.lowercased()) {
                    throw failure(value, .badValue(option: option, allowed: values))
                }
            }
        }
        switch engine.location {
        case .absent where !url.location.isEmpty: throw failure(url.location, .unexpectedLocation)
        case .required where url.location.isEmpty: throw failure(url.engine + ":", .missingLocation)
        default: break
        }
        guard case .engine(let open) = engine.kind else { throw failure(url.engine, .unknownEngine) }
        return Resolved(
            openEngine: open,
            prepares: wrappers.map { wrapper in
                guard case .wrapper(let prepare) = wrapper.kind else { preconditionFailure("resolved as a wrapper") }
                return prepare
            })
    }

    /// `engine` inside `wraps` (outermost first): the innermost is put on first.
    private static func wrapped(
        _ engine: any OfflineStore, in wraps: [StoreScheme.Wrap]
    ) async throws
        -> any OfflineStore
    {
        var store = engine
        for wrap in wraps.reversed() { store = try await wrap(store) }
        return store
    }
}
