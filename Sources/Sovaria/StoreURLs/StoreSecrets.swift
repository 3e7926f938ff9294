import Foundation

/// What a wrapper that needs a secret (`encrypted+…`) opens the store with, when the URL does not
/// name a key file.
///
/// Tried in this order: ``key``, ``keyFile`` (else the URL's `key-file=`), ``passphrase``, then
/// the first of ``passphraseVariables`` set in ``environment``.
public struct StoreSecrets: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// A raw key: 32 bytes. Default: none.
    public var key: [UInt8]?
    /// A file holding the raw key (32 bytes). Default: none (the URL's `key-file=`, if any).
    public var keyFile: String?
    /// A passphrase the key is derived from. Default: none.
    public var passphrase: String?
    /// The environment variables that may hold the passphrase. Default: `SOVARIA_PASSPHRASE`.
    public var passphraseVariables: [String] = ["SOVARIA_PASSPHRASE"]
    /// Where those variables are read. Default: this process's environment.
    public var environment: [String: String] = ProcessInfo.processInfo.environment

    /// No secret given: the URL's key file or the passphrase variable.
    public init() {}

    /// A raw key, a key file or a passphrase.
    public init(key: [UInt8]? = nil, keyFile: String? = nil, passphrase: String? = nil) {
        self.key = key
        self.keyFile = keyFile
        self.passphrase = passphrase
    }

    /// What it holds, never the secrets themselves: `StoreSecrets(key: 32 bytes, passphrase: set)`.
    public var description: String {
        let parts = [
            key.map { "key: \($0.count) bytes" }, keyFile.map { "keyFile: \($0)" },
            passphrase.map { _ in "passphrase: set" },
        ].compactMap { $0 }
        return "StoreSecrets(" + parts.joined(separator: ", ") + ")"
    }

    /// The same as ``description``: a log or a debugger never shows a key or a passphrase.
    public var debugDescription: String { description }

    /// No children: `dump` and Mirror-based printing show ``description`` only.
    public var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// The passphrase given or found in the environment, if any (an empty one counts as none).
    public var resolvedPassphrase: String? {
        if let passphrase, !passphrase.isEmpty { return passphrase }
        return passphraseVariables.lazy.compactMap { environment[$0] }.first { !$0.isEmpty }
    }
}
