import Foundation
import Sovaria
import SovariaTestKit
import Synchronization
import Testing

@testable import SovariaFiles

/// One bound across every account's file caches on a device (issue 60, item 5): the caches
/// opened with an account on one directory and one metadata store, and the files the store
/// records for the accounts with no cache open, are kept within one bound, least recently used
/// first whoever owns the file. On every metadata engine.
@Suite struct FileCacheAccountBudgetTests {
    /// Three accounts' caches over one bound: the two files used longest ago go, one of Alice's
    /// and one of Carol's, though each account alone is far within the bound.
    @Test(arguments: MetadataEngine.all)
    func theLeastRecentlyUsedFilesGoFirstWhoeverOwnsThem(engine: MetadataEngine) async throws {
        let bench = try await AccountBench(engine)
        let caches = [
            "alice": try await bench.open("alice", .bytes(10_000)),
            "bob": try await bench.open("bob", .bytes(10_000)),
            "carol": try await bench.open("carol", .bytes(10_000)),
        ]
        // alice 0, bob 0, carol 0, alice 1 … alice 3: a minute apart, 10,000 bytes in all.
        for number in 0..<10 {
            let owner = ["alice", "bob", "carol"][number % 3]
            try await put(caches[owner]!, "\(owner) \(number / 3)", 1_000, tag: number)
            await bench.waitForPendingWork(caches.values)
            bench.clock.advance(by: 60)
        }
        #expect(bench.onDisk().values.reduce(0) { $0 + $1.count } == 10, "at the bound is not past it")
        try #require(try await caches["bob"]!.open("bob 0") != nil)  // now used most recently
        bench.clock.advance(by: 60)
        try await put(caches["carol"]!, "carol 3", 1_000, tag: 10)
        await bench.waitForPendingWork(caches.values)

        let survivors = [
            "alice": ["alice 1", "alice 2", "alice 3"], "bob": ["bob 0", "bob 1", "bob 2"],
            "carol": ["carol 1", "carol 2", "carol 3"],
        ]
        #expect(bench.onDisk() == survivors.mapValues { Set($0.map(fileID)) }, "alice 0 and carol 0 were oldest")
        for (owner, keys) in survivors {
            #expect(try await bench.records(owner) == Set(keys.map(fileID)), "\(owner)'s records match its files")
        }
        #expect(!caches["alice"]!.contains("alice 0") && !caches["carol"]!.contains("carol 0"))
        #expect(caches["bob"]!.contains("bob 0"))
        #expect(caches.values.map(\.totalBytes).sorted() == [3_000, 3_000, 3_000])
        #expect(caches["carol"]!.boundTotalBytes == 9_000, "a tenth below the shared bound")
        #expect(caches["alice"]!.statistics.evictions == 1, "evicted through Alice's own cache")
        #expect(caches["carol"]!.statistics.evictions == 1)
        #expect(caches["bob"]!.statistics.evictions == 0)
    }

    /// A closed account's files count and go first when they are oldest: file and record both.
    /// Opened again, the account's cache holds what is left, and the total counts it once.
    @Test(arguments: MetadataEngine.all)
    func aClosedAccountsFilesAreEvictedByAnOpenAccountsPass(engine: MetadataEngine) async throws {
        let bench = try await AccountBench(engine)
        // Alice fills a cache of hers and releases it: she is a closed account now.
        try await bench.closedAccount("alice", files: 5, bytes: 1_000)
        let bob = try await bench.open("bob", .bytes(10_000))
        for number in 0..<6 {
            try await put(bob, "bob \(number)", 1_000, tag: 10 + number)
            await bob.waitForPendingWork()
            bench.clock.advance(by: 60)
        }

        let alicesLeft = Set((2..<5).map { fileID("alice \($0)") })
        #expect(bench.onDisk()["alice"] == alicesLeft, "alice 0 and 1 were used longest ago")
        #expect(try await bench.records("alice") == alicesLeft, "and their records went with them")
        #expect(bench.onDisk()["bob"]?.count == 6)
        #expect(bob.boundTotalBytes == 9_000)
        #expect(bob.statistics.evictions == 0, "none of Bob's")

        let alice = try await bench.open("alice", .bytes(10_000))
        #expect(alice.fileCount == 3)
        #expect(alice.totalBytes == 3_000)
        #expect(!alice.contains("alice 0") && !alice.contains("alice 1") && alice.contains("alice 2"))
        #expect(try await alice.open("alice 0") == nil)
        #expect(bob.boundTotalBytes == 9_000, "Alice's files counted once, by her cache")
        #expect(alice.boundTotalBytes == 9_000)
    }

    /// Another open account's leased file, and its file used in the last 30 seconds, are kept:
    /// the pass evicts through that account's cache, which protects them.
    @Test(arguments: MetadataEngine.all)
    func anotherOpenAccountsLeasedAndRecentlyUsedFilesAreKept(engine: MetadataEngine) async throws {
        let bench = try await AccountBench(engine)
        let alice = try await bench.open("alice", .bytes(3_000))
        let bob = try await bench.open("bob", .bytes(3_000))
        try await put(alice, "alice 0", 1_000, tag: 0)  // t = 0
        bench.clock.advance(by: 60)
        try await put(alice, "alice 1", 1_000, tag: 1)  // t = 60
        bench.clock.advance(by: 60)
        try await put(bob, "bob 0", 1_000, tag: 2)  // t = 120
        await bench.waitForPendingWork([alice, bob])
        bench.clock.advance(by: 80)
        let lease = try #require(try await alice.open("alice 0"))  // used at t = 200, leased on
        bench.clock.advance(by: 200)
        try #require(try await alice.open("alice 1") != nil)  // used at t = 400: the last 30 s
        bench.clock.advance(by: 10)
        try await put(bob, "bob 1", 1_000, tag: 3)  // t = 410: 4,000 bytes, over the bound
        await bench.waitForPendingWork([alice, bob])

        #expect(bench.onDisk()["alice"] == Set([fileID("alice 0"), fileID("alice 1")]), "leased, and used at 400")
        #expect(bench.onDisk()["bob"] == Set([fileID("bob 1")]), "bob 0 was the oldest unprotected file")
        #expect(try await bench.records("bob") == Set([fileID("bob 1")]))
        #expect(alice.contains("alice 0") && alice.contains("alice 1") && !bob.contains("bob 0"))
        #expect(alice.statistics.protectedBytes == 2_000, "what protection cost, on Alice's cache")
        #expect(alice.statistics.evictions == 0)
        #expect(bob.boundTotalBytes == 3_000)
        lease.end()
    }

    /// A cache opened without an account (public files) on the same directory and store keeps
    /// its own bound: the accounts' passes neither count nor touch its files, and its passes
    /// touch none of theirs.
    @Test(arguments: MetadataEngine.all)
    func theDeviceWideCacheKeepsItsOwnBound(engine: MetadataEngine) async throws {
        let bench = try await AccountBench(engine)
        let device = try await FileCache(
            directory: bench.parent, metadata: bench.store, size: .bytes(2_000), clock: bench.clock.function)
        try await put(device, "public 0", 1_000, tag: 0)  // older than every account's file
        bench.clock.advance(by: 60)
        try await put(device, "public 1", 1_000, tag: 1)
        bench.clock.advance(by: 60)
        let alice = try await bench.open("alice", .bytes(3_000))
        let bob = try await bench.open("bob", .bytes(3_000))
        for (number, cache) in [alice, alice, bob, bob].enumerated() {
            try await put(cache, "\(cache === alice ? "alice" : "bob") \(number % 2)", 1_000, tag: 10 + number)
            await bench.waitForPendingWork([alice, bob])
            bench.clock.advance(by: 60)
        }
        // 4,000 bytes of accounts' files over their 3,000: the oldest two of theirs went.
        #expect(bench.onDisk()["alice"] == Set<String>())
        #expect(bench.onDisk()["bob"] == Set([fileID("bob 0"), fileID("bob 1")]))
        #expect(device.fileCount == 2 && device.statistics.evictions == 0, "the public files were not touched")
        #expect(
            Set(try await bench.store.keys("sov:file:").compactMap { FileKeys.parse($0)?.id.hex })
                == Set([fileID("public 0"), fileID("public 1")]))
        #expect(alice.boundTotalBytes == 2_000, "the public files are not counted in the accounts' bound")

        try await put(device, "public 2", 1_000, tag: 2)  // 3,000 over its own 2,000
        await device.waitForPendingWork()
        #expect(device.totalBytes == 1_000 && device.contains("public 2"), "down to 90% of its own bound")
        #expect(device.boundTotalBytes == 1_000)
        #expect(bench.onDisk()["bob"]?.count == 2, "and none of the accounts' files")
        #expect(bob.boundTotalBytes == 2_000)
    }

    /// The store fails the closed account's record deletes in the middle of a pass: the files
    /// went, their records stayed. Nothing reads them as present, and the next pass deletes the
    /// records and finishes the work.
    @Test(arguments: MetadataEngine.all)
    func aStoreFailureMidwayLeavesAConsistentStateAndTheNextPassCompletes(engine: MetadataEngine) async throws {
        let bench = try await AccountBench(engine)
        try await bench.closedAccount("alice", files: 20, bytes: 100)
        let failing = FailingWritesStore(bench.store)
        let bob = try await FileCache(
            directory: bench.parent, metadata: failing, account: try AccountID("bob"),
            configuration: FileCache.Configuration(size: .bytes(2_000), clock: bench.clock.function))
        failing.failNextWrite(ofKeysStartingWith: AccountScopedStore.accountPrefix(of: try AccountID("alice")))
        // 3,900 bytes: every file of Alice's must go, 16 in the first batch, whose records fail.
        try await put(bob, "bob 0", 1_900, tag: 99)
        await bob.waitForPendingWork()
        #expect(failing.failures == 1 && !failing.isArmed)
        #expect(bench.onDisk()["alice"]?.count == 4, "the first batch's files went")
        #expect(try await bench.records("alice").count == 20, "their records stayed")

        try await bob.evictIfOverBound()
        #expect(bench.onDisk()["alice"] == Set<String>(), "the next pass took the other four")
        #expect(try await bench.records("alice") == Set<String>(), "and deleted the records naming no file")
        #expect(bob.contains("bob 0"), "Bob's file is used in the last 30 seconds")
        #expect(bob.boundTotalBytes == 1_900)
        let alice = try await bench.open("alice", .bytes(2_000))
        #expect(alice.fileCount == 0 && alice.totalBytes == 0)
        #expect(try await alice.open("alice 0") == nil)
    }

    /// A closed account's file used again after the pass counted it (its record now names a
    /// newer use) is not deleted on the strength of the old count: the pass checks each record
    /// under the account's folder lock, and counts again.
    @Test(arguments: MetadataEngine.all)
    func aClosedAccountsFileUsedSinceTheCountIsKept(engine: MetadataEngine) async throws {
        let bench = try await AccountBench(engine)
        try await bench.closedAccount("alice", files: 5, bytes: 1_000)
        // Right after the pass lists Alice's records, her "alice 0" is used (as a cache of hers
        // opened, used it and closed would leave it): its record now names a newer use.
        let alice = try AccountID("alice")
        let reused = fileID("alice 0")
        let hooked = AfterListingStore(
            bench.store, prefix: AccountScopedStore.accountPrefix(of: alice) + FileKeys.prefix
        ) {
            let view = AccountScopedStore(wrapping: bench.store, account: alice)
            for key in try await view.keys(FileKeys.prefix) {
                guard let parsed = FileKeys.parse(key), parsed.id.hex == reused else { continue }
                let value = try #require(try await view.data(key))
                let newer = FileKeys.metadataKey(
                    id: parsed.id, sizeBytes: parsed.sizeBytes, lastUseMillis: parsed.lastUseMillis + 3_600_000)
                try await view.write([.delete(key: key), .setData(key: newer, data: value)])
            }
        }
        let bob = try await bench.open("bob", .bytes(10_000), store: hooked)
        for number in 0..<6 {
            try await put(bob, "bob \(number)", 1_000, tag: 10 + number)
            await bob.waitForPendingWork()
            bench.clock.advance(by: 60)
        }
        #expect(hooked.fired, "the pass counted Alice's records")
        #expect(bench.onDisk()["alice"]?.contains(reused) == true, "the file used since the count stays")
        #expect(try await bench.records("alice").contains(reused), "with its newer record")
        #expect(bench.onDisk()["alice"]?.contains(fileID("alice 1")) == false, "the oldest there was went")
    }

    /// A pass holds each open cache for one round only: a cache the app lets go while a long pass
    /// runs is freed before the pass's next round, its folder lock with it, not when the pass ends
    /// (an account signing in again meanwhile would find its folder locked).
    @Test(arguments: MetadataEngine.all)
    func aCacheLetGoDuringAPassIsFreedBeforeItsNextRound(engine: MetadataEngine) async throws {
        let bench = try await AccountBench(engine)
        // 40 old files of 100 bytes: a pass down to Bob's target takes two rounds of them at least.
        try await bench.closedAccount("alice", files: 40, bytes: 100)
        let hooked = BeforeWritesStore(
            bench.store, prefix: AccountScopedStore.accountPrefix(of: try AccountID("alice")))
        // Carol's bound is far: her download runs no pass of its own.
        let carol = WeakCache(try await bench.open("carol", .bytes(100_000), store: hooked))
        try await put(carol.held!, "carol 0", 100, tag: 50)
        await carol.held!.waitForPendingWork()
        let freedBeforeRoundTwo = Mutex<Bool?>(nil)
        hooked.beforeEach { round in
            // Round one's deletes of Alice's files: the app lets Carol's cache go.
            if round == 1 { carol.letGo() }
            if round == 2 { freedBeforeRoundTwo.withLock { $0 = carol.isFreed } }
        }
        let bob = try await bench.open("bob", .bytes(2_000), store: hooked)
        try await put(bob, "bob 0", 1_000, tag: 60)
        await bob.waitForPendingWork()
        #expect(hooked.calls >= 2, "the pass took \(hooked.calls) rounds of Alice's files")
        #expect(freedBeforeRoundTwo.withLock { $0 } == true, "Carol's cache was still held in the pass's second round")
        #expect(bob.boundTotalBytes <= 1_800)
    }

    /// Records whose file is gone (deleted behind the cache, or the account's whole folder) name
    /// no byte: a pass neither counts nor evicts them, deletes them, and evicts the files there are.
    @Test(arguments: MetadataEngine.all)
    func closedAccountsRecordsWithoutFilesCountNothing(engine: MetadataEngine) async throws {
        let bench = try await AccountBench(engine)
        for owner in ["alice", "carol"] {
            let cache = try await bench.open(owner, .bytes(10_000))
            for number in 0..<3 {
                try await put(cache, "\(owner) \(number)", 1_000, tag: number)
                bench.clock.advance(by: 60)
            }
            await cache.waitForPendingWork()
        }
        try FileManager.default.removeItem(
            at: bench.folder(of: "alice").appendingPathComponent("files/" + fileID("alice 0")))
        try FileManager.default.removeItem(at: bench.folder(of: "carol"))
        let bob = try await bench.open("bob", .bytes(3_500))
        try await put(bob, "bob 0", 1_000, tag: 9)
        await bob.waitForPendingWork()
        // Alice's two files and Bob's one: within the bound.
        #expect(bob.boundTotalBytes == 3_000)
        #expect(bob.statistics.evictions == 0 && bench.onDisk()["alice"]?.count == 2)
        #expect(try await bench.records("alice") == Set([fileID("alice 1"), fileID("alice 2")]))
        #expect(try await bench.records("carol") == Set<String>())

        bench.clock.advance(by: 60)
        try await put(bob, "bob 1", 1_000, tag: 10)
        await bob.waitForPendingWork()
        // 4,000 over 3,500: down to 3,150, one file, the oldest there is.
        #expect(bench.onDisk()["alice"] == Set([fileID("alice 2")]), "alice 1 was the oldest file there is")
        #expect(try await bench.records("alice") == Set([fileID("alice 2")]))
        #expect(bob.boundTotalBytes == 3_000)
    }

    /// Within the bound a download reads the totals in memory: no listing of any account's keys.
    /// The closed accounts are counted again once an account's cache opens.
    @Test(arguments: MetadataEngine.all)
    func withinTheBoundADownloadListsNoOtherAccountsKeys(engine: MetadataEngine) async throws {
        let bench = try await AccountBench(engine)
        do {
            let carol = try await bench.open("carol", .bytes(100_000))
            try await put(carol, "carol 0", 1_000, tag: 0)
            await carol.waitForPendingWork()
        }
        let listings = ListingCountingStore(bench.store)
        let alice = try await bench.open("alice", .bytes(100_000), store: listings)
        let bob = try await bench.open("bob", .bytes(100_000), store: listings)
        try await put(alice, "alice 0", 1_000, tag: 1)
        await alice.waitForPendingWork()
        #expect(listings.count > 0, "the first download after the opens counts Carol's files")
        #expect(alice.boundTotalBytes == 2_000)

        listings.reset()
        for number in 1..<21 {
            try await put(number % 2 == 0 ? alice : bob, "file \(number)", 1_000, tag: number)
            await bench.waitForPendingWork([alice, bob])
        }
        #expect(listings.count == 0, "twenty downloads within the bound list nothing: \(listings.prefixes)")
        #expect(bob.boundTotalBytes == 22_000)

        let dave = try await bench.open("dave", .bytes(100_000), store: listings)
        listings.reset()
        try await put(dave, "dave 0", 1_000, tag: 30)
        await dave.waitForPendingWork()
        #expect(listings.prefixes.contains(AccountScopedStore.keyPrefix), "an open counts the others again")
        #expect(dave.boundTotalBytes == 23_000)
    }
}

/// One test's folder of account caches and its metadata store, opened once, with one clock.
struct AccountBench {
    let folder: TemporaryFolder
    let store: any OfflineStore
    let clock = TestClock()
    var parent: URL { folder.child("files") }

    init(_ engine: MetadataEngine) async throws {
        folder = try TemporaryFolder()
        store = try await engine.open(folder.child("meta"))
    }

    /// Opens `account`'s cache on the bench's folder, with `store` in place of the bench's store
    /// object (a wrapper of it) when given.
    func open(_ account: String, _ size: FileCacheSize, store: (any OfflineStore)? = nil) async throws -> FileCache {
        try await FileCache(
            directory: parent, metadata: store ?? self.store, account: try AccountID(account),
            configuration: FileCache.Configuration(size: size, clock: clock.function))
    }

    /// Gives `account` `files` files of `bytes` each ("<account> 0", "<account> 1", …), a minute
    /// apart, through a cache of its own that is then released: an account with no cache open.
    func closedAccount(_ account: String, files: Int, bytes: Int) async throws {
        let cache = try await open(account, .bytes(10_000))
        for number in 0..<files {
            try await put(cache, "\(account) \(number)", bytes, tag: number)
            clock.advance(by: 60)
        }
        await cache.waitForPendingWork()
    }

    func folder(of account: String) throws -> URL {
        FileCache.accountDirectory(of: try AccountID(account), in: parent)
    }

    /// Each account folder's file names in `files/`, by account.
    func onDisk() -> [String: Set<String>] {
        var found: [String: Set<String>] = [:]
        for account in ["alice", "bob", "carol", "dave"] {
            guard let path = try? folder(of: account).appendingPathComponent("files").path,
                let names = try? FileManager.default.contentsOfDirectory(atPath: path)
            else { continue }
            found[account] = Set(names)
        }
        return found
    }

    /// The file ids `account`'s records in the store name.
    func records(_ account: String) async throws -> Set<String> {
        let view = AccountScopedStore(wrapping: store, account: try AccountID(account))
        return Set(try await view.keys("sov:file:").map { FileKeys.parse($0)?.id.hex ?? "malformed " + $0 })
    }

    func waitForPendingWork(_ caches: some Sequence<FileCache>) async {
        for cache in caches { await cache.waitForPendingWork() }
    }
}

/// Counts the listings (`keys`, `entries`, and their borrowed scans) asked of a store, by prefix.
/// Calls `hook` with the call's number (1, 2, …) before each batch that writes a key under
/// `prefix`.
final class BeforeWritesStore: ForwardingStore {
    let inner: any OfflineStore
    private let prefix: String
    private let state = Mutex<(calls: Int, hook: (@Sendable (Int) -> Void)?)>((0, nil))

    init(_ inner: any OfflineStore, prefix: String) {
        self.inner = inner
        self.prefix = prefix
    }

    var calls: Int { state.withLock { $0.calls } }
    func beforeEach(_ hook: @escaping @Sendable (Int) -> Void) { state.withLock { $0.hook = hook } }

    func write(_ batch: [StoreWrite]) async throws {
        if batch.contains(where: { $0.key.utf8.starts(with: prefix.utf8) }) {
            let (call, hook) = state.withLock { state in
                state.calls += 1
                return (state.calls, state.hook)
            }
            hook?(call)
        }
        try await inner.write(batch)
    }
}

/// A cache the test holds until it lets it go, and then sees whether it was freed.
final class WeakCache: Sendable {
    private let state: Mutex<(strong: FileCache?, weak: WeakReference)>

    private final class WeakReference: @unchecked Sendable {
        weak var cache: FileCache?
        init(_ cache: FileCache) { self.cache = cache }
    }

    init(_ cache: FileCache) { state = Mutex((cache, WeakReference(cache))) }

    var held: FileCache? { state.withLock { $0.strong } }
    func letGo() { state.withLock { $0.strong = nil } }
    var isFreed: Bool { state.withLock { $0.weak.cache == nil } }
}

/// Runs `hook` once, right after the first listing of keys under `prefix` returns.
final class AfterListingStore: ForwardingStore {
    let inner: any OfflineStore
    private let prefix: String
    private let hook: @Sendable () async throws -> Void
    private let state = Mutex(false)

    init(_ inner: any OfflineStore, prefix: String, hook: @escaping @Sendable () async throws -> Void) {
        self.inner = inner
        self.prefix = prefix
        self.hook = hook
    }

    var fired: Bool { state.withLock { $0 } }

    func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        let page = try await inner.withKeys(prefix, after: after, limit: limit, body)
        guard prefix == self.prefix else { return page }
        let first = state.withLock { fired in
            defer { fired = true }
            return !fired
        }
        if first { try await hook() }
        return page
    }
}

final class ListingCountingStore: ForwardingStore {
    let inner: any OfflineStore
    private let listed = Mutex<[String]>([])

    init(_ inner: any OfflineStore) { self.inner = inner }

    var prefixes: [String] { listed.withLock { $0 } }
    var count: Int { listed.withLock { $0.count } }
    func reset() { listed.withLock { $0 = [] } }

    func keys(_ prefix: String) async throws -> [String] {
        listed.withLock { $0.append(prefix) }
        return try await inner.keys(prefix)
    }

    func entries(_ prefix: String, after: String?, limit: Int) async throws -> [StoreEntry] {
        listed.withLock { $0.append(prefix) }
        return try await inner.entries(prefix, after: after, limit: limit)
    }

    func withKeys(
        _ prefix: String, after: String?, limit: Int, _ body: (_ key: UnsafeRawBufferPointer) throws -> Bool
    ) async throws -> StoreScanPage {
        listed.withLock { $0.append(prefix) }
        return try await inner.withKeys(prefix, after: after, limit: limit, body)
    }

    func withEntries(
        _ prefix: String, after: String?, limit: Int, _ body: StoreEntryVisitor
    ) async throws -> StoreScanPage {
        listed.withLock { $0.append(prefix) }
        return try await inner.withEntries(prefix, after: after, limit: limit, body)
    }
}
