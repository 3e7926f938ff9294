import Foundation
import Sovaria
import SovariaSodium

/// Opens a ``StoreLocation``: the engine, and for `encrypted+…` the encryption layer with the
/// key from `--key-file` or a passphrase.
struct StoreOpener {
    /// `--key-file FILE`: 32 raw bytes.
    var keyFile: String?
    /// The passphrase variable to read (`SOVARIA_PASSPHRASE`, or a per-side one for migrate).
    var passphraseVariables: [String] = ["SOVARIA_PASSPHRASE"]

    /// A store ready to use, with the engine underneath for engine-level work (`verify`).
    struct Opened {
        let store: any OfflineStore
        let engine: any OfflineStore
        let location: StoreLocation
    }

    func open(_ location: StoreLocation, mustExist: Bool) async throws(CommandFailure) -> Opened {
        // The key and every scheme first: a refused key creates no store (no plain one where an
        // encrypted one was meant).
        let secrets = location.isEncrypted ? try secrets(for: location) : StoreSecrets()
        do {
            try await OfflineStores.validate(location.url, using: StoreLocation.schemes, secrets: secrets)
        } catch let error as StoreURLError {
            throw StoreLocation.failure(error)
        } catch {
            throw CommandFailure(.usage, "Cannot use the key for \(location): \(error)")
        }
        let engine = try await location.openEngine(mustExist: mustExist)
        // Engines such as PostgreSQL connect on first use: one small read turns a wrong address or
        // password into "cannot open" here, not into a failure halfway through the work.
        do {
            _ = try await engine.keys(EncryptedOfflineStore.metadataKey)
        } catch {
            throw CommandFailure(.cannotOpen, "Cannot open \(location): \(error)")
        }
        guard !location.url.wrappers.isEmpty else { return Opened(store: engine, engine: engine, location: location) }
        let store = try await wrapped(engine, at: location, secrets: secrets)
        // A raw key carries no check value: the first value that does not open says the key is wrong.
        do {
            // As bytes: a first value that is not UTF-8 is a value, not a reason to refuse the store.
            _ = try await store.dataEntries("", after: nil, limit: 1)
        } catch let error as OfflineStoreError {
            guard error.code == .decryptionFailed else {
                throw CommandFailure(.cannotOpen, "Cannot read \(location): \(error)")
            }
            throw CommandFailure(
                .wrongKey,
                "The key does not open \(location): its first value does not decrypt. Check --key-file or the "
                    + "passphrase; if the key is right, run `sovaria verify` to list damaged values.")
        } catch {
            throw CommandFailure(.cannotOpen, "Cannot read \(location): \(error)")
        }
        return Opened(store: store, engine: engine, location: location)
    }

    /// The engine inside the URL's wrappers, with `secrets` (``secrets(for:)``).
    private func wrapped(
        _ engine: any OfflineStore, at location: StoreLocation, secrets: StoreSecrets
    ) async throws(CommandFailure)
        -> any OfflineStore
    {
        do {
            return try await OfflineStores.wrap(
                engine, as: location.url, using: StoreLocation.schemes, secrets: secrets)
        } catch let error as OfflineStoreError where error.code == .decryptionFailed {
            throw CommandFailure(.wrongKey, "The passphrase does not open \(location). Check it and try again.")
        } catch {
            throw CommandFailure(.cannotOpen, "Cannot open \(location) with its key: \(error)")
        }
    }

    /// For `encrypted+`: the key from `--key-file` (or the URL's `key-file=`), or a passphrase from
    /// the environment or the terminal.
    private func secrets(for location: StoreLocation) throws(CommandFailure) -> StoreSecrets {
        if let keyFile = keyFile ?? location.url.options["key-file"] {
            guard let bytes = FileManager.default.contents(atPath: keyFile) else {
                throw CommandFailure(.usage, "Cannot read the key file \(keyFile).")
            }
            guard bytes.count == EncryptionKey.byteCount else {
                throw CommandFailure(
                    .usage,
                    "The key file \(keyFile) holds \(bytes.count) bytes; a key is exactly \(EncryptionKey.byteCount) raw "
                        + "bytes (make one with `head -c 32 /dev/urandom > key`).")
            }
            return StoreSecrets(key: Array(bytes))
        }
        var secrets = StoreSecrets()
        secrets.passphraseVariables = passphraseVariables
        if secrets.resolvedPassphrase == nil, isatty(STDIN_FILENO) == 1,
            let typed = getpass("Passphrase for \(location): ")
        {
            secrets.passphrase = String(cString: typed)
        }
        guard secrets.resolvedPassphrase != nil else {
            throw CommandFailure(
                .usage,
                "\(location) is encrypted: give the key with --key-file FILE (32 raw bytes) or the passphrase in "
                    + "\(passphraseVariables.joined(separator: " or ")).")
        }
        return secrets
    }
}
