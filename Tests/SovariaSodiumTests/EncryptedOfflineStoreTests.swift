import Foundation
import Sovaria
import SovariaLMDB
import SovariaLevelDB
import SovariaPostgres
import SovariaSQLite
import SovariaSodium
import SovariaTestKit
import SovariaTestServers
import Testing

@Suite struct EncryptedOfflineStoreTests {
    /// The same key on every open, so reopening a folder reads what an earlier store wrote.
    static let keyBytes = (0..<UInt8(32)).map { $0 &* 37 &+ 11 }

    /// A factory that wraps the store `inner` opens with a raw-bytes key.
    static func encrypted(
        _ name: String, _ inner: @escaping @Sendable (URL) async throws -> any OfflineStore
    ) -> StoreFactory {
        // Every inner store here but the memory one is persistent, and so must the wrapper be.
        StoreFactory("encrypted(\(name))", persistent: name != "memory") { folder in
            EncryptedOfflineStore(wrapping: try await inner(folder), key: try EncryptionKey(bytes: keyBytes))
        }
    }

    /// A factory that wraps the store `inner` opens with a passphrase key (Argon2id at its minimum, to stay fast).
    static func passphraseEncrypted(
        _ name: String, _ inner: @escaping @Sendable (URL) async throws -> any OfflineStore
    ) -> StoreFactory {
        StoreFactory("encrypted-passphrase(\(name))", persistent: name != "memory") { folder in
            try await EncryptedOfflineStore(
                wrapping: try await inner(folder), passphrase: "conformance", limits: .minimum)
        }
    }

    // MARK: - The conformance suite, around every store

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundMemory(_ check: ConformanceCheck) async throws {
        try await check.run(on: Self.encrypted("memory") { _ in MemoryOfflineStore() })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundFileWhenSynced(_ check: ConformanceCheck) async throws {
        try await check.run(on: Self.encrypted("file(synced)") { FileOfflineStore(directory: $0, durability: .synced) })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundFileWhenFlushed(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: Self.encrypted("file(flushed)") { FileOfflineStore(directory: $0, durability: .flushed) })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWithAPassphraseKeyAroundMemory(_ check: ConformanceCheck) async throws {
        try await check.run(on: Self.passphraseEncrypted("memory") { _ in MemoryOfflineStore() })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsWithAPassphraseKeyAroundFile(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: Self.passphraseEncrypted("file(flushed)") { FileOfflineStore(directory: $0, durability: .flushed) })
    }

    // MARK: Engines written in parallel: the lead adds their factories here.
    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundLMDB(_ check: ConformanceCheck) async throws {
        try await check.run(on: Self.encrypted("lmdb") { try LMDBOfflineStore(directory: $0) })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundLevelDB(_ check: ConformanceCheck) async throws {
        try await check.run(on: Self.encrypted("leveldb") { try LevelDBOfflineStore(directory: $0) })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundSQLite(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: Self.encrypted("sqlite") {
                try SQLiteOfflineStore(fileURL: $0.appendingPathComponent("db.sqlite"))
            })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundPostgres(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: Self.encrypted("postgres") {
                try PostgresOfflineStore(
                    connection: try await PostgresCluster.sharedDatabase(), table: PostgresCluster.tableName(for: $0))
            })
    }

    /// Around a PostgreSQL store reading from two streaming standbys that have caught up.
    @Test(arguments: OfflineStoreConformance.checks)
    func conformsAroundPostgresReadingFromStandbys(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: Self.encrypted("postgres(standbys)") {
                let rig = try await PostgresStandbyCluster.shared()
                var configuration = PostgresOfflineStore.Configuration()
                configuration.readPolicy = .standbyIfCaughtUp
                return try PostgresOfflineStore(
                    primary: rig.primary, standbys: rig.standbys, table: PostgresCluster.tableName(for: $0),
                    configuration: configuration)
            })
    }

    // MARK: - Values that do not open

    @Test func wrongKeyFailsNamingTheKeyAndOtherKeysAreStillServed() async throws {
        let inner = MemoryOfflineStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        let other = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        try await store.set("sov:mine", "mine")
        try await other.set("sov:theirs", "theirs")

        let error = try await decryptionError { _ = try await store.get("sov:theirs") }
        #expect(error.key == "sov:theirs")
        #expect(error.engine == "sodium")
        #expect(error.message.contains("sov:theirs"))
        #expect(try await store.get("sov:mine") == "mine")
        #expect(try await other.get("sov:theirs") == "theirs")
        #expect(try await store.keys("sov:") == ["sov:mine", "sov:theirs"])

        let fromEntries = try await decryptionError { _ = try await store.entries("sov:", after: nil, limit: 10) }
        #expect(fromEntries.key == "sov:theirs")
        #expect(try await store.entries("sov:", after: nil, limit: 1) == [StoreEntry(key: "sov:mine", value: "mine")])
    }

    @Test(arguments: StoredForm.allCases)
    func valueMovedToAnotherKeyFails(_ form: StoredForm) async throws {
        let inner = form.innerStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        try await store.set("sov:cache:alice", "alice's feed")
        try await inner.set("sov:cache:bob", data: try #require(try await inner.data("sov:cache:alice")))

        let error = try await decryptionError { _ = try await store.get("sov:cache:bob") }
        #expect(error.key == "sov:cache:bob")
        #expect(try await store.get("sov:cache:alice") == "alice's feed")
    }

    @Test func everyChangedCharacterOfTheTextFormFails() async throws {
        let inner = StoredForm.text.innerStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        try await store.set("k", "a value worth protecting")
        try await store.set("untouched", "still here")
        let stored = Array(try #require(try await inner.get("k")))
        for index in stored.indices {
            for replacement: Character in ["A", "_", "!", "é", "\0"] where replacement != stored[index] {
                var changed = stored
                changed[index] = replacement
                try await inner.set("k", String(changed))
                let error = try await decryptionError { _ = try await store.get("k") }
                #expect(error.key == "k", "character \(index) changed to \(replacement.debugDescription)")
            }
        }
        #expect(try await store.get("untouched") == "still here")
    }

    @Test func everyChangedByteOfTheByteFormFails() async throws {
        let inner = StoredForm.bytes.innerStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        try await store.set("k", data: Data([0xFF, 0x00, 0x61]))
        try await store.set("untouched", "still here")
        let stored = try #require(try await inner.data("k"))
        #expect(stored.first == 2, "the byte form starts with its version")
        for index in stored.indices {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var changed = stored
                changed[index] ^= flip
                try await inner.set("k", data: changed)
                let error = try await decryptionError { _ = try await store.data("k") }
                #expect(error.key == "k", "byte \(index) xor \(flip)")
            }
        }
        #expect(try await store.get("untouched") == "still here")
    }

    @Test(arguments: StoredForm.allCases)
    func truncatedOrExtendedValueFails(_ form: StoredForm) async throws {
        let inner = form.innerStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        try await store.set("k", "short")
        let stored = try #require(try await inner.data("k"))
        var damaged = (0..<stored.count).map { Data(stored.prefix($0)) }  // every truncation, empty included
        damaged += (1..<stored.count).map { Data(stored.dropFirst($0)) }
        damaged += [stored + Data("A".utf8), stored + Data("AAAA".utf8), stored + Data("=".utf8)]
        for value in damaged {
            try await inner.set("k", data: value)
            let error = try await decryptionError { _ = try await store.get("k") }
            #expect(error.key == "k", "stored form damaged to \(value.count) bytes")
        }
    }

    @Test func valueWrittenWithoutEncryptionFails() async throws {
        let inner = MemoryOfflineStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        for plain in ["hello", "v1:", "v2:AAAA", #"{"json":true}"#] {
            try await inner.set("plain", plain)
            let error = try await decryptionError { _ = try await store.get("plain") }
            #expect(error.key == "plain")
        }
        for plain in [
            Data([2]), Data([2] + [UInt8](repeating: 0, count: 40)), Data([2] + [UInt8](repeating: 7, count: 60)),
        ] {
            try await inner.set("plain", data: plain)
            let error = try await decryptionError { _ = try await store.data("plain") }
            #expect(error.key == "plain")
        }
    }

    // MARK: - What the inner store keeps

    @Test func filesNeverContainThePlaintext() async throws {
        let folder = try TemporaryFolder()
        let store = EncryptedOfflineStore(
            wrapping: FileOfflineStore(directory: folder.child("store")), key: try EncryptionKey.random())
        let secret = "card=4111111111111111;password=hunter2"
        try await store.set("sov:a", secret)
        try await store.write([.set(key: "sov:b", value: secret), .set(key: "sov:c", value: secret + secret)])
        try await store.set("sov:d", String(repeating: secret, count: 100))
        try await store.set("sov:e", data: Data(secret.utf8))

        for contents in try folder.allFileContents() { #expect(contents.range(of: Data("hunter2".utf8)) == nil) }
        // Entry files ("k<hex>"): the file store's 12-byte header (magic, checksum), then the byte form.
        let entries = try folder.allFileContents { $0.hasPrefix("k") }
        #expect(entries.count == 5)
        for contents in entries { #expect(contents.dropFirst(12).first == 2) }
        #expect(try await store.get("sov:c") == secret + secret)
    }

    @Test(arguments: StoredForm.allCases)
    func writingTheSameValueTwiceStoresTwoDifferentForms(_ form: StoredForm) async throws {
        let inner = form.innerStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        try await store.set("k", "same")
        let first = try #require(try await inner.data("k"))
        try await store.set("k", "same")
        let second = try #require(try await inner.data("k"))
        try await store.write([.set(key: "k2", value: "same")])
        let third = try #require(try await inner.data("k2"))

        #expect(first != second)
        #expect(Set([first, second, third]).count == 3)
        #expect(try await store.get("k") == "same")
        #expect(try await store.get("k2") == "same")
    }

    @Test(arguments: [0, 1, 2, 3, 100, 1_024, 4_096])
    func theByteFormCostsWhatTheDocsSay(valueBytes: Int) async throws {
        let inner = StoredForm.bytes.innerStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        let value = Data((0..<valueBytes).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        try await store.set("k", data: value)
        let stored = try #require(try await inner.data("k"))
        // 0x02, nonce (24), ciphertext (n), tag (16).
        #expect(stored.count == valueBytes + 41)
        #expect(try await store.data("k") == value)
    }

    @Test(arguments: [0, 1, 2, 3, 100, 1_024, 4_096])
    func theTextFormCostsWhatTheDocsSay(valueBytes: Int) async throws {
        let inner = StoredForm.text.innerStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        let value = String(repeating: "x", count: valueBytes)
        try await store.set("k", value)
        let stored = try #require(try await inner.get("k"))
        // "v1:" + unpadded base64 of nonce (24) + ciphertext (n) + tag (16).
        let expected = 3 + (4 * (valueBytes + 40) + 2) / 3
        #expect(stored.utf8.count == expected)
        #expect(stored.utf8.allSatisfy { $0 < 0x80 }, "the stored form is ASCII")
        #expect(try await store.get("k") == value)
    }

    @Test func bytesThatAreNotUTF8TravelInTheTextFormOverAStoreOfText() async throws {
        let inner = StoredForm.text.innerStore()
        let store = EncryptedOfflineStore(wrapping: inner, key: try EncryptionKey.random())
        #expect(store.capabilities.contains(.byteValues))
        let bytes = Data([0xFF, 0x00, 0xC3, 0xED, 0xA0, 0x80])
        try await store.set("k", data: bytes)
        try await store.write([.setData(key: "k2", data: bytes)])
        #expect(try #require(try await inner.get("k")).hasPrefix("v1:"))
        #expect(try await store.data("k") == bytes)
        #expect(try await store.dataEntries("k", after: nil, limit: 5).map(\.data) == [bytes, bytes])
        let error = await #expect(throws: OfflineStoreError.self) { _ = try await store.get("k") }
        #expect(error?.code == .notUTF8)
        #expect(error?.key == "k")
    }

    @Test func textFormValuesOfEarlierVersionsStillReadOverAStoreOfBytes() async throws {
        let key = try EncryptionKey(bytes: Self.keyBytes)
        let text = StoredForm.text.innerStore()
        try await EncryptedOfflineStore(wrapping: text, key: key).set("sov:old", "written as v1 é\0")
        let bytes = MemoryOfflineStore()
        try await bytes.set("sov:old", try #require(try await text.get("sov:old")))
        let store = EncryptedOfflineStore(wrapping: bytes, key: key)
        #expect(try await store.get("sov:old") == "written as v1 é\0")
        #expect(
            try await store.entries("sov:", after: nil, limit: 5) == [
                StoreEntry(key: "sov:old", value: "written as v1 é\0")
            ])
        try await store.set("sov:old", "rewritten")
        #expect(try #require(try await bytes.data("sov:old")).first == 2, "a new write uses the byte form")
        #expect(try await store.get("sov:old") == "rewritten")
    }

    @Test func passesCapabilitiesAndPersistenceThrough() async throws {
        let folder = try TemporaryFolder()
        let file = FileOfflineStore(directory: folder.child("store"))
        let key = try EncryptionKey.random()
        #expect(EncryptedOfflineStore(wrapping: file, key: key).capabilities == file.capabilities)
        #expect(EncryptedOfflineStore(wrapping: StoredForm.text.innerStore(), key: key).capabilities == [.byteValues])
        #expect(EncryptedOfflineStore(wrapping: file, key: key).isPersistent)
        #expect(!EncryptedOfflineStore(wrapping: MemoryOfflineStore(), key: key).isPersistent)
    }

    // MARK: - Passphrase keys

    @Test func reopeningWithThePassphraseReadsTheValues() async throws {
        let folder = try TemporaryFolder()
        let directory = folder.child("store")
        do {
            let store = try await EncryptedOfflineStore(
                wrapping: FileOfflineStore(directory: directory), passphrase: "correct horse", limits: .minimum)
            try await store.set("sov:queue:0001", "queued")
        }
        let inner = FileOfflineStore(directory: directory)
        let reopened = try await EncryptedOfflineStore(wrapping: inner, passphrase: "correct horse", limits: .minimum)
        #expect(try await reopened.get("sov:queue:0001") == "queued")
        #expect(try await reopened.keys("") == ["sov:queue:0001"])
        #expect(try await inner.keys("") == [EncryptedOfflineStore.metadataKey, "sov:queue:0001"])
    }

    @Test func wrongPassphraseFailsWhenTheStoreOpens() async throws {
        let inner = MemoryOfflineStore()
        let store = try await EncryptedOfflineStore(wrapping: inner, passphrase: "correct horse", limits: .minimum)
        try await store.set("sov:a", "a")

        let error = try await decryptionError {
            _ = try await EncryptedOfflineStore(wrapping: inner, passphrase: "battery staple", limits: .minimum)
        }
        #expect(error.key == EncryptedOfflineStore.metadataKey)
        #expect(error.message.contains("passphrase"))
        // A key from the same passphrase but another salt opens nothing either.
        let otherSalt = try await EncryptionKey.derive(
            passphrase: "correct horse", store: MemoryOfflineStore(), limits: .minimum)
        let readError = try await decryptionError {
            _ = try await EncryptedOfflineStore(wrapping: inner, key: otherSalt).get("sov:a")
        }
        #expect(readError.key == "sov:a")
    }

    @Test func storedLimitsWinWhenTheStoreReopens() async throws {
        let inner = MemoryOfflineStore()
        let first = try await EncryptionKey.derive(passphrase: "pass", store: inner, limits: .minimum)
        let settings = try #require(try await inner.get(EncryptedOfflineStore.metadataKey))
        let second = try await EncryptionKey.derive(
            passphrase: "pass", store: inner, limits: EncryptionKey.DerivationLimits(operations: 3, memoryBytes: 16_384)
        )
        #expect(try await inner.get(EncryptedOfflineStore.metadataKey) == settings)
        #expect(first.withUnsafeBytes { Array($0) } == second.withUnsafeBytes { Array($0) })
        #expect(settings.contains(#""opslimit":1"#))
        #expect(settings.contains(#""memlimit":8192"#))
        #expect(settings.contains(#""kdf":"argon2id13""#))
    }

    @Test func damagedSettingsAreCorrupt() async throws {
        for damaged in [
            "", "{", #"{"format":2}"#,
            #"{"format":1,"kdf":"scrypt","opslimit":1,"memlimit":8192,"salt":"AAAAAAAAAAAAAAAAAAAAAA==","verifier":"v1:"}"#,
        ] {
            let inner = MemoryOfflineStore()
            try await inner.set(EncryptedOfflineStore.metadataKey, damaged)
            let error = await #expect(throws: OfflineStoreError.self) {
                _ = try await EncryptionKey.derive(passphrase: "pass", store: inner, limits: .minimum)
            }
            #expect(error?.code == .corrupt, "settings \(damaged.debugDescription)")
        }
    }

    @Test func rejectsEmptyPassphrasesAndLimitsOutsideArgon2idsRange() async throws {
        let tooSmall = EncryptionKey.DerivationLimits(operations: 0, memoryBytes: 8_192)
        for (passphrase, limits) in [("", EncryptionKey.DerivationLimits.minimum), ("pass", tooSmall)] {
            let inner = MemoryOfflineStore()
            let error = await #expect(throws: OfflineStoreError.self) {
                _ = try await EncryptionKey.derive(passphrase: passphrase, store: inner, limits: limits)
            }
            #expect(error?.code == .invalidValue)
            #expect(try await inner.keys("") == [], "nothing written")
        }
    }

    @Test func settingsKeyIsReservedAndHidden() async throws {
        let inner = MemoryOfflineStore()
        let store = try await EncryptedOfflineStore(wrapping: inner, passphrase: "pass", limits: .minimum)
        let reserved = EncryptedOfflineStore.metadataKey
        try await store.write([.set(key: "sov:a", value: "a"), .set(key: "sov:z", value: "z")])

        #expect(try await store.keys("") == ["sov:a", "sov:z"])
        #expect(try await store.keys("sov:meta:") == [])
        #expect(try await store.entries("", after: nil, limit: 2).map(\.key) == ["sov:a", "sov:z"])
        #expect(try await store.entries("sov:", after: "sov:a", limit: 1).map(\.key) == ["sov:z"])
        #expect(try await store.entries("sov:meta:", after: nil, limit: 5) == [])
        for call: @Sendable () async throws -> Void in [
            { _ = try await store.get(reserved) }, { try await store.set(reserved, "x") },
            { try await store.delete(reserved) },
            { try await store.write([.set(key: "sov:b", value: "b"), .delete(key: reserved)]) },
        ] {
            let error = await #expect(throws: OfflineStoreError.self) { try await call() }
            #expect(error?.code == .invalidKey)
        }
        #expect(try await inner.keys("") == ["sov:a", reserved, "sov:z"], "the settings and no half batch")
    }

    // MARK: - Key rotation

    @Test func rotatesTheKeyByMigratingToAStoreWithTheNewKey() async throws {
        let oldKey = try EncryptionKey.random()
        let newKey = try EncryptionKey.random()
        let oldInner = MemoryOfflineStore()
        let newInner = MemoryOfflineStore()
        let old = EncryptedOfflineStore(wrapping: oldInner, key: oldKey)
        let rotated = EncryptedOfflineStore(wrapping: newInner, key: newKey)
        let entries = (0..<2_500).map { StoreEntry(key: "sov:cache:\(1_000 + $0)", value: "value \($0) é😀") }
        try await old.write(entries.map { .set(key: $0.key, value: $0.value) })
        try await old.set("sov:queue:0001", "queued")

        let copied = try await OfflineMigration.migrate(from: old, to: rotated, batchSize: 1_000)

        #expect(copied == entries.count + 1)
        #expect(try await rotated.entries("sov:cache:", after: nil, limit: 10_000) == entries)
        #expect(try await rotated.get("sov:queue:0001") == "queued")
        let error = try await decryptionError {
            _ = try await EncryptedOfflineStore(wrapping: newInner, key: oldKey).get("sov:queue:0001")
        }
        #expect(error.key == "sov:queue:0001")
        #expect(try await newInner.data("sov:queue:0001") != oldInner.data("sov:queue:0001"))
    }

    @Test func rotatesAPassphraseWithoutCopyingTheOldSettings() async throws {
        let oldInner = MemoryOfflineStore()
        let newInner = MemoryOfflineStore()
        let old = try await EncryptedOfflineStore(wrapping: oldInner, passphrase: "old", limits: .minimum)
        try await old.set("sov:file:a", "metadata")
        let rotated = try await EncryptedOfflineStore(wrapping: newInner, passphrase: "new", limits: .minimum)
        let newSettings = try await newInner.get(EncryptedOfflineStore.metadataKey)

        #expect(try await OfflineMigration.migrate(from: old, to: rotated) == 1)
        #expect(try await newInner.get(EncryptedOfflineStore.metadataKey) == newSettings)
        let reopened = try await EncryptedOfflineStore(wrapping: newInner, passphrase: "new", limits: .minimum)
        #expect(try await reopened.get("sov:file:a") == "metadata")
    }

    // MARK: - Helpers

    /// The ``OfflineStoreError`` `body` throws, which must have code `.decryptionFailed`.
    private func decryptionError(
        sourceLocation: SourceLocation = #_sourceLocation, _ body: () async throws -> Void
    ) async throws -> OfflineStoreError {
        let error = try await #require(throws: OfflineStoreError.self, sourceLocation: sourceLocation) {
            try await body()
        }
        #expect(error.code == .decryptionFailed, "\(error)", sourceLocation: sourceLocation)
        return error
    }
}

/// The form the encrypted store writes: bytes over a store that takes them, text over one that keeps text only.
enum StoredForm: CaseIterable, Sendable, CustomTestStringConvertible {
    case bytes, text

    func innerStore() -> any OfflineStore {
        switch self {
        case .bytes: MemoryOfflineStore()
        case .text: TextOnlyStore()
        }
    }

    var testDescription: String { "\(self)" }
}

/// A store built on the four seed methods only: no byte values, so the encrypted store keeps its text form here.
final class TextOnlyStore: OfflineStore {
    private let inner = MemoryOfflineStore()

    func get(_ key: String) async throws -> String? { try await inner.get(key) }
    func set(_ key: String, _ value: String) async throws { try await inner.set(key, value) }
    func delete(_ key: String) async throws { try await inner.delete(key) }
    func keys(_ prefix: String) async throws -> [String] { try await inner.keys(prefix) }
}

extension TemporaryFolder {
    /// The bytes of every regular file under the folder.
    func allFileContents(named isIncluded: (String) -> Bool = { _ in true }) throws -> [Data] {
        let enumerator = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.isRegularFileKey])
        var contents: [Data] = []
        while let file = enumerator?.nextObject() as? URL {
            guard try file.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true,
                isIncluded(file.lastPathComponent)
            else { continue }
            contents.append(try Data(contentsOf: file))
        }
        return contents
    }
}
