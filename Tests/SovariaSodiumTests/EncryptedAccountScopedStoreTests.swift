import Foundation
import Sovaria
import SovariaSQLite
import SovariaSodium
import SovariaTestKit
import Testing

/// `EncryptedOfflineStore` around an account's view (a key per account, issue 60): the view's
/// shorter key limit and the wrapper's key binding together.
@Suite struct EncryptedAccountScopedStoreTests {
    static let account: AccountID = {
        do { return try AccountID("alice@example.com") } catch { preconditionFailure("\(error)") }
    }()

    /// An encrypted view of `account` over the store `base` opens, beside another account's entry.
    static func encryptedView(
        _ name: String, persistent: Bool, _ base: @escaping @Sendable (URL) async throws -> any OfflineStore
    ) -> StoreFactory {
        StoreFactory(
            "encrypted(accountScoped(\(name)))", persistent: persistent,
            maxKeyUTF8Count: StoreKey.maxUTF8Count - AccountScopedStore.accountPrefix(of: account).utf8.count
        ) { folder in
            let base = try await base(folder)
            try await base.set("sov:account:bob/k", "another account's")
            return EncryptedOfflineStore(
                wrapping: AccountScopedStore(wrapping: base, account: account),
                key: try EncryptionKey(bytes: EncryptedOfflineStoreTests.keyBytes))
        }
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsOverMemory(_ check: ConformanceCheck) async throws {
        try await check.run(on: Self.encryptedView("memory", persistent: false) { _ in MemoryOfflineStore() })
    }

    @Test(arguments: OfflineStoreConformance.checks)
    func conformsOverSQLite(_ check: ConformanceCheck) async throws {
        try await check.run(
            on: Self.encryptedView("sqlite", persistent: true) {
                try SQLiteOfflineStore(fileURL: $0.appendingPathComponent("db.sqlite"))
            })
    }

    @Test func aValueMovedToAnotherAccountDoesNotDecrypt() async throws {
        let base = MemoryOfflineStore()
        let key = try EncryptionKey(bytes: EncryptedOfflineStoreTests.keyBytes)
        let alice = EncryptedOfflineStore(wrapping: AccountScopedStore(wrapping: base, account: Self.account), key: key)
        try await alice.set("sov:queue:1", "alice's edit")
        let stored = try #require(try await base.data("sov:account:alice@example.com/sov:queue:1"))
        #expect(!String(decoding: stored, as: UTF8.self).contains("alice's edit"))
        // Under a key per account, another account's key opens nothing of it.
        let otherKey = try EncryptionKey(bytes: (0..<UInt8(32)).map { $0 })
        let stolen = EncryptedOfflineStore(
            wrapping: AccountScopedStore(wrapping: base, account: Self.account), key: otherKey)
        let error = await #expect(throws: OfflineStoreError.self) { _ = try await stolen.get("sov:queue:1") }
        #expect(error?.code == .decryptionFailed)
    }
}
