import Sovaria
import SovariaSodium
import Testing

@Suite struct EncryptionKeyTests {
    @Test(arguments: [0, 1, 16, 31, 33, 64])
    func rejectsKeysThatAreNot32Bytes(byteCount: Int) {
        let error = #expect(throws: OfflineStoreError.self) {
            _ = try EncryptionKey(bytes: [UInt8](repeating: 1, count: byteCount))
        }
        #expect(error?.code == .invalidValue)
        #expect(error?.engine == "sodium")
        #expect(error?.message.contains("\(byteCount)") == true)
    }

    @Test func keepsItsBytesAndOpensWhatTheSameBytesSealed() async throws {
        let original = try EncryptionKey.random()
        let bytes = original.withUnsafeBytes { Array($0) }
        #expect(bytes.count == EncryptionKey.byteCount)
        let copy = try EncryptionKey(bytes: bytes)
        #expect(copy.withUnsafeBytes { Array($0) } == bytes)

        let inner = MemoryOfflineStore()
        try await EncryptedOfflineStore(wrapping: inner, key: original).set("k", "sealed by the original")
        #expect(try await EncryptedOfflineStore(wrapping: inner, key: copy).get("k") == "sealed by the original")
    }

    @Test func randomKeysDiffer() throws {
        let keys = try (0..<8).map { _ in try EncryptionKey.random().withUnsafeBytes { Array($0) } }
        #expect(Set(keys).count == keys.count)
        #expect(keys.allSatisfy { $0 != [UInt8](repeating: 0, count: EncryptionKey.byteCount) })
    }

    @Test func samePassphraseAndSaltGiveTheSameKey() async throws {
        let inner = MemoryOfflineStore()
        let first = try await EncryptionKey.derive(passphrase: "pass phrase", store: inner, limits: .minimum)
        let again = try await EncryptionKey.derive(passphrase: "pass phrase", store: inner, limits: .minimum)
        let elsewhere = try await EncryptionKey.derive(
            passphrase: "pass phrase", store: MemoryOfflineStore(), limits: .minimum)
        #expect(first.withUnsafeBytes { Array($0) } == again.withUnsafeBytes { Array($0) })
        #expect(first.withUnsafeBytes { Array($0) } != elsewhere.withUnsafeBytes { Array($0) }, "a new salt per store")
    }

    @Test func limitPresetsAreWithinArgon2idsRange() {
        #expect(EncryptionKey.DerivationLimits.minimum.operations == 1)
        #expect(EncryptionKey.DerivationLimits.minimum.memoryBytes == 8_192)
        #expect(EncryptionKey.DerivationLimits.interactive.memoryBytes == 64 << 20)
        #expect(EncryptionKey.DerivationLimits.moderate.memoryBytes == 256 << 20)
        #expect(EncryptionKey.DerivationLimits.sensitive.memoryBytes == 1 << 30)
    }
}
