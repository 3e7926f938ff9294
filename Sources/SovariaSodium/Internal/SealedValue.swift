import CSodium
import Foundation
import Sovaria

/// The stored forms of an encrypted value, sealed with XChaCha20-Poly1305 (IETF) under a fresh
/// random nonce, with the associated data `version ‖ UTF-8 bytes of the key name`: the version
/// and the key name are authenticated, so a value copied under another key, or relabelled as
/// another version, does not open.
///
/// - Version 2, bytes, written when the inner store takes bytes
///   (``StoreCapabilities/byteValues``): `0x02 ‖ nonce[24] ‖ ciphertext[n] ‖ tag[16]`, n + 41
///   bytes.
/// - Version 1, text, written when it keeps text only, and still read everywhere:
///   `"v1:" + base64url-without-padding(nonce[24] ‖ ciphertext[n] ‖ tag[16])`,
///   `3 + ceil(4 × (n + 40) / 3)` bytes.
///
/// The two are told apart by their first byte (`v` or `0x02`). Either carries any plaintext
/// bytes. The hot paths avoid intermediate arrays: one scratch buffer (on the stack for small
/// values), zeroed after use, and the result written in place.
enum SealedValue {
    /// The text every version-1 value starts with.
    static let textPrefix: StaticString = "v1:"
    static let nonceByteCount = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagByteCount = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)
    private static let textVersion: UInt8 = 1
    private static let bytesVersion: UInt8 = 2

    /// The version-1 form of `plaintext` under the key named `name`; a new random nonce every call.
    static func sealText(_ plaintext: UnsafeRawBufferPointer, name: String, with key: EncryptionKey) -> String {
        let sealedCount = nonceByteCount + plaintext.count + tagByteCount
        return withUnsafeTemporaryAllocation(byteCount: sealedCount, alignment: 1) { sealed in
            encrypt(plaintext, version: textVersion, name: name, with: key, into: sealed)
            let prefixCount = textPrefix.utf8CodeUnitCount
            let count = prefixCount + Base64URL.encodedCount(of: sealedCount)
            return String(unsafeUninitializedCapacity: count) { text in
                let start = text.baseAddress!
                start.initialize(from: textPrefix.utf8Start, count: prefixCount)
                Base64URL.encode(
                    UnsafeBufferPointer(sealed.assumingMemoryBound(to: UInt8.self)), into: start + prefixCount)
                return count
            }
        }
    }

    /// The version-1 form of the string `value`.
    static func sealText(_ value: String, name: String, with key: EncryptionKey) -> String {
        var value = value
        return value.withUTF8 { sealText(UnsafeRawBufferPointer($0), name: name, with: key) }
    }

    /// The version-2 form of `plaintext` under the key named `name`; a new random nonce every call.
    static func sealBytes(_ plaintext: UnsafeRawBufferPointer, name: String, with key: EncryptionKey) -> Data {
        var stored = Data(count: 1 + nonceByteCount + plaintext.count + tagByteCount)
        stored.withUnsafeMutableBytes { buffer in
            buffer[0] = bytesVersion
            encrypt(
                plaintext, version: bytesVersion, name: name, with: key,
                into: UnsafeMutableRawBufferPointer(rebasing: buffer[1...]))
        }
        return stored
    }

    /// `write` with its value sealed: as bytes (version 2) when `asBytes`, else as text (version 1).
    static func seal(_ write: StoreWrite, asBytes: Bool, with key: EncryptionKey) -> StoreWrite {
        let name = write.key
        if asBytes {
            return write.withValueBytes { .setData(key: name, data: sealBytes($0, name: name, with: key)) } ?? write
        }
        return write.withValueBytes { .set(key: name, value: sealText($0, name: name, with: key)) } ?? write
    }

    /// Opens `stored` (either form) under the key named `name`, hands the plaintext to `body`
    /// and returns what it returns; an ``OfflineStoreError/Code/decryptionFailed`` error naming
    /// the key when it does not open. The plaintext is valid only while `body` runs.
    static func open<Value>(
        _ stored: UnsafeRawBufferPointer, name: String, with key: EncryptionKey,
        _ body: (UnsafeRawBufferPointer) throws(OfflineStoreError) -> Value
    ) throws(OfflineStoreError) -> Value {
        try withSealed(stored, name: name) { (sealed, version) throws(OfflineStoreError) in
            try decrypt(sealed, version: version, name: name, with: key, body)
        }
    }

    /// Calls `body` with the sealed bytes (`nonce ‖ ciphertext ‖ tag`) of `stored`, either form,
    /// and the form's version.
    private static func withSealed<Value>(
        _ stored: UnsafeRawBufferPointer, name: String,
        _ body: (UnsafeRawBufferPointer, UInt8) throws(OfflineStoreError) -> Value
    ) throws(OfflineStoreError) -> Value {
        if stored.first == bytesVersion {
            return try body(UnsafeRawBufferPointer(rebasing: stored[1...]), bytesVersion)
        }
        let prefixCount = textPrefix.utf8CodeUnitCount
        guard stored.count >= prefixCount,
            stored.prefix(prefixCount).elementsEqual(
                UnsafeRawBufferPointer(start: textPrefix.utf8Start, count: prefixCount))
        else { throw Sodium.decryptionFailed(name, Failure.notSealed.reason) }
        let encoded = UnsafeRawBufferPointer(rebasing: stored[prefixCount...]).assumingMemoryBound(to: UInt8.self)
        let capacity = Base64URL.maxDecodedCount(of: encoded.count)
        guard capacity >= nonceByteCount + tagByteCount else {
            throw Sodium.decryptionFailed(name, Failure.truncated.reason)
        }
        return try withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) {
            (sealed) throws(OfflineStoreError) in
            guard let sealedCount = Base64URL.decode(encoded, into: sealed.baseAddress!) else {
                throw Sodium.decryptionFailed(name, Failure.notSealed.reason)
            }
            return try body(UnsafeRawBufferPointer(start: sealed.baseAddress, count: sealedCount), textVersion)
        }
    }

    /// The plaintext of `stored` (either form) as a string: ``OfflineStoreError/Code/notUTF8``
    /// when it is bytes that are not UTF-8.
    static func openString(
        _ stored: UnsafeRawBufferPointer, name: String, with key: EncryptionKey
    ) throws(OfflineStoreError)
        -> String
    {
        try open(stored, name: name, with: key) { (plaintext) throws(OfflineStoreError) in
            try StoreValue.string(plaintext, key: name, engine: .sodium)
        }
    }

    /// Opens `stored` (either form) into `scratch`, which grows when it is too small and is meant to
    /// be reused from one value to the next, and returns the plaintext's length. The caller zeroes
    /// the plaintext when done with it.
    static func open(
        _ stored: UnsafeRawBufferPointer, name: String, with key: EncryptionKey, into scratch: inout [UInt8]
    ) throws(OfflineStoreError) -> Int {
        try withSealed(stored, name: name) { (sealed, version) throws(OfflineStoreError) in
            let count = try plaintextCount(of: sealed, name: name)
            // At least one byte: an empty value still needs a pointer for libsodium to write through.
            if scratch.count < max(count, 1) { scratch = [UInt8](repeating: 0, count: max(count, 1)) }
            // `withUnsafeMutableBytes` rethrows untyped errors: carry the typed one out in a `Result`.
            try scratch.withUnsafeMutableBytes { plaintext in
                Result { () throws(OfflineStoreError) in
                    try decrypt(sealed, version: version, name: name, with: key, into: plaintext)
                }
            }.get()
            return count
        }
    }

    /// The plaintext of `stored` (either form) as bytes.
    static func openData(
        _ stored: UnsafeRawBufferPointer, name: String, with key: EncryptionKey
    ) throws(OfflineStoreError)
        -> Data
    {
        try withSealed(stored, name: name) { (sealed, version) throws(OfflineStoreError) in
            try decryptData(sealed, version: version, name: name, with: key)
        }
    }

    /// Why a stored value did not open.
    private enum Failure {
        case notSealed, truncated, rejected

        var reason: String {
            switch self {
            case .notSealed:
                "it is not in an encrypted stored form (\"\(SealedValue.textPrefix)\" and URL-safe base64, or the byte 2 "
                    + "and the sealed bytes), so it was written without encryption, by a newer version, or damaged"
            case .truncated:
                "it is too short to hold a nonce and an authentication tag, so it was cut short"
            case .rejected:
                "authentication failed: the store was opened with another key, or the value was changed or moved "
                    + "here from another key"
            }
        }
    }

    /// Writes `nonce ‖ ciphertext ‖ tag` of `plaintext` into `sealed`, which holds exactly that many bytes.
    private static func encrypt(
        _ plaintext: UnsafeRawBufferPointer, version: UInt8, name: String, with key: EncryptionKey,
        into sealed: UnsafeMutableRawBufferPointer
    ) {
        withAssociatedData(name, version: version) { associatedData in
            let nonce = sealed.baseAddress!.assumingMemoryBound(to: UInt8.self)
            randombytes_buf(nonce, nonceByteCount)
            var ciphertextCount: UInt64 = 0
            _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                nonce + nonceByteCount, &ciphertextCount,
                plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
                associatedData.baseAddress, UInt64(associatedData.count),
                nil, nonce, key.bytes
            )
        }
    }

    /// Opens `sealed` (`nonce ‖ ciphertext ‖ tag`) into a scratch buffer, hands it to `body`,
    /// then zeroes it.
    private static func decrypt<Value>(
        _ sealed: UnsafeRawBufferPointer, version: UInt8, name: String, with key: EncryptionKey,
        _ body: (UnsafeRawBufferPointer) throws(OfflineStoreError) -> Value
    ) throws(OfflineStoreError) -> Value {
        let plaintextCount = try self.plaintextCount(of: sealed, name: name)
        // At least one byte: an empty value still needs a pointer for libsodium to write through.
        return try withUnsafeTemporaryAllocation(byteCount: max(plaintextCount, 1), alignment: 1) {
            (plaintext) throws(OfflineStoreError) in
            defer { sodium_memzero(plaintext.baseAddress, plaintext.count) }
            try decrypt(sealed, version: version, name: name, with: key, into: plaintext)
            return try body(UnsafeRawBufferPointer(start: plaintext.baseAddress, count: plaintextCount))
        }
    }

    /// Opens `sealed` straight into a new `Data`: no scratch buffer, no copy.
    private static func decryptData(
        _ sealed: UnsafeRawBufferPointer, version: UInt8, name: String, with key: EncryptionKey
    ) throws(OfflineStoreError) -> Data {
        var plaintext = Data(count: try plaintextCount(of: sealed, name: name))
        guard !plaintext.isEmpty else {
            // Still authenticated: an empty value's tag must match too.
            return try decrypt(sealed, version: version, name: name, with: key) { _ in Data() }
        }
        let failure: OfflineStoreError? = plaintext.withUnsafeMutableBytes { buffer in
            do throws(OfflineStoreError) {
                try decrypt(sealed, version: version, name: name, with: key, into: buffer)
                return nil
            } catch {
                sodium_memzero(buffer.baseAddress, buffer.count)
                return error
            }
        }
        if let failure { throw failure }
        return plaintext
    }

    /// The length of the plaintext in `sealed`, or a `.decryptionFailed` error when it is too short
    /// to hold a nonce and a tag.
    private static func plaintextCount(of sealed: UnsafeRawBufferPointer, name: String) throws(OfflineStoreError) -> Int
    {
        guard sealed.count >= nonceByteCount + tagByteCount else {
            throw Sodium.decryptionFailed(name, Failure.truncated.reason)
        }
        return sealed.count - nonceByteCount - tagByteCount
    }

    /// Decrypts `sealed` into `plaintext`, which holds at least its plaintext's length (and one byte).
    private static func decrypt(
        _ sealed: UnsafeRawBufferPointer, version: UInt8, name: String, with key: EncryptionKey,
        into plaintext: UnsafeMutableRawBufferPointer
    ) throws(OfflineStoreError) {
        let nonce = sealed.baseAddress!.assumingMemoryBound(to: UInt8.self)
        let ciphertextCount = sealed.count - nonceByteCount
        let result = withAssociatedData(name, version: version) { associatedData in
            var plaintextCount: UInt64 = 0
            return crypto_aead_xchacha20poly1305_ietf_decrypt(
                plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), &plaintextCount, nil,
                nonce + nonceByteCount, UInt64(ciphertextCount),
                associatedData.baseAddress, UInt64(associatedData.count),
                nonce, key.bytes
            )
        }
        guard result == 0 else { throw Sodium.decryptionFailed(name, Failure.rejected.reason) }
    }

    /// Calls `body` with the associated data of the key named `name`: the version byte, then the
    /// name's UTF-8 bytes.
    private static func withAssociatedData<Result>(
        _ name: String, version: UInt8, _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        let nameBytes = name.utf8
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1 + nameBytes.count) { associatedData in
            associatedData[0] = version
            _ = UnsafeMutableBufferPointer(rebasing: associatedData[1...]).initialize(from: nameBytes)
            return body(UnsafeBufferPointer(associatedData))
        }
    }
}
