import Foundation
import Sovaria
import SovariaTestEngines
import SovariaTestKit
import Synchronization
import Testing

@Suite struct AccountScopedStoreTests {
    static let alice = account("alice@example.com")
    static let bob = account("bob")

    /// The account `id`, which must be valid.
    static func account(_ id: String) -> AccountID {
        do { return try AccountID(id) } catch { preconditionFailure("\(error)") }
    }

    /// Every engine of the test list, encrypted SQLite included.
    static let engines = TestEngine.standard(including: .encrypted)

    /// Entries of other accounts and keys beside the view's prefix, each sorting next to it:
    /// a view that leaks one lists it.
    static let neighbours: [StoreWrite] = [
        "sov:account:alice@example.co/k", "sov:account:alice@example.com./k", "sov:account:alice@example.com0/k",
        "sov:account:alice@example.comm/k", "sov:account:alice@example.com", "sov:account:", "sov:account:bob/k",
        "sov:accounts", "a", "zzz",
    ].map { .set(key: $0, value: "another account's") }

    /// Alice's view of the engine's store in the folder, the store holding ``neighbours`` too.
    static func scoped(_ engine: TestEngine) -> StoreFactory {
        StoreFactory(
            "accountScoped(\(engine.name))", persistent: engine.name != TestEngine.memory.name,
            maxKeyUTF8Count: AccountScopedStore(wrapping: MemoryOfflineStore(), account: alice).maxKeyUTF8Count
        ) { folder in
            let base = try await engine.open(folder)
            try await base.write(neighbours)
            return AccountScopedStore(wrapping: base, account: alice)
        }
    }

    // MARK: - The conformance suite, over every engine

    @Test(arguments: OfflineStoreConformance.checks, engines)
    func conformsOverEveryEngine(_ check: ConformanceCheck, _ engine: TestEngine) async throws {
        try await check.run(on: Self.scoped(engine))
    }

    // MARK: - Two accounts over one store

    @Test(arguments: engines)
    func twoAccountsOverOneStoreSeeNothingOfEachOther(_ engine: TestEngine) async throws {
        let folder = try TemporaryFolder()
        let base = try await engine.open(folder.url)
        let alice = AccountScopedStore(wrapping: base, account: Self.alice)
        let bob = AccountScopedStore(wrapping: base, account: Self.bob)

        try await alice.set("sov:queue:1", "alice's write")
        try await alice.set("sov:cache:a", data: Data("alice's answer".utf8))
        try await alice.write([.set(key: "sov:queue:2", value: "alice 2"), .set(key: "only-alice", value: "a")])
        try await bob.write([
            .set(key: "sov:queue:1", value: "bob's write"), .setData(key: "sov:cache:a", data: Data([1])),
        ])

        #expect(try await alice.get("sov:queue:1") == "alice's write")
        #expect(try await bob.get("sov:queue:1") == "bob's write")
        #expect(try await bob.get("only-alice") == nil)
        #expect(try await bob.data("sov:cache:a") == Data([1]))
        #expect(try await alice.withValue("sov:cache:a") { Data($0) } == Data("alice's answer".utf8))
        #expect(try await alice.keys("") == ["only-alice", "sov:cache:a", "sov:queue:1", "sov:queue:2"])
        #expect(try await bob.keys("") == ["sov:cache:a", "sov:queue:1"])
        #expect(try await bob.keys("only") == [])
        #expect(
            try await alice.entries("sov:queue:", after: nil, limit: 10)
                == [
                    StoreEntry(key: "sov:queue:1", value: "alice's write"),
                    StoreEntry(key: "sov:queue:2", value: "alice 2"),
                ])
        #expect(
            try await bob.entries("", after: "sov:cache:a", limit: 10) == [
                StoreEntry(key: "sov:queue:1", value: "bob's write")
            ])
        #expect(try await bob.dataEntries("", after: nil, limit: 10).map(\.key) == ["sov:cache:a", "sov:queue:1"])

        var seen: [String] = []
        let page = try await bob.withEntries("", after: nil, limit: 10) { key, value in
            seen.append(String(decoding: key, as: UTF8.self) + "=" + String(decoding: value, as: UTF8.self))
            return true
        }
        #expect(seen == ["sov:cache:a=\u{1}", "sov:queue:1=bob's write"])
        #expect(page == StoreScanPage(count: 2, lastKey: "sov:queue:1", mayHaveMore: false))
        var keys: [String] = []
        let keyPage = try await alice.withKeys("sov:", after: "sov:cache:a", limit: 1) { key in
            keys.append(String(decoding: key, as: UTF8.self))
            return true
        }
        #expect(keys == ["sov:queue:1"])
        #expect(keyPage == StoreScanPage(count: 1, lastKey: "sov:queue:1", mayHaveMore: true))
        #expect(try await alice.forEachKey("", pageSize: 1) { _ in true } == 4)

        try await bob.delete("sov:queue:1")
        try await bob.write([.delete(key: "sov:cache:a"), .delete(key: "only-alice")])
        #expect(try await bob.keys("") == [])
        #expect(try await alice.keys("") == ["only-alice", "sov:cache:a", "sov:queue:1", "sov:queue:2"])
    }

    @Test func aViewKeepsItsKeysUnderItsPrefixInTheWrappedStore() async throws {
        let base = MemoryOfflineStore()
        let view = AccountScopedStore(wrapping: base, account: Self.alice)
        #expect(view.accountPrefix == "sov:account:alice@example.com/")
        #expect(AccountScopedStore.accountPrefix(of: Self.bob) == "sov:account:bob/")
        try await view.write([.set(key: "sov:queue:1", value: "1"), .setData(key: "\u{301}x", data: Data([0xFF]))])
        try await view.set("k", "v")
        #expect(
            try await base.keys("") == [
                "sov:account:alice@example.com/k", "sov:account:alice@example.com/sov:queue:1",
                "sov:account:alice@example.com/\u{301}x",
            ])
        #expect(try await base.get("sov:account:alice@example.com/k") == "v")
        // A key that starts with a combining mark comes back whole ("/" + U+0301 is one Character).
        #expect(try await view.keys("\u{301}").map { Array($0.utf8) } == [Array("\u{301}x".utf8)])
        #expect(try await view.data("\u{301}x") == Data([0xFF]))
        #expect(view.capabilities == base.capabilities && !view.isPersistent)
    }

    @Test func aStringReadOfBytesNamesTheViewsKey() async throws {
        let view = AccountScopedStore(wrapping: MemoryOfflineStore(), account: Self.alice)
        try await view.set("bin", data: Data([0xFF]))
        let error = await #expect(throws: OfflineStoreError.self) { _ = try await view.get("bin") }
        #expect(error?.code == .notUTF8)
        #expect(error?.key == "bin")
    }

    @Test func anErrorThrownByAScanBodyIsRethrownAsItIs() async throws {
        struct Stop: Error, Equatable {}
        let view = AccountScopedStore(wrapping: MemoryOfflineStore(), account: Self.alice)
        try await view.set("k", "v")
        let bodyError = OfflineStoreError(.io, "the body's own", key: "sov:account:alice@example.com/k")
        let error = await #expect(throws: OfflineStoreError.self) {
            _ = try await view.withEntries("", after: nil, limit: 5) { _, _ in throw bodyError }
        }
        #expect(error?.key == "sov:account:alice@example.com/k", "the body's error, not one the view rewrote")
        await #expect(throws: Stop()) { _ = try await view.withKeys("", after: nil, limit: 5) { _ in throw Stop() } }
        await #expect(throws: Stop()) { _ = try await view.withValue("k") { _ in throw Stop() } }
    }

    // MARK: - Key length

    @Test func aKeyLongerThanTheAccountLeavesThrowsInvalidKeyNamingTheLimit() async throws {
        let base = MemoryOfflineStore()
        let view = AccountScopedStore(wrapping: base, account: Self.alice)
        let prefixCount = "sov:account:alice@example.com/".utf8.count
        #expect(view.maxKeyUTF8Count == 511 - prefixCount)
        let longest = String(repeating: "k", count: view.maxKeyUTF8Count)
        try await view.set(longest, "fits")
        #expect(try await view.get(longest) == "fits")

        let tooLong = longest + "k"
        for call in [
            { _ = try await view.get(tooLong) }, { try await view.set(tooLong, "x") },
            { try await view.set(tooLong, data: Data()) }, { try await view.delete(tooLong) },
            { _ = try await view.withValue(tooLong) { _ in 0 } },
            { try await view.write([.set(key: "first", value: "1"), .delete(key: tooLong)]) },
            { _ = try await view.get("") },
        ] as [@Sendable () async throws -> Void] {
            let error = await #expect(throws: OfflineStoreError.self) { try await call() }
            #expect(error?.code == .invalidKey)
            if error?.key == tooLong {
                #expect(error?.message.contains("1 to \(view.maxKeyUTF8Count) UTF-8 bytes") == true)
                #expect(error?.message.contains("account prefix takes \(prefixCount)") == true)
            }
        }
        #expect(try await base.keys("") == ["sov:account:alice@example.com/" + longest], "nothing else written")
    }

    @Test func keysOfTheLimitForAnyAccountFitTheLongestID() async throws {
        #expect(AccountScopedStore.maxKeyUTF8CountForAnyAccount == 434)
        let longest = try AccountID(String(repeating: "x", count: 64))
        let view = AccountScopedStore(wrapping: MemoryOfflineStore(), account: longest)
        #expect(view.maxKeyUTF8Count == AccountScopedStore.maxKeyUTF8CountForAnyAccount)
        let key = String(repeating: "k", count: AccountScopedStore.maxKeyUTF8CountForAnyAccount)
        try await view.set(key, "fits")
        #expect(try await view.keys("") == [key])
    }

    // MARK: - Listing the accounts

    @Test(arguments: engines)
    func accountsListsEveryAccountThatHoldsAKey(_ engine: TestEngine) async throws {
        let folder = try TemporaryFolder()
        let base = try await engine.open(folder.url)
        #expect(try await AccountScopedStore.accounts(in: base) == [])
        let ids = ["bob", "bob.", "bob0", "bo", "alice@example.com", "3F2C1A9E-0B7D-4C1E-9A57-2D3B4C5D6E7F"]
        for id in ids {
            let view = AccountScopedStore(wrapping: base, account: try AccountID(id))
            try await view.write((0..<5).map { .set(key: "sov:queue:\($0)", value: id) })
        }
        // Keys under the prefix that are no account's.
        try await base.write(
            ["sov:account:", "sov:account:no-slash", "sov:account:bad id/k", "sov:account:/k", "sov:accountant/k"].map {
                .set(key: $0, value: "x")
            })
        let expected = ids.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        #expect(try await AccountScopedStore.accounts(in: base).map(\.rawValue) == expected)

        try await AccountScopedStore(wrapping: base, account: Self.bob).write(
            (0..<5).map { .delete(key: "sov:queue:\($0)") })
        #expect(try await AccountScopedStore.accounts(in: base).map(\.rawValue) == expected.filter { $0 != "bob" })
    }

    @Test(arguments: [false, true])
    func accountsReadsKeysOnlyAndSeeksPastEachAccountOnAnOrderedStore(_ ordered: Bool) async throws {
        let store = KeysOnlyStore(ordered: ordered)
        for id in ["a", "b", "c"] {
            let view = AccountScopedStore(wrapping: store.inner, account: try AccountID(id))
            try await view.write((0..<100).map { .set(key: "k\($0)", value: id) })
        }
        #expect(try await AccountScopedStore.accounts(in: store).map(\.rawValue) == ["a", "b", "c"])
        #expect(store.keyScans.withLock { $0 } == (ordered ? 4 : 1), "one seek per account and one past the last")
    }

    // MARK: - Account ids

    @Test(arguments: [
        "", String(repeating: "a", count: 65), "a/b", "a:b", "a b", "é", "user\u{0}", "ünïcode", "tab\there",
    ])
    func aMalformedIDThrowsInvalidAccount(_ id: String) async throws {
        let base = MemoryOfflineStore()
        let error = await #expect(throws: OfflineStoreError.self) {
            try await AccountScopedStore(wrapping: base, account: try AccountID(id)).set("k", "v")
        }
        #expect(error?.code == .invalidAccount)
        #expect(error?.message.contains("A-Z, a-z, 0-9") == true, "says what is allowed")
        #expect(try await base.keys("") == [], "nothing written")
    }

    @Test(arguments: [
        "a", String(repeating: "a", count: 64), "3f2c1a9e-0b7d-4c1e-9a57-2d3b4c5d6e7f", "ada.lovelace+work@example.com",
        "Xy9_zK-3", "auth0|5f7c8ec7c33c6c004bbafe82".replacingOccurrences(of: "|", with: "_"),
    ])
    func aUserIDFromAnAuthProviderIsValid(_ id: String) throws {
        let account = try AccountID(id)
        #expect(account.rawValue == id && account.description == id)
        #expect(account == (try AccountID(id)))
    }
}

/// A memory store whose values cannot be read, counting its key scans: `accounts(in:)` must list
/// the accounts from key names alone. With `ordered` it says its scans walk an ordered index.
private final class KeysOnlyStore: ForwardingStore {
    let inner: any OfflineStore = MemoryOfflineStore()
    let ordered: Bool
    let keyScans = Mutex(0)

    init(ordered: Bool) { self.ordered = ordered }

    var capabilities: StoreCapabilities { ordered ? [.orderedScan] : [] }

    func get(_ key: String) async throws -> String? { throw valueRead }
    func data(_ key: String) async throws -> Data? { throw valueRead }
    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] { throw valueRead }
    func dataEntries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreDataEntry] { throw valueRead }
    func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage { throw valueRead }

    func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        keyScans.withLock { $0 += 1 }
        return try await inner.withKeys(prefix, after: after, limit: limit, body)
    }

    private var valueRead: OfflineStoreError { OfflineStoreError(.unsupported, "a value was read") }
}
