import Foundation
import Sovaria

extension StoreScheme {
    /// ``EncryptedOfflineStore`` around the engine: `encrypted+ENGINE:…[?key-file=FILE]`.
    ///
    /// The key: ``StoreSecrets/key``, else the key file (``StoreSecrets/keyFile`` or the URL's
    /// `key-file=`, 32 raw bytes), else a passphrase (``StoreSecrets/passphrase`` or
    /// `SOVARIA_PASSPHRASE`), which derives the key with the salt the store keeps. A key or key file
    /// is read and checked before the engine opens, so a refused one leaves no store behind.
    ///
    /// - Throws: ``StoreURLError/Reason/missingKey`` when none is given;
    ///   `OfflineStoreError.Code.permissionDenied` for a key file that cannot be read;
    ///   `OfflineStoreError.Code.invalidValue` for a key or key file that is not 32 bytes;
    ///   `OfflineStoreError.Code.decryptionFailed` for a passphrase the store was not made with.
    public static let encrypted = wrapper("encrypted", product: "SovariaSodium", options: ["key-file"]) {
        url, secrets in
        if let key = secrets.key {
            let key = try EncryptionKey(bytes: key)
            return { store in EncryptedOfflineStore(wrapping: store, key: key) }
        }
        if let keyFile = secrets.keyFile ?? url.options["key-file"] {
            guard let bytes = FileManager.default.contents(atPath: keyFile) else {
                throw OfflineStoreError(
                    .permissionDenied, "Cannot read the key file \(keyFile): check its path and permissions.",
                    engine: .sodium)
            }
            let key = try EncryptionKey(bytes: bytes)
            return { store in EncryptedOfflineStore(wrapping: store, key: key) }
        }
        guard let passphrase = secrets.resolvedPassphrase else {
            throw StoreURLError(url: "\(url)", part: "encrypted", reason: .missingKey)
        }
        return { store in try await EncryptedOfflineStore(wrapping: store, passphrase: passphrase) }
    }
}
