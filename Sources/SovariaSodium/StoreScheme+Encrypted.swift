import Foundation
import Sovaria

extension StoreScheme {
    /// ``EncryptedOfflineStore`` around the engine: `encrypted+ENGINE:…[?key-file=FILE]`.
    ///
    /// The key: ``StoreSecrets/key``, else the key file (``StoreSecrets/keyFile`` or the URL's
    /// `key-file=`, 32 raw bytes), else a passphrase (``StoreSecrets/passphrase`` or
    /// `SOVARIA_PASSPHRASE`), which derives the key with the salt the store keeps.
    ///
    /// - Throws: ``StoreURLError/Reason/missingKey`` when none is given;
    ///   `OfflineStoreError.Code.invalidValue` for a key file that is not 32 bytes;
    ///   `OfflineStoreError.Code.decryptionFailed` for a passphrase the store was not made with.
    public static let encrypted = wrapper("encrypted", product: "SovariaSodium", options: ["key-file"]) {
        store, url, secrets in
        if let key = secrets.key {
            return EncryptedOfflineStore(wrapping: store, key: try EncryptionKey(bytes: key))
        }
        if let keyFile = secrets.keyFile ?? url.options["key-file"] {
            guard let bytes = FileManager.default.contents(atPath: keyFile) else {
                throw OfflineStoreError(
                    .permissionDenied, "Cannot read the key file \(keyFile): check its path and permissions.",
                    engine: .sodium)
            }
            return EncryptedOfflineStore(wrapping: store, key: try EncryptionKey(bytes: bytes))
        }
        guard let passphrase = secrets.resolvedPassphrase else {
            throw StoreURLError(url: "\(url)", part: "encrypted", reason: .missingKey)
        }
        return try await EncryptedOfflineStore(wrapping: store, passphrase: passphrase)
    }
}
