import Foundation
import Sovaria
import SovariaCache
import SovariaQueue
import SovariaSQLite
import Testing

/// `sovaria inspect` on stores the query cache and the write queue wrote: the oldest and newest
/// list by server time, and what each account holds (counts and bytes, never content).
@Suite struct InspectCommandTests {
    /// A SQLite store holding three lists put by a real ``QueryCache``, in an order unlike their
    /// server times; the store is released before the command opens it.
    private func storeWithLists(in folder: Fixtures.Folder) async throws -> String {
        let path = folder.file("cache.sqlite")
        let store = try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: path))
        let cache = try await QueryCache(store: store)
        try await cache.put("todos?owner=eq.bob", body: "[2]", serverTime: Date(timeIntervalSince1970: 1_700_000_500))
        try await cache.put("todos?owner=eq.ann", body: "[1,1]", serverTime: Date(timeIntervalSince1970: 1_700_000_000))
        try await cache.put("notes?id=eq.7", body: "[3,3,3]", serverTime: Date(timeIntervalSince1970: 1_700_000_900.25))
        return "sqlite:" + path
    }

    @Test func namesTheOldestAndNewestCachedListByServerTime() async throws {
        let folder = try Fixtures.Folder()
        let url = try await storeWithLists(in: folder)
        let run = try await CommandRunner.run(["inspect", url, "--json"])
        #expect(run.status == 0, "\(run.errors)")
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        #expect(report["cacheEntries"] as? Int == 3)
        #expect(report["oldestCachedQuery"] as? String == "todos?owner=eq.ann")
        #expect(report["oldestCachedServerTime"] as? String == "2023-11-14T22:13:20.000Z")
        #expect(report["oldestCachedBytes"] as? Int == 5)
        #expect(report["newestCachedQuery"] as? String == "notes?id=eq.7")
        #expect(report["newestCachedServerTime"] as? String == "2023-11-14T22:28:20.250Z")

        let text = try await CommandRunner.run(["inspect", url])
        #expect(text.status == 0)
        #expect(text.output.contains("oldest  2023-11-14T22:13:20.000Z  5 bytes  todos?owner=eq.ann"), "\(text.output)")
        #expect(text.output.contains("newest  2023-11-14T22:28:20.250Z  7 bytes  notes?id=eq.7"))
    }

    /// What no line of `inspect` may show: the accounts' queries, bodies and queued edits.
    private static let accountsContent = ["alice-query", "alice-body", "alice-edit", "bob-edit", "sov:queue:"]

    /// A SQLite store (released before the command opens it) where a real ``QueryCache`` and
    /// ``WriteQueue`` wrote for the implicit account (one answer, one queued write), for `alice`
    /// (two answers, a queued and a rejected write) and for `bob` (a queued write); `app:theme`
    /// is an app's own key, no account's.
    private func storeWithAccounts(in folder: Fixtures.Folder) async throws -> String {
        let path = folder.file("accounts.sqlite")
        let store = try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: path))
        let serverTime = Date(timeIntervalSince1970: 1_700_000_000)
        try await QueryCache(store: store).put("todos?owner=eq.me", body: "[1]", serverTime: serverTime)
        try await WriteQueue(store: store).enqueue(DataRequest(method: "POST", path: "/rest/v1/todos", body: "{}"))

        let alice = AccountScopedStore(wrapping: store, account: try AccountID("alice"))
        let aliceCache = try await QueryCache(store: alice)
        try await aliceCache.put("notes?alice-query=1", body: #"["alice-body"]"#, serverTime: serverTime)
        try await aliceCache.put("notes?alice-query=2", body: #"["alice-body", 2]"#, serverTime: serverTime)
        let aliceQueue = try await WriteQueue(store: alice)
        for edit in ["alice-edit-1", "alice-edit-2"] {
            try await aliceQueue.enqueue(DataRequest(method: "PATCH", path: "/rest/v1/notes", body: edit))
        }
        let refused = try #require(try await aliceQueue.pending().first)
        try #require(try await aliceQueue.reject(refused.id, status: 403, message: "alice-edit refused") != nil)

        let bob = AccountScopedStore(wrapping: store, account: try AccountID("bob"))
        try await WriteQueue(store: bob).enqueue(DataRequest(method: "POST", path: "/rest/v1/notes", body: "bob-edit"))
        try await store.set("app:theme", "dark")
        return path
    }

    /// Entries and stored bytes (key and value) under `prefix` in `store`.
    private func usage(_ store: any OfflineStore, _ prefix: String) async throws -> (entries: Int, bytes: Int) {
        let entries = try await store.dataEntries(prefix, after: nil, limit: .max)
        return (entries.count, entries.reduce(0) { $0 + $1.key.utf8.count + $1.data.count })
    }

    /// What `inspect --json` must say of each account of the store at `path`, counted here by
    /// prefix from its stored entries: `[account or "(implicit)": ["cachedEntries": …, …]]`.
    private func expectedAccounts(ofStoreAt path: String) async throws -> [String: [String: Int]] {
        let store = try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: path))
        var expected: [String: [String: Int]] = [:]
        for (name, prefix) in [("(implicit)", ""), ("alice", "sov:account:alice/"), ("bob", "sov:account:bob/")] {
            var all = try await usage(store, prefix + "sov:")
            if prefix.isEmpty {
                let accounts = try await usage(store, "sov:account:")
                let device = try await usage(store, "sov:meta:encryption")
                all = (all.entries - accounts.entries - device.entries, all.bytes - accounts.bytes - device.bytes)
            }
            var counts: [String: Int] = [:]
            var other = all
            for (kind, area) in [("cached", "sov:cache:l2:"), ("queued", "sov:queue:"), ("rejected", "sov:rejected:")] {
                let part = try await usage(store, prefix + area)
                counts[kind + "Entries"] = part.entries
                counts[kind + "Bytes"] = part.bytes
                other = (other.entries - part.entries, other.bytes - part.bytes)
            }
            counts["otherEntries"] = other.entries
            counts["otherBytes"] = other.bytes
            expected[name] = counts
        }
        return expected
    }

    /// `inspect --json`'s `accounts`, keyed by account (`"(implicit)"` for `null`), in its order.
    private func reportedAccounts(_ run: CommandRunner.Run) throws -> [(String, [String: Int])] {
        let report = try #require(try JSONSerialization.jsonObject(with: Data(run.output.utf8)) as? [String: Any])
        let accounts = try #require(report["accounts"] as? [[String: Any]], "\(run.output)")
        return try accounts.map { account in
            let name = account["account"] is NSNull ? "(implicit)" : try #require(account["account"] as? String)
            return (name, account.compactMapValues { $0 as? Int })
        }
    }

    @Test func listsEachAccountsCountsAndBytesAndNoContent() async throws {
        let folder = try Fixtures.Folder()
        let path = try await storeWithAccounts(in: folder)
        let expected = try await expectedAccounts(ofStoreAt: path)
        #expect(expected["alice"]?["cachedEntries"] == 2 && expected["alice"]?["queuedEntries"] == 1)
        #expect(expected["alice"]?["rejectedEntries"] == 1 && expected["bob"]?["queuedEntries"] == 1)
        #expect(expected["(implicit)"]?["cachedEntries"] == 1 && expected["(implicit)"]?["queuedEntries"] == 1)

        let run = try await CommandRunner.run(["inspect", "sqlite:" + path, "--json"])
        #expect(run.status == 0, "\(run.errors)")
        let reported = try reportedAccounts(run)
        #expect(reported.map(\.0) == ["(implicit)", "alice", "bob"], "the implicit account first, then by id")
        for (name, counts) in reported {
            #expect(counts == expected[name], "\(name)")
        }

        let text = try await CommandRunner.run(["inspect", "sqlite:" + path])
        #expect(text.status == 0, "\(text.errors)")
        #expect(text.output.contains("pending writes (queue): 3"), "every account's: \(text.output)")
        #expect(text.output.contains("accounts: 2 and the implicit one\n"))
        let alice = try #require(expected["alice"])
        #expect(
            text.output.contains(
                "  alice       cached 2 (\(alice["cachedBytes"]!) bytes), queued 1 (\(alice["queuedBytes"]!) bytes), "
                    + "rejected 1 (\(alice["rejectedBytes"]!) bytes), other \(alice["otherEntries"]!) "
                    + "(\(alice["otherBytes"]!) bytes)\n"), "\(text.output)")
        #expect(text.output.contains("  (implicit)  cached 1 "))
        for content in Self.accountsContent {
            #expect(!text.output.contains(content) && !run.output.contains(content), "\(content) is shown")
        }
    }

    @Test func countsAnEncryptedStoresAccountsWithoutItsKey() async throws {
        let folder = try Fixtures.Folder()
        let plain = try await storeWithAccounts(in: folder)
        let encrypted = folder.file("encrypted.sqlite")
        let migrate = try await CommandRunner.run(
            ["migrate", "--from", "sqlite:" + plain, "--to", "encrypted+sqlite:" + encrypted],
            environment: ["SOVARIA_PASSPHRASE": "correct horse"])
        try #require(migrate.status == 0, "\(migrate.errors)")
        let raw = try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: encrypted))
        try #require(try await raw.data("sov:meta:encryption") != nil, "the device's salt record is in the store")

        let run = try await CommandRunner.run(["inspect", "encrypted+sqlite:" + encrypted, "--json"])
        #expect(run.status == 0, "no key needed: \(run.errors)")
        let reported = try reportedAccounts(run)
        let plainCounts = try await expectedAccounts(ofStoreAt: plain)
        let storedCounts = try await expectedAccounts(ofStoreAt: encrypted)
        #expect(reported.map(\.0) == ["(implicit)", "alice", "bob"])
        for (name, counts) in reported {
            #expect(counts == storedCounts[name], "\(name): the stored sizes")
            let entries = counts.filter { $0.key.hasSuffix("Entries") }
            #expect(entries == plainCounts[name]?.filter { $0.key.hasSuffix("Entries") }, "\(name): the plain counts")
        }
        #expect(
            (storedCounts["alice"]?["cachedBytes"] ?? 0) > (plainCounts["alice"]?["cachedBytes"] ?? .max),
            "sealed values are larger than the plain ones")
    }

    @Test func leavesOutAnEmptyImplicitAccountAndKeysOfNoAccount() async throws {
        let folder = try Fixtures.Folder()
        let path = folder.file("bob.sqlite")
        do {
            let store = try SQLiteOfflineStore(fileURL: URL(fileURLWithPath: path))
            let bob = AccountScopedStore(wrapping: store, account: try AccountID("bob"))
            try await WriteQueue(store: bob).enqueue(
                DataRequest(method: "POST", path: "/rest/v1/notes", body: "bob-edit"))
            try await store.set("app:theme", "dark")
            try await store.set("sov:account:no-slash", "x")
            try await store.set("sov:account:not an id/sov:queue:1", "x")
            try await store.set("sov:meta:migrate:checkpoint", "{}")
        }
        let run = try await CommandRunner.run(["inspect", "sqlite:" + path, "--json"])
        #expect(run.status == 0, "\(run.errors)")
        let reported = try reportedAccounts(run)
        #expect(reported.map(\.0) == ["bob"], "\(run.output)")
        #expect(reported.first?.1["queuedEntries"] == 1)

        let text = try await CommandRunner.run(["inspect", "sqlite:" + path])
        #expect(text.output.contains("accounts: 1\n  bob  cached 0 (0 bytes), queued 1 ("), "\(text.output)")
        #expect(!text.output.contains("(implicit)"))
    }
}
