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

/// Store URLs opening every engine and the encryption wrapper (issue 36): the store is the engine
/// the URL names, with its durability and options, and what it keeps is there when the same URL
/// opens it again. The schemes are passed per call, never registered, so the checks of `Sovaria`
/// alone (StoreURLTests) see none of them in this shared test process.
@Suite struct StoreURLEnginesTests {
    static let schemes: [StoreScheme] = [.sqlite, .lmdb, .leveldb, .postgres, .encrypted]

    @Test(arguments: ["file", "sqlite", "lmdb", "leveldb"], [Durability.synced, .flushed])
    func aURLOpensItsEngineWithItsDurabilityAndOpensItAgain(engine: String, durability: Durability) async throws {
        let folder = try TemporaryFolder()
        let place = engine == "sqlite" ? folder.url.path + "/offline.sqlite" : folder.url.path + "/store"
        let text = "\(engine):\(place)" + (durability == .flushed ? "?durability=flushed" : "")
        do {
            let store = try await OfflineStores.open(text, using: Self.schemes)
            #expect(Self.durability(of: store, engine: engine) == durability, "\(type(of: store))")
            try await store.set("sov:k", "kept")
        }
        let again = try await OfflineStores.open(text, using: Self.schemes)
        #expect(try await again.get("sov:k") == "kept")
    }

    @Test func aPostgresURLTakesItsConninfoTableAndDurability() async throws {
        let folder = try TemporaryFolder()
        let conninfo = try await PostgresCluster.sharedDatabase()
        let table = PostgresCluster.tableName(for: folder.url)
        let url = StoreURL(engine: "postgres", location: conninfo, durability: .flushed, options: ["table": table])
        let store = try #require(try await OfflineStores.open(url, using: Self.schemes) as? PostgresOfflineStore)
        #expect(store.table == table)
        #expect(store.durability == .flushed)
        try await store.set("sov:k", "kept")
        let again = try await OfflineStores.open(try StoreURL(url.description), using: Self.schemes)
        #expect(try await again.get("sov:k") == "kept")
    }

    @Test func anEncryptedURLTakesAKeyFileAPassphraseOrAKey() async throws {
        let folder = try TemporaryFolder()
        let keyFile = folder.child("key")
        let key = (0..<UInt8(32)).map { $0 &* 7 }
        try Data(key).write(to: keyFile)
        let withFile = "encrypted+sqlite:\(folder.url.path)/a.sqlite?key-file=\(keyFile.path)"
        do {
            let store = try await OfflineStores.open(withFile, using: Self.schemes)
            #expect(store is EncryptedOfflineStore)
            try await store.set("sov:k", "secret")
        }
        // The same key given as bytes opens it; the engine beneath holds no plaintext.
        let byKey = try await OfflineStores.open(
            "encrypted+sqlite:\(folder.url.path)/a.sqlite", using: Self.schemes, secrets: StoreSecrets(key: key))
        #expect(try await byKey.get("sov:k") == "secret")
        let engine = try await OfflineStores.open("sqlite:\(folder.url.path)/a.sqlite", using: Self.schemes)
        let sealed = try #require(try await engine.data("sov:k"))
        #expect(sealed.range(of: Data("secret".utf8)) == nil)

        var secrets = StoreSecrets()
        secrets.environment = ["SOVARIA_PASSPHRASE": "correct horse"]
        let passphraseURL = "encrypted+lmdb:\(folder.url.path)/b"
        do {
            let store = try await OfflineStores.open(passphraseURL, using: Self.schemes, secrets: secrets)
            try await store.set("sov:k", "secret")
        }
        let wrong = await #expect(throws: OfflineStoreError.self) {
            try await OfflineStores.open(
                passphraseURL, using: Self.schemes, secrets: StoreSecrets(passphrase: "battery staple"))
        }
        #expect(wrong?.code == .decryptionFailed)
    }

    @Test func anEncryptedURLWithoutAKeySaysSo() async throws {
        let folder = try TemporaryFolder()
        var secrets = StoreSecrets()
        secrets.environment = [:]
        let error = await #expect(throws: StoreURLError.self) {
            try await OfflineStores.open("encrypted+memory:", using: Self.schemes, secrets: secrets)
        }
        #expect(error?.reason == .missingKey)
        let short = folder.child("short")
        try Data([1, 2, 3]).write(to: short)
        let invalid = await #expect(throws: OfflineStoreError.self) {
            try await OfflineStores.open("encrypted+memory:?key-file=\(short.path)", using: Self.schemes)
        }
        #expect(invalid?.code == .invalidValue)
    }

    /// An encrypted URL refused for any reason creates nothing: the engine's database is not
    /// made when the wrapper is not registered (issue 47: `enc.sqlite` and its reserve file, in
    /// plain text), nor when the key is missing or wrong.
    @Test func aRefusedEncryptedURLCreatesNothing() async throws {
        let shortKey = try TemporaryFolder()
        try Data([1, 2, 3]).write(to: shortKey.child("short"))
        var noPassphrase = StoreSecrets()
        noPassphrase.environment = [:]
        let refusals: [(text: String, schemes: [StoreScheme], secrets: StoreSecrets, reason: String)] = [
            ("encrypted+sqlite:STORE", [.sqlite], noPassphrase, "the wrapper is not registered"),
            ("encrypted+lmdb:STORE", [.lmdb, .sqlite], StoreSecrets(passphrase: "p"), "the wrapper is not registered"),
            ("encrypted+sqlite:STORE", [.encrypted], StoreSecrets(passphrase: "p"), "the engine is not registered"),
            ("encrypted+sqlite:STORE?durability=fast", Self.schemes, StoreSecrets(passphrase: "p"), "a bad option"),
            ("encrypted+sqlite:STORE?table=t", Self.schemes, StoreSecrets(passphrase: "p"), "an unknown option"),
            ("encrypted+sqlite:STORE", Self.schemes, noPassphrase, "no key"),
            ("encrypted+sqlite:STORE", Self.schemes, StoreSecrets(key: [1, 2, 3]), "a key of 3 bytes"),
            (
                "encrypted+leveldb:STORE?key-file=\(shortKey.child("short").path)", Self.schemes, noPassphrase,
                "a key file of 3 bytes"
            ),
            (
                "encrypted+sqlite:STORE?key-file=\(shortKey.child("absent").path)", Self.schemes, noPassphrase,
                "a key file that is not there"
            ),
            (
                "encrypted+lmdb:STORE", Self.schemes, StoreSecrets(keyFile: shortKey.child("absent").path),
                "a key file that is not there"
            ),
        ]
        for refusal in refusals {
            let folder = try TemporaryFolder()
            let text = refusal.text.replacingOccurrences(of: "STORE", with: folder.url.path + "/enc.sqlite")
            await #expect(throws: (any Error).self, "\(refusal.reason)") {
                try await OfflineStores.open(text, using: refusal.schemes, secrets: refusal.secrets)
            }
            #expect(
                try FileManager.default.contentsOfDirectory(atPath: folder.url.path) == [],
                "\(refusal.reason): \(text) created files")
        }
    }

    /// Linked but not registered: the message says which registration is missing.
    @Test func anEncryptedURLWithoutItsRegistrationNamesIt() async throws {
        let folder = try TemporaryFolder()
        let error = try #require(
            await #expect(throws: StoreURLError.self) {
                try await OfflineStores.open(
                    "encrypted+sqlite:\(folder.url.path)/enc.sqlite", using: [.sqlite],
                    secrets: StoreSecrets(passphrase: "p"))
            })
        #expect(error.reason == .notRegistered(product: "SovariaSodium"))
        #expect(error.part == "encrypted")
        #expect(error.description.contains("OfflineStores.register(.encrypted)"), "\(error)")
        #expect(!error.description.contains("\n"), "one line, no table of forms: \(error)")
    }

    @Test func aWrapperAroundAnEngineIsTheWrapperOfThatEngine() async throws {
        let folder = try TemporaryFolder()
        let store = try await OfflineStores.open(
            "checksummed+leveldb:\(folder.url.path)/c", using: Self.schemes)
        #expect(store is ChecksummedOfflineStore)
        try await store.set("sov:k", "v")
        let engine = try await OfflineStores.open("leveldb:\(folder.url.path)/c", using: Self.schemes)
        #expect(try await engine.get("sov:k") != "v", "the engine holds the checksummed form")
    }

    private static func durability(of store: any OfflineStore, engine: String) -> Durability? {
        switch store {
        case let store as FileOfflineStore: store.durability
        case let store as SQLiteOfflineStore: store.durability
        case let store as LMDBOfflineStore: store.durability
        case let store as LevelDBOfflineStore: store.durability
        default: nil
        }
    }
}
