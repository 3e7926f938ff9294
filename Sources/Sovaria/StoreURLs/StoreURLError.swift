/// A store URL that cannot be parsed or opened as written: which part is wrong, and why.
///
/// Its description names the part and lists the forms a store URL takes (``StoreURL/forms``).
/// Errors of the engine itself (a folder that cannot be created, a server that does not answer)
/// are ``OfflineStoreError``s instead.
public struct StoreURLError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Why the URL was refused.
    public enum Reason: Hashable, Sendable {
        /// No `ENGINE:` before the location.
        case missingScheme
        /// A scheme that is no engine Sovaria has or the app registered.
        case unknownEngine
        /// A wrapper (`NAME+ENGINE:`) that Sovaria does not have and the app did not register.
        case unknownWrapper
        /// A Sovaria engine or wrapper whose module the app does not link (or did not pass to
        /// ``OfflineStores``): add `product` to the target and register its scheme.
        case notLinked(product: String)
        /// An option the engine and its wrappers do not take.
        case unknownOption
        /// A `durability=` other than `synced` or `flushed`.
        case badDurability
        /// An option written without `=VALUE`, or given twice.
        case badOption
        /// A `%` not followed by two hexadecimal digits, `%00`, or bytes that are not UTF-8.
        case badPercentEncoding
        /// An engine that needs a folder or file was given none.
        case missingLocation
        /// An engine that takes no location was given one (`memory:` takes none).
        case unexpectedLocation
        /// An encrypted store without a key: no key, key file or passphrase was given.
        case missingKey
        /// No URL was passed and ``OfflineStores/environmentVariable`` is not set.
        case missingStore
    }

    /// The URL as given.
    public let url: String
    /// The part of ``url`` that is wrong (a scheme, an option, a location), as written.
    public let part: String
    /// Why.
    public let reason: Reason

    /// An error about `part` of `url`.
    public init(url: String, part: String, reason: Reason) {
        self.url = url
        self.part = part
        self.reason = reason
    }

    /// What is wrong, then every form a store URL takes.
    public var description: String {
        "`\(url)` is not a store URL Sovaria can open: \(explanation).\n\(StoreURL.forms)"
    }

    private var explanation: String {
        switch reason {
        case .missingScheme: "it has no `ENGINE:` in front"
        case .unknownEngine: "`\(part)` is not an engine"
        case .unknownWrapper: "`\(part)` is not a wrapper (encrypted, checksummed)"
        case .notLinked(let product):
            "`\(part)` is in the \(product) product, which this program does not link: add \(product) to the target's "
                + "dependencies and pass its scheme (OfflineStores.register(.\(part)))"
        case .unknownOption: "`\(part)` is not an option of this engine"
        case .badDurability: "durability `\(part)` is not synced or flushed"
        case .badOption: "the option `\(part)` needs one `=VALUE`, once"
        case .badPercentEncoding: "`\(part)` is not valid percent-encoding (%XX, UTF-8, not %00)"
        case .missingLocation: "`\(part)` needs a path"
        case .unexpectedLocation: "`\(part)` takes no path"
        case .missingKey:
            "`\(part)` needs a key: key-file=FILE in the URL, StoreSecrets' key or passphrase, or the passphrase in "
                + "SOVARIA_PASSPHRASE"
        case .missingStore: "no store URL was given and \(OfflineStores.environmentVariable) is not set"
        }
    }
}
