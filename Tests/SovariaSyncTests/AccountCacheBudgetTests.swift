import Foundation
import Sovaria
import SovariaCache
import SovariaPostgREST
import SovariaQueue
import SovariaSodium
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaSync

/// The cache's bound is one device budget (issue 60, item 5): every account's cached answers
/// share `maxCached` and `cacheSize`, evicted in seed 000's order (the answer the server sent
/// longest ago goes first, whoever owns it); queues are never evicted.
@Suite struct AccountCacheBudgetTests {
    static let engines = TestEngine.standard(including: .encrypted)

    /// A controller for `user` on `store` whose server answers each read with `[]` sent at the
    /// time its `Date` header gives, offline when `transport.online` is `false`.
    static func signIn(
        _ user: String, on store: any OfflineStore, maxCached: Int = 4, cacheSize: CacheSize = .default,
        key: EncryptionKey? = nil
    ) async throws -> (offline: SovariaOffline, transport: ScriptedTransport) {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.account = try AccountID(user)
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.maxCached = maxCached
        configuration.cacheSize = cacheSize
        if let key { configuration.wrapAccountStore = { EncryptedOfflineStore(wrapping: $0, key: key) } }
        let transport = ScriptedTransport()
        return (try await SovariaOffline(store: store, transport: transport, configuration: configuration), transport)
    }

    /// Reads `/notes?id=eq.<name>` with an answer the server sent `minute` minutes into the day.
    static func read(
        _ name: String, at minute: Int, body: String = "[]",
        by user: (offline: SovariaOffline, transport: ScriptedTransport)
    ) async throws {
        let date = Date(timeIntervalSince1970: 1_800_000_000 + Double(minute) * 60)
        user.transport.answer(DataResponse(status: 200, headers: ["Date": httpDate(date)], body: body))
        _ = try await user.offline.read(request(name), policy: .networkOnly)
    }

    /// `date` as an HTTP `Date` header gives it (RFC 9110, IMF-fixdate).
    static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }

    static func request(_ name: String) -> DataRequest {
        PostgREST.select("notes", where: [.eq("id", name)])
    }

    /// Which of `names` `user` still has cached.
    static func cached(_ names: [String], by offline: SovariaOffline) async throws -> [String] {
        var kept: [String] = []
        for name in names where try await offline.read(request(name), policy: .cacheOnly).response != nil {
            kept.append(name)
        }
        return kept
    }

    /// How many answers every account has cached in `store`.
    static func answersOnDevice(_ store: any OfflineStore) async throws -> Int {
        let keys = try await store.keys(AccountScopedStore.keyPrefix) + store.keys(StoredResponse.keyPrefix)
        return keys.count { $0.contains(StoredResponse.keyPrefix) }
    }

    @Test(arguments: engines)
    func theOldestAnswerGoesFirstWhoeverOwnsIt(_ engine: TestEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        // Alice's answers are sent at minutes 1 and 4, Bob's at 2 and 3, Carol's at 5 and 6;
        // four fit on the device.
        let alice = try await Self.signIn("alice", on: store)
        try await Self.read("a1", at: 1, by: alice)
        try await Self.read("a4", at: 4, by: alice)
        await alice.offline.close()
        let bob = try await Self.signIn("bob", on: store)
        try await Self.read("b2", at: 2, by: bob)
        try await Self.read("b3", at: 3, by: bob)
        await bob.offline.close()
        let carol = try await Self.signIn("carol", on: store)
        try await Self.read("c5", at: 5, by: carol)
        #expect(try await Self.cached(["c5"], by: carol.offline) == ["c5"])
        try await Self.read("c6", at: 6, by: carol)
        // Five, then six answers on the device: minute 1 (Alice's), then 2 (Bob's) went.
        #expect(try await Self.answersOnDevice(store) == 4, "the budget holds as Carol reads")
        #expect(try await Self.cached(["c5", "c6"], by: carol.offline) == ["c5", "c6"])
        await carol.offline.close()
        let aliceAgain = try await Self.signIn("alice", on: store)
        #expect(try await Self.cached(["a1", "a4"], by: aliceAgain.offline) == ["a4"])
        await aliceAgain.offline.close()
        let bobAgain = try await Self.signIn("bob", on: store)
        #expect(try await Self.cached(["b2", "b3"], by: bobAgain.offline) == ["b3"])
    }

    @Test func theSizeBoundSpansEveryAccount() async throws {
        let store = MemoryOfflineStore()
        let body = "[" + String(repeating: " ", count: 2_998) + "]"  // 3,000 bytes; the bound is 8 KiB
        let alice = try await Self.signIn("alice", on: store, maxCached: 100, cacheSize: .bytes(8_192))
        try await Self.read("a1", at: 1, body: body, by: alice)
        try await Self.read("a3", at: 3, body: body, by: alice)
        await alice.offline.close()
        let bob = try await Self.signIn("bob", on: store, maxCached: 100, cacheSize: .bytes(8_192))
        try await Self.read("b2", at: 2, body: body, by: bob)
        // 9,000 bytes over 8,192: the oldest (Alice's, minute 1) goes, down to the bound.
        #expect(try await Self.answersOnDevice(store) == 2, "the budget holds as Bob reads")
        #expect(try await Self.cached(["b2"], by: bob.offline) == ["b2"])
        await bob.offline.close()
        let aliceAgain = try await Self.signIn("alice", on: store, maxCached: 100, cacheSize: .bytes(8_192))
        #expect(try await Self.cached(["a1", "a3"], by: aliceAgain.offline) == ["a3"])
    }

    @Test func anotherOpenAccountsAnswersAreEvictedThroughItsOwnCache() async throws {
        let store = MemoryOfflineStore()
        let alice = try await Self.signIn("alice", on: store, maxCached: 2)
        let bob = try await Self.signIn("bob", on: store, maxCached: 2)
        try await Self.read("a1", at: 1, by: alice)
        try await Self.read("b2", at: 2, by: bob)
        try await Self.read("b3", at: 3, by: bob)
        // Alice's controller is open: her answer leaves her memory too, not only the store.
        #expect(try await Self.cached(["a1"], by: alice.offline).isEmpty)
        #expect(try await alice.offline.cache.responseCount == 0)
        #expect(try await Self.cached(["b2", "b3"], by: bob.offline) == ["b2", "b3"])
    }

    @Test func anAccountSealedUnderItsKeyIsEvictedWithoutIt() async throws {
        let store = MemoryOfflineStore()
        let alice = try await Self.signIn("alice", on: store, maxCached: 2, key: try EncryptionKey.random())
        try await Self.read("a1", at: 1, by: alice)
        await alice.offline.close()
        let bob = try await Self.signIn("bob", on: store, maxCached: 2)
        try await Self.read("b2", at: 2, by: bob)
        try await Self.read("b3", at: 3, by: bob)
        let alicesAnswers = try await store.keys(
            AccountScopedStore.accountPrefix(of: try AccountID("alice")) + "sov:cache:")
        #expect(alicesAnswers.isEmpty, "Alice's sealed answer went by its key: \(alicesAnswers)")
    }

    @Test(arguments: engines)
    func queuedAndRejectedWritesAreNeverEvicted(_ engine: TestEngine) async throws {
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let alice = try await Self.signIn("alice", on: store, maxCached: 1)
        try await Self.read("a1", at: 1, by: alice)
        alice.transport.online = false
        for id in ["q1", "q2", "q3"] {
            _ = try await alice.offline.write(PostgREST.insert(into: "notes", json: #"{"id":"\#(id)"}"#))
        }
        await alice.offline.close()
        let bob = try await Self.signIn("bob", on: store, maxCached: 1)
        try await Self.read("b2", at: 2, by: bob)
        try await Self.read("b3", at: 3, by: bob)
        #expect(try await Self.answersOnDevice(store) == 1)
        await bob.offline.close()
        let back = try await Self.signIn("alice", on: store, maxCached: 1)
        #expect(try await Self.cached(["a1"], by: back.offline).isEmpty, "Alice's answer was the oldest")
        #expect(try await back.offline.pendingWrites().count == 3, "her queue is whole")
    }

    @Test func theImplicitAccountsAnswersShareTheBudget() async throws {
        let store = MemoryOfflineStore()
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.maxCached = 2
        let transport = ScriptedTransport()
        let implicit = try await SovariaOffline(store: store, transport: transport, configuration: configuration)
        try await Self.read("n1", at: 1, by: (implicit, transport))
        await implicit.close()
        let alice = try await Self.signIn("alice", on: store, maxCached: 2)
        try await Self.read("a2", at: 2, by: alice)
        try await Self.read("a3", at: 3, by: alice)
        #expect(try await store.keys(StoredResponse.keyPrefix).isEmpty, "the implicit account's older answer went")
        #expect(try await Self.cached(["a2", "a3"], by: alice.offline) == ["a2", "a3"])
    }
}
