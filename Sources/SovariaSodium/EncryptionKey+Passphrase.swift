import CSodium
import Sovaria

extension EncryptionKey {
    /// How much work and memory Argon2id spends to turn a passphrase into a key: more makes
    /// guessing passphrases from a copy of the files slower, and opening the store slower too.
    public struct DerivationLimits: Sendable, Hashable {
        /// Argon2id's operations limit (`opslimit`): passes over the memory.
        public var operations: Int
        /// Argon2id's memory limit (`memlimit`), in bytes.
        public var memoryBytes: Int

        /// Limits of your own; each must lie within Argon2id's range (see ``minimum``).
        public init(operations: Int, memoryBytes: Int) {
            self.operations = operations
            self.memoryBytes = memoryBytes
        }

        /// For opening a store while the user waits: 2 passes over 64 MiB (about 0.06 s here).
        public static var interactive: Self {
            Self(operations: crypto_pwhash_opslimit_interactive(), memoryBytes: crypto_pwhash_memlimit_interactive())
        }

        /// 3 passes over 256 MiB (about 0.6 s here).
        public static var moderate: Self {
            Self(operations: crypto_pwhash_opslimit_moderate(), memoryBytes: crypto_pwhash_memlimit_moderate())
        }

        /// 4 passes over 1 GiB (seconds), for data that is rarely opened.
        public static var sensitive: Self {
            Self(operations: crypto_pwhash_opslimit_sensitive(), memoryBytes: crypto_pwhash_memlimit_sensitive())
        }

        /// The least Argon2id accepts: 1 pass over 8 KiB. For tests only; it barely slows a guesser.
        public static var minimum: Self {
            Self(operations: crypto_pwhash_opslimit_min(), memoryBytes: crypto_pwhash_memlimit_min())
        }

        static let saltByteCount = Int(crypto_pwhash_SALTBYTES)

        var isSupported: Bool {
            (crypto_pwhash_opslimit_min()...crypto_pwhash_opslimit_max()).contains(operations)
                && (crypto_pwhash_memlimit_min()...crypto_pwhash_memlimit_max()).contains(memoryBytes)
        }
    }

    /// The key of the encrypted data kept in `store`, derived from `passphrase` with Argon2id.
    ///
    /// The first time, it picks a random salt and writes it, `limits` and a check value sealed
    /// with the new key to `store` under ``EncryptedOfflineStore/metadataKey``, as plain JSON (its
    /// format is described in Sources/SovariaSodium/Internal/EncryptionMetadata.swift). Later calls
    /// read them back, so the same passphrase gives the same key; the stored limits win over
    /// `limits`.
    ///
    /// - Parameters:
    ///   - passphrase: The user's passphrase, as UTF-8 bytes (normalize it yourself if it may be
    ///     typed with different Unicode forms).
    ///   - store: The *inner* store, the one the ``EncryptedOfflineStore`` will wrap.
    ///   - limits: Argon2id's work for a new store; ignored when `store` already has settings.
    /// - Throws: `OfflineStoreError` with code `OfflineStoreError.Code.decryptionFailed` when
    ///   the passphrase is not the one the store was created with; `OfflineStoreError.Code.corrupt`
    ///   when the stored settings are damaged; `OfflineStoreError.Code.invalidValue` for limits
    ///   outside Argon2id's range or an empty passphrase; and the errors of `store`.
    /// - Important: Argon2id runs on the global concurrent executor, never on the caller's actor.
    ///   Create a new store's key once, from one task: two first-time calls at once on one store
    ///   can each write a salt, and the key of the one overwritten opens nothing.
    ///
    /// ```swift
    /// let inner = try SQLiteOfflineStore(fileURL: url)
    /// let key = try await EncryptionKey.derive(passphrase: passphrase, store: inner)
    /// let store = EncryptedOfflineStore(wrapping: inner, key: key)
    /// ```
    public static func derive(
        passphrase: String,
        store: any OfflineStore,
        limits: DerivationLimits = .interactive
    ) async throws -> EncryptionKey {
        guard !passphrase.isEmpty else {
            throw OfflineStoreError(
                .invalidValue, "The passphrase is empty: ask the user for one.", engine: .sodium)
        }
        if let json = try await store.get(EncryptedOfflineStore.metadataKey) {
            let metadata = try EncryptionMetadata(json: json)
            let key = try await derive(passphrase: passphrase, salt: Array(metadata.salt), limits: metadata.limits)
            guard metadata.isOpened(by: key) else {
                throw OfflineStoreError(
                    .decryptionFailed,
                    "The passphrase does not open this store: the check value under "
                        + "\(EncryptedOfflineStore.metadataKey) did not decrypt with the key it gives. Enter the "
                        + "passphrase the store was created with.",
                    engine: .sodium,
                    key: EncryptedOfflineStore.metadataKey
                )
            }
            return key
        }
        guard limits.isSupported else {
            throw OfflineStoreError(
                .invalidValue,
                "Argon2id limits of \(limits.operations) operations and \(limits.memoryBytes) bytes are outside its "
                    + "range: use .interactive, .moderate or .sensitive.",
                engine: .sodium
            )
        }
        try Sodium.initialize()
        var salt = [UInt8](repeating: 0, count: DerivationLimits.saltByteCount)
        randombytes_buf(&salt, salt.count)
        let key = try await derive(passphrase: passphrase, salt: salt, limits: limits)
        try await store.set(
            EncryptedOfflineStore.metadataKey, EncryptionMetadata(salt: salt, limits: limits, key: key).json)
        return key
    }

    /// Argon2id of `passphrase` with `salt` and `limits`, off the caller's executor: it takes
    /// from milliseconds to seconds of CPU.
    @concurrent
    private static func derive(
        passphrase: String,
        salt: [UInt8],
        limits: DerivationLimits
    ) async throws(OfflineStoreError) -> EncryptionKey {
        try EncryptionKey { bytes throws(OfflineStoreError) in
            var passphrase = passphrase
            let result = passphrase.withUTF8 { passphraseBytes in
                passphraseBytes.withMemoryRebound(to: CChar.self) { characters in
                    crypto_pwhash(
                        bytes, UInt64(EncryptionKey.byteCount),
                        characters.baseAddress!, UInt64(characters.count),  // not empty: checked by the caller
                        salt, UInt64(limits.operations), limits.memoryBytes, crypto_pwhash_ALG_ARGON2ID13
                    )
                }
            }
            guard result == 0 else {
                throw OfflineStoreError(
                    .full,
                    "Argon2id could not allocate its \(limits.memoryBytes) bytes of memory: free memory, or create "
                        + "the store with smaller limits.",
                    engine: .sodium,
                    nativeCode: result
                )
            }
        }
    }
}
