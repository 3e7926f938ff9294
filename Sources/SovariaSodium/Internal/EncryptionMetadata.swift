import Foundation
import Sovaria

/// What a passphrase-keyed store keeps in its inner store under
/// ``EncryptedOfflineStore/metadataKey``, in plain JSON (none of it is secret):
///
///     {"format":1,"kdf":"argon2id13","opslimit":2,"memlimit":67108864,
///      "salt":"<16 bytes, base64>","verifier":"v1:…"}
///
/// `verifier` is ``verifierText`` sealed with the derived key under the metadata key's name, so
/// a wrong passphrase is found when the store opens, not at the first read.
struct EncryptionMetadata: Codable, Equatable {
    /// The version of this record.
    var format: Int
    /// The key derivation function; only `"argon2id13"` exists.
    var kdf: String
    /// Argon2id's operations limit (passes over memory).
    var opslimit: Int
    /// Argon2id's memory limit, in bytes.
    var memlimit: Int
    /// The random salt, `crypto_pwhash_SALTBYTES` (16) bytes.
    var salt: Data
    /// ``verifierText`` in the stored form, sealed with the derived key.
    var verifier: String

    static let currentFormat = 1
    static let argon2id = "argon2id13"
    static let verifierText = "sovaria-encryption-key-check"

    var limits: EncryptionKey.DerivationLimits {
        EncryptionKey.DerivationLimits(operations: opslimit, memoryBytes: memlimit)
    }

    /// The record of a new store, whose key `key` was derived with `salt` and `limits`.
    init(salt: [UInt8], limits: EncryptionKey.DerivationLimits, key: EncryptionKey) {
        format = Self.currentFormat
        kdf = Self.argon2id
        opslimit = limits.operations
        memlimit = limits.memoryBytes
        self.salt = Data(salt)
        verifier = SealedValue.sealText(Self.verifierText, name: EncryptedOfflineStore.metadataKey, with: key)
    }

    /// Reads the JSON kept in the store; a record this version can't use is ``OfflineStoreError/Code/corrupt``.
    init(json: String) throws(OfflineStoreError) {
        do {
            self = try JSONDecoder().decode(Self.self, from: Data(json.utf8))
        } catch {
            throw Self.unusable("it is not valid JSON with the expected fields (\(error))")
        }
        guard format == Self.currentFormat, kdf == Self.argon2id else {
            throw Self.unusable("it was written by a newer version (format \(format), kdf \(kdf)); update Sovaria")
        }
        guard salt.count == EncryptionKey.DerivationLimits.saltByteCount else {
            throw Self.unusable(
                "its salt has \(salt.count) bytes instead of \(EncryptionKey.DerivationLimits.saltByteCount)")
        }
        guard limits.isSupported else {
            throw Self.unusable("its limits (opslimit \(opslimit), memlimit \(memlimit)) are outside Argon2id's range")
        }
    }

    /// The JSON to keep in the store.
    var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        // Encoding a struct of strings, integers and Data cannot fail.
        let data = (try? encoder.encode(self)) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }

    /// Whether `key` opens ``verifier``: `false` means a wrong passphrase.
    func isOpened(by key: EncryptionKey) -> Bool {
        var verifier = verifier
        let opened = verifier.withUTF8 { stored in
            try? SealedValue.openString(
                UnsafeRawBufferPointer(stored), name: EncryptedOfflineStore.metadataKey, with: key)
        }
        return opened.map { $0.utf8.elementsEqual(Self.verifierText.utf8) } ?? false
    }

    private static func unusable(_ reason: String) -> OfflineStoreError {
        OfflineStoreError(
            .corrupt,
            "The encryption settings under \(EncryptedOfflineStore.metadataKey) can't be used: \(reason). Restore "
                + "the store from a backup; without its salt the passphrase can't recreate the key.",
            engine: .sodium,
            key: EncryptedOfflineStore.metadataKey
        )
    }
}
