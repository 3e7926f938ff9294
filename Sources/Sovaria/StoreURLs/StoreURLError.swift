/// A store URL that cannot be parsed or opened as written: which part is wrong, and why.
///
/// Its description is one line: the URL, the part that is wrong and what to do, pointing to
/// ``StoreURL/forms`` for the forms a store URL takes.
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
        /// A Sovaria engine or wrapper the app did not register (``OfflineStores/register(_:)``) nor
        /// pass in `using:`; its scheme is in the library product `product`.
        case notRegistered(product: String)
        /// An option the engine and its wrappers do not take.
        case unknownOption
        /// A `durability=` other than `synced` or `flushed`.
        case badDurability
        /// A value `option` does not take (the part); it takes one of `allowed`
        /// (``StoreScheme/optionValues``).
        case badValue(option: String, allowed: [String])
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

    /// What is wrong and what to do, on one line; the forms are in ``StoreURL/forms``.
    public var description: String {
        "`\(url)` is not a store URL Sovaria can open: \(explanation) (StoreURL.forms lists the forms)."
    }

    /// What is wrong with ``part`` and what to do, without the URL: for a message of the caller's
    /// own (the `sovaria` command points to its `help` for the forms).
    public var explanation: String {
        switch reason {
        case .missingScheme: "it has no `ENGINE:` in front"
        case .unknownEngine: "`\(part)` is not an engine"
        case .unknownWrapper: "`\(part)` is not a wrapper (encrypted, checksummed)"
        case .notRegistered(let product):
            "`\(part)` is not registered: call `OfflineStores.register(.\(part))` at launch, or pass `using: "
                + "[.\(part)]`; the scheme comes with `import \(product)` (the \(product) product)"
        case .unknownOption: "`\(part)` is not an option of this engine"
        case .badDurability: "durability `\(part)` is not synced or flushed"
        case .badValue(let option, let allowed):
            "`\(part)` is not a value of \(option)=: use "
                + allowed.map { "\(option)=\($0)" }.joined(separator: ", ")
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
