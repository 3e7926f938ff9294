import CSodium
import Sovaria

/// libsodium set-up and the errors this module throws.
enum Sodium {
    /// `sodium_init()`'s answer, asked once per process (a static `let` is initialized once,
    /// thread-safely): 0 the first time, 1 when something else initialized it first, -1 on failure.
    private static let initResult = sodium_init()

    /// Makes sure libsodium is initialized (it picks its fastest code paths and seeds its random
    /// generator); throws if it could not be.
    static func initialize() throws(OfflineStoreError) {
        guard initResult >= 0 else {
            throw OfflineStoreError(
                .unsupported,
                "libsodium could not be initialized (sodium_init() returned -1): check that the process can read "
                    + "the system's random source (getrandom or /dev/urandom).",
                engine: .sodium,
                nativeCode: initResult
            )
        }
    }

    /// The error of a value that could not be decrypted: it names the key and says what to do.
    static func decryptionFailed(_ key: String, _ reason: String) -> OfflineStoreError {
        OfflineStoreError(
            .decryptionFailed,
            "The value of \(key.debugDescription) could not be decrypted: \(reason). Open the store with the key "
                + "it was written with; if the value was damaged, delete the key and write it again.",
            engine: .sodium,
            key: key
        )
    }
}
