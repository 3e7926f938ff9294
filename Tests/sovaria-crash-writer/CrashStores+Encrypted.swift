import Sovaria
import SovariaSodium

extension CrashStores {
    /// `encrypted-<engine>`: the engine behind the encryption wrapper.
    static let encryptedPrefix = "encrypted-"
    /// The fixed key of the encrypted stores (test data only).
    static let encryptionKeyBytes = [UInt8](repeating: 7, count: 32)

    /// The store `engine` names, or for `encrypted-<engine>` that store wrapped in
    /// `EncryptedOfflineStore` with ``encryptionKeyBytes``.
    static func open(
        possiblyEncrypted engine: String, location: String, durability: Durability
    ) throws
        -> any OfflineStore
    {
        guard engine.hasPrefix(encryptedPrefix) else {
            return try open(engine, location: location, durability: durability)
        }
        let inner = try open(
            String(engine.dropFirst(encryptedPrefix.count)), location: location, durability: durability)
        return EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey(bytes: encryptionKeyBytes))
    }
}
