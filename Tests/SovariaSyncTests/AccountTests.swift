import Foundation
import Sovaria
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSodium
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaSync

/// Accounts on one device (issue 60): one store, the users of the test server over PostgreSQL
/// with row-level security (`owner = current_user`), a controller per signed-in user.
@Suite struct AccountTests {
    static let engines = TestEngine.standard(including: .encrypted)
    static let notes = PostgREST.select("notes", columns: "id,owner,title", order: "id")

    /// The current user's token, a JSON Web Token naming them (`sub`), as a sign-in issues it;
    /// the app signs another user in by changing ``user``.
    final class UserToken: AccessTokenProvider {
        private let state: Mutex<(user: String, signature: String)>
        init(user: String, signature: String = "test-signature") { state = Mutex((user, signature)) }

        var user: String {
            get { state.withLock { $0.user } }
            set { state.withLock { $0.user = newValue } }
        }
        func accessToken() async throws -> String? {
            state.withLock { TestJWT.token(of: $0.user, signature: $0.signature) }
        }
        func refreshAccessToken() async throws {}
    }

    /// A controller for `user` on `store`, talking to `server` with `tokens` (by default, that
    /// user's token).
    static func signIn(
        _ user: String, on store: any OfflineStore, _ server: RESTServer, feed: (any ChangeFeed)? = nil,
        key: EncryptionKey? = nil, tokens: (any AccessTokenProvider)? = nil
    ) async throws -> (offline: SovariaOffline, transport: RecordingSwitch) {
        let tokens = tokens ?? UserToken(user: user)
        let transport = RecordingSwitch(
            URLSessionTransport(baseURL: server.baseURL, tokens: tokens, configuration: .testServer))
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.account = try AccountID(user)
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.changeFeed = feed
        if let key { configuration.wrapAccountStore = { EncryptedOfflineStore(wrapping: $0, key: key) } }
        // Tasks carry a version: an update of one changed since it was read is a conflict.
        configuration.conflictRules = ["tasks": ConflictRule(versionColumn: "version", onConflict: .reject)]
        configuration.overlay = PostgRESTOverlay(
            tables: ["notes": .init(primaryKey: "id"), "tasks": .init(primaryKey: "id")], textOrder: .bytes)
        return (try await SovariaOffline(store: store, transport: transport, configuration: configuration), transport)
    }

    static func seed(_ server: RESTServer, as user: String, _ json: String) async throws {
        let transport = URLSessionTransport(
            baseURL: server.baseURL, tokens: UserToken(user: user), configuration: .testServer)
        let answer = try await transport.send(PostgREST.insert(into: "notes", json: json, returning: false))
        try #require(answer.isSuccess, "seed: \(answer.status) \(answer.body)")
    }

    static func ids(_ read: LocalRead) throws -> [String] {
        struct Row: Decodable { var id: String }
        return try read.decode([Row].self, using: JSONDecoder())?.map(\.id) ?? []
    }

    @Test(arguments: engines)
    func anotherUserSeesNoneOfTheFirstsRowsAndTheFirstsWritesWaitForTheirAuthor(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await Self.seed(server, as: "alice", #"{"id":"a1","title":"A's note"}"#)
        try await Self.seed(server, as: "bob", #"{"id":"b1","title":"B's note"}"#)
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)

        // Alice reads, goes offline, edits a row and adds one, and the app switches users.
        let alice = try await Self.signIn("alice", on: store, server)
        #expect(try Self.ids(try await alice.offline.read(Self.notes)) == ["a1"])
        alice.transport.isOffline = true
        _ = try await alice.offline.write(
            PostgREST.update("notes", where: [.eq("id", "a1")], json: #"{"title":"A's offline edit"}"#))
        _ = try await alice.offline.write(
            PostgREST.insert(into: "notes", json: #"{"id":"a2","title":"A's offline note"}"#, returning: false))
        await alice.offline.close()

        let bob = try await Self.signIn("bob", on: store, server)
        #expect(bob.offline.status.otherAccountsPendingCount == 2 && bob.offline.status.pendingCount == 0)
        // Nothing of Alice's, in any read policy, offline or on.
        let cached = try await bob.offline.read(Self.notes, policy: .cacheOnly)
        #expect(cached.body == nil && cached.pendingRows.isEmpty)
        bob.transport.isOffline = true
        await #expect(throws: SyncTransportError.self) { _ = try await bob.offline.read(Self.notes) }
        var live = bob.offline.observe(Self.notes, policy: .cacheOnly).makeAsyncIterator()
        #expect(try await live.next()?.body == nil)
        bob.transport.isOffline = false
        let online = try await bob.offline.read(Self.notes)
        #expect(try online.source == .network && Self.ids(online) == ["b1"])
        let sent = bob.transport.exchanges().map(\.request)
        #expect(sent.allSatisfy { $0.header("If-None-Match") == nil }, "no ETag of Alice's")
        #expect(try await bob.offline.pendingWrites().isEmpty)
        #expect(try await bob.offline.rejectedWrites().isEmpty)
        #expect(try await bob.offline.flush() == 0)
        #expect(bob.transport.exchanges().allSatisfy { $0.request.method == "GET" }, "nothing of Alice's sent")
        await bob.offline.close()

        // Alice comes back: her writes go, with her token, and apply as hers.
        let back = try await Self.signIn("alice", on: store, server)
        #expect(back.offline.status.pendingCount == 2 && back.offline.status.otherAccountsPendingCount == 0)
        #expect(try await back.offline.flush() == 2)
        #expect(
            try await server.query("SELECT id || '|' || owner || '|' || title FROM notes ORDER BY id") == [
                "a1|alice|A's offline edit", "a2|alice|A's offline note", "b1|bob|B's note",
            ])
        #expect(try Self.ids(try await back.offline.read(Self.notes, policy: .networkOnly)) == ["a1", "a2"])
    }

    @Test(arguments: engines)
    func signingOutKeepingWritesForgetsTheAnswersAndKeepsTheQueue(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await Self.seed(server, as: "alice", #"{"id":"a1","title":"A's note"}"#)
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let alice = try await Self.signIn("alice", on: store, server)
        _ = try await alice.offline.read(Self.notes)
        alice.transport.isOffline = true
        _ = try await alice.offline.write(
            PostgREST.update("notes", where: [.eq("id", "a1")], json: #"{"title":"kept"}"#))
        try await alice.offline.signOut(keepingUnsyncedWrites: true)
        await #expect(throws: SovariaOfflineError.self) { _ = try await alice.offline.read(Self.notes) }

        let again = try await Self.signIn("alice", on: store, server)
        #expect(try await again.offline.read(Self.notes, policy: .cacheOnly).response == nil, "answers forgotten")
        #expect(try await again.offline.pendingWrites().count == 1, "the unsynced edit kept")
        #expect(try await again.offline.flush() == 1)
        #expect(try await server.query("SELECT title FROM notes") == ["kept"])
    }

    @Test(arguments: engines)
    func signingOutForgettingWritesLeavesNothingOfTheAccount(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let alice = try await Self.signIn("alice", on: store, server)
        _ = try await alice.offline.read(Self.notes)
        alice.transport.isOffline = true
        _ = try await alice.offline.write(
            PostgREST.insert(into: "notes", json: #"{"id":"a9","title":"dropped"}"#, returning: false))
        let bob = try await Self.signIn("bob", on: store, server)
        _ = try await bob.offline.read(Self.notes)
        try await alice.offline.signOut(keepingUnsyncedWrites: false)
        let prefix = AccountScopedStore.keyPrefix + "alice"
        #expect(try await store.keys(prefix).allSatisfy { $0.contains(":meta:") }, "no answer or write of Alice's left")
        #expect(try await bob.offline.read(Self.notes, policy: .cacheOnly).response != nil, "Bob's stay")
        let again = try await Self.signIn("alice", on: store, server)
        #expect(try await again.offline.pendingWrites().isEmpty)
    }

    @Test(arguments: engines)
    func aSignedOutUsersKeptWritesAreUnreadableWithoutTheirKey(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await Self.seed(server, as: "alice", #"{"id":"a1","title":"A's note"}"#)
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let (alicesKey, otherKey) = (try EncryptionKey.random(), try EncryptionKey.random())
        let alice = try await Self.signIn("alice", on: store, server, key: alicesKey)
        _ = try await alice.offline.read(Self.notes)
        alice.transport.isOffline = true
        _ = try await alice.offline.write(
            PostgREST.update("notes", where: [.eq("id", "a1")], json: #"{"title":"a secret edit"}"#))
        try await alice.offline.signOut(keepingUnsyncedWrites: true)

        // The store holds no readable byte of it.
        let prefix = AccountScopedStore.keyPrefix + "alice/"
        let kept = try await store.dataEntries(prefix, after: nil, limit: 1_000)
        #expect(!kept.isEmpty)
        #expect(kept.allSatisfy { String(decoding: $0.data, as: UTF8.self).contains("secret") == false })
        // Another key, or none, opens nothing: the sealed key check refuses it before anything is
        // read, written or sent.
        for key in [otherKey, nil] {
            do {
                _ = try await Self.signIn("alice", on: store, server, key: key)
                Issue.record("opened with \(key == nil ? "no key" : "another user's key")")
            } catch let error as OfflineStoreError {
                #expect(error.code == .decryptionFailed)
            }
        }
        #expect(try await store.dataEntries(prefix, after: nil, limit: 1_000) == kept)
        let back = try await Self.signIn("alice", on: store, server, key: alicesKey)
        #expect(try await back.offline.flush() == 1)
        #expect(try await server.query("SELECT title FROM notes") == ["a secret edit"])
    }

    /// Three users on two devices, each device switching users at random (signing out keeping
    /// its writes, or closing), offline and online, writing notes: once every user has been back
    /// on every device with the network, each note on the server was written by its author, and
    /// every write a device acknowledged arrived once.
    @Test(arguments: [UInt64(52), 60, 61])
    func randomSwitchesOfThreeUsersOnTwoDevicesSendEveryWriteOnceAsItsAuthor(seed: UInt64) async throws {
        let server = try await RESTServer.start()
        let users = ["alice", "bob", "carol"]
        let folders = [try TemporaryFolder(), try TemporaryFolder()]
        var stores: [any OfflineStore] = []
        for folder in folders { stores.append(try await TestEngine.sqlite(.synced).open(folder.url)) }
        var random = SplitMix(seed: seed)
        var signedIn: [(user: String, offline: SovariaOffline, transport: RecordingSwitch)] = []
        for device in 0..<2 {
            let (offline, transport) = try await Self.signIn(users[device], on: stores[device], server)
            signedIn.append((users[device], offline, transport))
        }
        var acknowledged: [String: String] = [:]  // note id -> its author
        for step in 0..<80 {
            let device = Int(random.next() % 2)
            let current = signedIn[device]
            switch random.next() % 6 {
            case 0:  // another user takes the device
                if random.next() % 2 == 0 {
                    try await current.offline.signOut(keepingUnsyncedWrites: true)
                } else {
                    await current.offline.close()
                }
                let user = users[Int(random.next() % 3)]
                let (offline, transport) = try await Self.signIn(user, on: stores[device], server)
                transport.isOffline = current.transport.isOffline
                signedIn[device] = (user, offline, transport)
            case 1:
                current.transport.isOffline.toggle()
            case 2:
                _ = try? await current.offline.flush()
            default:
                let id = "\(current.user)-\(step)"
                let outcome = try await current.offline.write(
                    PostgREST.insert(into: "notes", json: #"{"id":"\#(id)","title":"t\#(step)"}"#, returning: false))
                switch outcome {
                case .sent, .queued: acknowledged[id] = current.user
                case .rejected(let rejected): Issue.record("\(id) refused: \(rejected.reason)")
                }
            }
        }
        // Quiescence: every user back on every device, online, until no write waits.
        for device in 0..<2 {
            await signedIn[device].offline.close()
            for user in users {
                let (offline, _) = try await Self.signIn(user, on: stores[device], server)
                _ = try await offline.flush()
                #expect(try await offline.pendingWrites().isEmpty, "\(user) on device \(device)")
                #expect(try await offline.rejectedWrites().isEmpty)
                await offline.close()
            }
        }
        let rows = try await server.query("SELECT id || '|' || owner FROM notes").sorted()
        #expect(rows == acknowledged.map { "\($0.key)|\($0.value)" }.sorted())
        #expect(rows.allSatisfy { $0.split(separator: "|")[0].hasPrefix($0.split(separator: "|")[1]) })
    }

    /// A sign-out while a flush sends: the flush ends first (its write answered and off the
    /// queue), the rest of the queue is kept, and nothing more is sent.
    @Test func aSignOutDuringAFlushLetsItEndAndKeepsTheRest() async throws {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.account = try AccountID("alice")
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        let store = MemoryOfflineStore()
        let offlineServer = ScriptedTransport()
        offlineServer.online = false
        let before = try await SovariaOffline(store: store, transport: offlineServer, configuration: configuration)
        for id in ["n1", "n2"] {
            _ = try await before.write(PostgREST.insert(into: "notes", json: #"{"id":"\#(id)"}"#, returning: false))
        }
        await before.close()

        let transport = HeldTransport()
        let offline = try await SovariaOffline(store: store, transport: transport, configuration: configuration)
        let flushing = Task { try await offline.flush() }
        await transport.firstRequestArrived()
        let signingOut = Task { try await offline.signOut(keepingUnsyncedWrites: true) }
        transport.releaseFirstRequest()
        _ = try? await flushing.value  // the flush may end early as the controller closes
        try await signingOut.value
        let sent = transport.server.received
        #expect(sent.count >= 1 && sent[0].body?.contains("n1") == true, "the held write went")
        let back = try await SovariaOffline(store: store, transport: offlineServer, configuration: configuration)
        let kept = try await back.pendingWrites()
        #expect(kept.count == 2 - sent.count, "what was not sent is kept: \(kept.count) of 2 after \(sent.count) sent")
        #expect(sent.count == 2 || kept.first?.request.body?.contains("n2") == true)
    }

    /// A token of the signed-in user that the server refuses (401: its signature is forged): the
    /// flush pauses for authorization, the writes stay queued, nothing is applied as anyone; with
    /// the user's own token they go, as theirs.
    @Test func aTokenTheServerRefusesKeepsTheWritesAndAppliesNothing() async throws {
        let server = try await RESTServer.start()
        let store = MemoryOfflineStore()
        let alice = try await Self.signIn("alice", on: store, server)
        alice.transport.isOffline = true
        for id in ["a1", "a2"] {
            _ = try await alice.offline.write(
                PostgREST.insert(into: "notes", json: #"{"id":"\#(id)","title":"offline"}"#, returning: false))
        }
        await alice.offline.close()

        let refused = try await Self.signIn(
            "alice", on: store, server, tokens: UserToken(user: "alice", signature: "forged"))
        _ = try? await refused.offline.flush()
        #expect(refused.offline.status.isPausedForAuthorization)
        #expect(refused.offline.status.pendingCount == 2, "nothing lost")
        #expect(
            !refused.transport.exchanges().isEmpty
                && refused.transport.exchanges().allSatisfy { $0.response.status == 401 })
        #expect(try await server.query("SELECT count(*)::text FROM notes") == ["0"], "nothing applied as anyone")
        await refused.offline.close()

        let back = try await Self.signIn("alice", on: store, server)
        #expect(try await back.offline.flush() == 2)
        #expect(try await server.query("SELECT id || '|' || owner FROM notes ORDER BY id") == ["a1|alice", "a2|alice"])
    }

    /// A controller whose first request waits at `transport` until the test lets it through.
    static func heldController(_ transport: HeldTransport, store: any OfflineStore) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.account = try AccountID("alice")
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        return try await SovariaOffline(store: store, transport: transport, configuration: configuration)
    }

    /// `close()` returns only after a read under way has ended: an app that switches the token
    /// when it returns never has a read of the last user's still out. (The order is certain when
    /// close waits; were it not to, it would end first whenever it outran the release.)
    @Test func closeReturnsAfterAReadUnderWayEnds() async throws {
        let transport = HeldTransport()
        transport.server.answer(DataResponse(status: 200, body: "[]"))
        let offline = try await Self.heldController(transport, store: MemoryOfflineStore())
        let events = Recorder<String>()
        let reading = Task {
            _ = try? await offline.read(Self.notes, policy: .networkOnly)
            events.append("read ended")
        }
        await transport.firstRequestArrived()
        let closing = Task {
            await offline.close()
            events.append("closed")
        }
        transport.releaseFirstRequest()
        await closing.value
        await reading.value
        #expect(events.all == ["read ended", "closed"])
        #expect(
            try await offline.store.keys("sov:cache:").isEmpty, "the answer that came back after the close is not kept")
    }

    /// The same for a write being sent, through `signOut` and through `close()`: the write's
    /// answer is taken (off the queue) before either returns.
    @Test(arguments: [true, false])
    func closingReturnsAfterAWriteBeingSentEnds(signingOut: Bool) async throws {
        let store = MemoryOfflineStore()
        let transport = HeldTransport()
        transport.server.online = false
        let offline = try await Self.heldController(transport, store: store)
        transport.server.online = true
        let events = Recorder<String>()
        let writing = Task {
            _ = try? await offline.write(PostgREST.insert(into: "notes", json: #"{"id":"n1"}"#, returning: false))
            events.append("write ended")
        }
        await transport.firstRequestArrived()
        let closing = Task {
            if signingOut { try await offline.signOut(keepingUnsyncedWrites: true) } else { await offline.close() }
            events.append("closed")
        }
        transport.releaseFirstRequest()
        try await closing.value
        await writing.value
        #expect(events.all == ["write ended", "closed"])
        let back = try await Self.heldController(HeldTransport(), store: store)
        #expect(try await back.pendingWrites().isEmpty, "the write was answered, not kept to be sent twice")
        #expect(transport.server.received.count == 1)
    }

    /// A close that did not wait for a read or a write under way would return while its request
    /// is still held at the transport: the request is let through only from inside one of the
    /// close's waits (for the work under way, or at the write gate), so a close that returns
    /// without waiting returns first, whatever the scheduling.
    @Test(arguments: ["read", "write"], [false, true])
    func closeWaitsForAReadOrAWriteUnderWay(_ work: String, signingOut: Bool) async throws {
        let transport = HeldTransport()
        transport.server.answer(DataResponse(status: work == "read" ? 200 : 201, body: "[]"))
        let offline = try await Self.heldController(transport, store: MemoryOfflineStore())
        let underWay = Task {
            if work == "read" {
                _ = try? await offline.read(Self.notes, policy: .networkOnly)
            } else {
                _ = try? await offline.write(
                    PostgREST.insert(into: "notes", json: #"{"id":"n1"}"#, returning: false))
            }
        }
        await transport.firstRequestArrived()
        let released = Mutex(false)
        let release: @Sendable () -> Void = {
            released.withLock { $0 = true }
            transport.releaseFirstRequest()
        }
        offline.inFlight.whenCloseWaits.withLock { $0 = release }
        offline.writeGate.whenSomeoneWaits.withLock { $0 = release }
        if signingOut { try await offline.signOut(keepingUnsyncedWrites: true) } else { await offline.close() }
        #expect(released.withLock { $0 }, "the close returned with the \(work) still held at the transport")
        #expect(offline.inFlight.count == 0, "nothing under way once the close returned")
        transport.releaseFirstRequest()
        await underWay.value
    }

    @Test func oneAccountIsOpenOnceOnAStore() async throws {
        let server = try await RESTServer.start()
        let store = MemoryOfflineStore()
        let first = try await Self.signIn("alice", on: store, server)
        do {
            _ = try await Self.signIn("alice", on: store, server)
            Issue.record("a second controller for one account on one store")
        } catch let error as SovariaOfflineError {
            #expect(error.code == .accountInUse)
        }
        _ = try await Self.signIn("bob", on: store, server)  // another account: fine
        await first.offline.close()
        _ = try await Self.signIn("alice", on: store, server)  // after the close: fine
    }

    @Test func eachAccountFollowsTheFeedFromItsOwnCheckpoint() async throws {
        let server = try await RESTServer.start()
        let store = MemoryOfflineStore()
        let feed = OnePageFeed()
        let alice = try await Self.signIn("alice", on: store, server, feed: feed)
        try await alice.offline.pullChanges(of: "notes")
        #expect(try await alice.offline.feedCheckpoint(of: "notes") == 7)
        await alice.offline.close()
        let bob = try await Self.signIn("bob", on: store, server, feed: feed)
        #expect(try await bob.offline.feedCheckpoint(of: "notes") == nil, "Alice's checkpoint is not Bob's")
        try await bob.offline.pullChanges(of: "notes")
        #expect(feed.askedAfter == [nil, nil], "Bob's feed starts from the log's start")
        await bob.offline.close()
        let back = try await Self.signIn("alice", on: store, server, feed: feed)
        try await back.offline.pullChanges(of: "notes")
        #expect(feed.askedAfter == [nil, nil, 7], "Alice resumes where she stopped")
    }
}

/// A feed whose every page is one delete at position 7; it records the position each pull asked
/// after.
final class OnePageFeed: ChangeFeed {
    private let asked = Recorder<Int64?>()
    var askedAfter: [Int64?] { asked.all }

    func changes(of table: String, after position: Int64?, wait: Duration?) async throws -> ChangeFeedPage {
        asked.append(position)
        return ChangeFeedPage(
            changes: position == nil ? [RowChange(position: 7, table: table, key: "x", operation: .delete)] : [],
            position: 7)
    }
}
