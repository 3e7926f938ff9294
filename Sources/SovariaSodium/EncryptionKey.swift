import CSodium
import Sovaria

/// The 256-bit secret key of an ``EncryptedOfflineStore``: random, from 32 raw bytes, or derived
/// from a passphrase (see ``derive(passphrase:store:limits:)``).
///
/// The bytes live in memory from `sodium_malloc`: locked against swapping where the system allows
/// it (a failed lock under `RLIMIT_MEMLOCK` is not an error), fenced by guard pages, read-only
/// after creation, and wiped when the key is released.
///
/// - Important: Immutable and safe to share between any number of tasks and stores. Keep a key
///   made with ``random()`` somewhere safe (the Keychain, a secret manager): without it, the
///   values are gone for good.
///
/// ```swift
/// let key = try EncryptionKey.random()
/// let secret = key.withUnsafeBytes { Array($0) }   // to keep in the Keychain
/// let sameKey = try EncryptionKey(bytes: secret)
/// ```
public final class EncryptionKey: @unchecked Sendable {
    // @unchecked: `bytes` is written only in init, read-only (mprotect) afterwards, freed in deinit.

    /// The length of a key: 32 bytes.
    public static let byteCount = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)

    /// The key's bytes, in `sodium_malloc` memory.
    let bytes: UnsafeMutablePointer<UInt8>

    /// Allocates protected memory for a key and lets `fill` write its ``byteCount`` bytes; when
    /// `fill` throws, the memory is wiped and freed.
    init(
        filling fill: (UnsafeMutablePointer<UInt8>) throws(OfflineStoreError) -> Void
    ) throws(OfflineStoreError) {
        try Sodium.initialize()
        // sodium_malloc mlocks the pages itself and carries on when RLIMIT_MEMLOCK refuses.
        guard let memory = sodium_malloc(Self.byteCount) else {
            throw OfflineStoreError(
                .full,
                "libsodium could not allocate protected memory for an encryption key: free memory, or raise the "
                    + "process's memory limits.",
                engine: .sodium
            )
        }
        let bytes = memory.bindMemory(to: UInt8.self, capacity: Self.byteCount)
        do {
            try fill(bytes)
        } catch {
            sodium_free(memory)  // wipes the bytes before freeing them
            throw error
        }
        _ = sodium_mprotect_readonly(memory)
        self.bytes = bytes
    }

    /// A new key from the operating system's secure random source.
    ///
    /// Throws `OfflineStoreError` only when libsodium cannot start or allocate memory.
    public static func random() throws(OfflineStoreError) -> EncryptionKey {
        try EncryptionKey { bytes in crypto_aead_xchacha20poly1305_ietf_keygen(bytes) }
    }

    /// A key from exactly ``byteCount`` (32) raw bytes, for example one kept in the Keychain.
    ///
    /// Any other length throws `OfflineStoreError` with code
    /// `OfflineStoreError.Code.invalidValue`. Copy the bytes from memory you wipe yourself:
    /// the key keeps its own protected copy.
    public convenience init(bytes: some Collection<UInt8>) throws(OfflineStoreError) {
        guard bytes.count == Self.byteCount else {
            throw OfflineStoreError(
                .invalidValue,
                "An encryption key must be exactly \(Self.byteCount) bytes, this one has \(bytes.count): pass the "
                    + "bytes of a key made by EncryptionKey.random(), or derive one from a passphrase.",
                engine: .sodium
            )
        }
        try self.init { target in
            _ = UnsafeMutableBufferPointer(start: target, count: Self.byteCount).initialize(from: bytes)
        }
    }

    deinit {
        let memory = UnsafeMutableRawPointer(bytes)
        _ = sodium_mprotect_readwrite(memory)
        sodium_memzero(memory, Self.byteCount)
        sodium_free(memory)
    }

    /// Calls `body` with the key's 32 bytes, to save them somewhere safe.
    ///
    /// - Important: Don't let the bytes escape `body` in memory that is never wiped.
    public func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) throws -> Result) rethrows -> Result {
        try body(UnsafeRawBufferPointer(start: bytes, count: Self.byteCount))
    }
}
