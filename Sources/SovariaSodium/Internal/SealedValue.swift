import CSodium
import Sovaria

/// The stored form of an encrypted value, version 1:
///
///     "v1:" + base64url-without-padding(nonce[24] ‖ ciphertext[n] ‖ tag[16])
///
/// sealed with XChaCha20-Poly1305 (IETF) under a fresh random nonce, with the associated data
/// `0x01 ‖ UTF-8 bytes of the key name`: the version and the key name are authenticated, so a
/// value copied under another key, or relabelled as another version, does not open.
/// A value of n UTF-8 bytes is stored in `3 + ceil(4 × (n + 40) / 3)` bytes.
///
/// The hot paths avoid Foundation and intermediate arrays: one scratch buffer (on the stack for
/// small values), a table-driven base64 (see ``Base64URL``), and the result string written in
/// place.
enum SealedValue {
    /// The version byte of this form, bound into the associated data.
    static let version: UInt8 = 1
    /// The text every version-1 value starts with.
    static let prefix: StaticString = "v1:"
    static let nonceByteCount = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let tagByteCount = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    /// The stored form of `value` under the key named `name`; a new random nonce every call.
    static func seal(_ value: String, name: String, with key: EncryptionKey) -> String {
        var value = value
        return value.withUTF8 { plaintext in
            withAssociatedData(name) { associatedData in
                let sealedCount = nonceByteCount + plaintext.count + tagByteCount
                return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: sealedCount) { sealed in
                    let nonce = sealed.baseAddress!
                    randombytes_buf(nonce, nonceByteCount)
                    var ciphertextCount: UInt64 = 0
                    _ = crypto_aead_xchacha20poly1305_ietf_encrypt(
                        nonce + nonceByteCount, &ciphertextCount,
                        plaintext.baseAddress, UInt64(plaintext.count),
                        associatedData.baseAddress, UInt64(associatedData.count),
                        nil, nonce, key.bytes
                    )
                    return encode(UnsafeBufferPointer(sealed))
                }
            }
        }
    }

    /// The value sealed in `stored` under the key named `name`, or an
    /// ``OfflineStoreError/Code/decryptionFailed`` error naming that key.
    static func open(_ stored: String, name: String, with key: EncryptionKey) throws(OfflineStoreError) -> String {
        var stored = stored
        var failure: Failure?
        let value = stored.withUTF8 { text in
            withAssociatedData(name) { associatedData in
                open(text, associatedData: associatedData, with: key, failure: &failure)
            }
        }
        if let failure { throw Sodium.decryptionFailed(name, failure.reason) }
        return value
    }

    /// Why a stored value did not open.
    private enum Failure {
        case notSealed, truncated, rejected

        var reason: String {
            switch self {
            case .notSealed:
                "it is not in the encrypted stored form (\"\(SealedValue.prefix)\" and URL-safe base64), so it was "
                    + "written without encryption, by a newer version, or damaged"
            case .truncated:
                "it is too short to hold a nonce and an authentication tag, so it was cut short"
            case .rejected:
                "authentication failed: the store was opened with another key, or the value was changed or moved "
                    + "here from another key"
            }
        }
    }

    private static func open(
        _ text: UnsafeBufferPointer<UInt8>,
        associatedData: UnsafeBufferPointer<UInt8>,
        with key: EncryptionKey,
        failure: inout Failure?
    ) -> String {
        let prefixCount = prefix.utf8CodeUnitCount
        guard text.count >= prefixCount,
            text.prefix(prefixCount).elementsEqual(UnsafeBufferPointer(start: prefix.utf8Start, count: prefixCount))
        else {
            failure = .notSealed
            return ""
        }
        let encoded = UnsafeBufferPointer(rebasing: text[prefixCount...])
        let capacity = Base64URL.maxDecodedCount(of: encoded.count)
        guard capacity >= nonceByteCount + tagByteCount else {
            failure = .truncated
            return ""
        }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: capacity) { sealed in
            guard let sealedCount = Base64URL.decode(encoded, into: sealed.baseAddress!) else {
                failure = .notSealed
                return ""
            }
            guard sealedCount >= nonceByteCount + tagByteCount else {
                failure = .truncated
                return ""
            }
            let nonce = sealed.baseAddress!
            let ciphertextCount = sealedCount - nonceByteCount
            var rejected = false
            let value = String(unsafeUninitializedCapacity: ciphertextCount - tagByteCount) { plaintext in
                var plaintextCount: UInt64 = 0
                let result = crypto_aead_xchacha20poly1305_ietf_decrypt(
                    plaintext.baseAddress, &plaintextCount, nil,
                    nonce + nonceByteCount, UInt64(ciphertextCount),
                    associatedData.baseAddress, UInt64(associatedData.count),
                    nonce, key.bytes
                )
                rejected = result != 0
                return rejected ? 0 : Int(plaintextCount)
            }
            if rejected { failure = .rejected }
            return value
        }
    }

    /// `"v1:"` and the unpadded URL-safe base64 of `sealed`, written straight into the string.
    private static func encode(_ sealed: UnsafeBufferPointer<UInt8>) -> String {
        let prefixCount = prefix.utf8CodeUnitCount
        let count = prefixCount + Base64URL.encodedCount(of: sealed.count)
        return String(unsafeUninitializedCapacity: count) { text in
            let start = text.baseAddress!
            start.initialize(from: prefix.utf8Start, count: prefixCount)
            Base64URL.encode(sealed, into: start + prefixCount)
            return count
        }
    }

    /// Calls `body` with the associated data of the key named `name`: the version byte, then the
    /// name's UTF-8 bytes.
    private static func withAssociatedData<Result>(
        _ name: String, _ body: (UnsafeBufferPointer<UInt8>) -> Result
    ) -> Result {
        let nameBytes = name.utf8
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 1 + nameBytes.count) { associatedData in
            associatedData[0] = version
            _ = UnsafeMutableBufferPointer(rebasing: associatedData[1...]).initialize(from: nameBytes)
            return body(UnsafeBufferPointer(associatedData))
        }
    }
}
