import Foundation
import Sovaria
import SovariaCache
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaSync

/// A token tied to its account (issue 60): the transport (`URLSessionTransport`) sends a
/// controller's requests only with a token of its account, so an app that hands over another
/// user's token sends nothing, loses nothing, and resumes as the author once the token is right.
extension AccountTests {
    @Test(arguments: engines)
    func anotherUsersTokenSendsNothingAndTheWritesWaitForTheirAuthor(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        try await Self.seed(server, as: "alice", #"{"id":"a1","title":"A's note"}"#)
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let tokens = UserToken(user: "alice")
        let alice = try await Self.signIn("alice", on: store, server, tokens: tokens)
        #expect(try Self.ids(try await alice.offline.read(Self.notes)) == ["a1"])
        alice.transport.isOffline = true
        _ = try await alice.offline.write(
            PostgREST.update("notes", where: [.eq("id", "a1")], json: #"{"title":"A's offline edit"}"#))
        alice.transport.isOffline = false

        // The app signs Bob in before Alice's controller is done: its token is now Bob's.
        tokens.user = "bob"
        let sentBefore = try await server.requests().count
        var errors = alice.offline.syncErrors.makeAsyncIterator()
        #expect(try await alice.offline.flush() == 0)
        #expect(alice.offline.status.isPausedForAuthorization)
        #expect(alice.offline.status.lastError?.kind == .wrongAccount)
        #expect(await errors.next()?.kind == .wrongAccount)
        // A write made now is kept for Alice, not sent as Bob.
        let outcome = try await alice.offline.write(
            PostgREST.insert(into: "notes", json: #"{"id":"a2","title":"A's new note"}"#, returning: false))
        guard case .queued = outcome else {
            Issue.record("expected the write queued, got \(outcome)")
            return
        }
        // A network read is refused, typed; the cached answer is still Alice's to read.
        let refused = await #expect(throws: SyncTransportError.self) {
            _ = try await alice.offline.read(Self.notes, policy: .networkOnly)
        }
        #expect(refused?.code == .wrongAccount)
        #expect(try Self.ids(try await alice.offline.read(Self.notes, policy: .cacheOnly)) == ["a1", "a2"])
        #expect(try await server.requests().count == sentBefore, "nothing reached the server with Bob's token")
        #expect(alice.offline.status.pendingCount == 2, "nothing lost")

        // The token is Alice's again: her writes go, as hers.
        tokens.user = "alice"
        #expect(try await alice.offline.flush() == 2)
        #expect(
            try await server.query("SELECT id || '|' || owner || '|' || title FROM notes ORDER BY id") == [
                "a1|alice|A's offline edit", "a2|alice|A's new note",
            ])
    }

    /// The change feed's reads go through the same check: a page asked with another user's
    /// token is never asked.
    @Test func aFeedReadWithAnotherUsersTokenIsNotSent() async throws {
        let server = try await RESTServer.start()
        let tokens = UserToken(user: "bob")
        let inner = RecordingSwitch(
            URLSessionTransport(baseURL: server.baseURL, tokens: tokens, configuration: .testServer))
        let feed = PostgRESTChangeFeed(transport: inner)
        let alice = try await Self.signIn("alice", on: MemoryOfflineStore(), server, feed: feed, tokens: tokens)
        let error = await #expect(throws: SyncTransportError.self) {
            _ = try await alice.offline.pullChanges(of: "notes")
        }
        #expect(error?.code == .wrongAccount)
        #expect(inner.exchanges().isEmpty && alice.transport.exchanges().isEmpty)
        #expect(try await server.requests().isEmpty)
        // With Alice's token the same pull reaches the server (whatever it answers).
        tokens.user = "alice"
        _ = try? await alice.offline.pullChanges(of: "notes")
        #expect(inner.exchanges().count >= 1)
    }

    /// Two users signed in at once on one device, one transport whose provider keeps each one's
    /// token: each controller's writes go with its own, and apply as its author's.
    @Test(arguments: engines)
    func twoAccountsOpenAtOnceEachSendWithTheirOwnToken(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        /// Every signed-in user's token, by account.
        struct SignedIn: AccessTokenProvider {
            func accessToken() async throws -> String? { nil }
            func refreshAccessToken() async throws {}
            func accessToken(for account: AccountID?) async throws -> String? {
                account.map { TestJWT.token(of: $0.rawValue) }
            }
        }
        let alice = try await Self.signIn("alice", on: store, server, tokens: SignedIn())
        let bob = try await Self.signIn("bob", on: store, server, tokens: SignedIn())
        async let fromAlice: Void = Self.writeNotes(["a1", "a2", "a3"], through: alice.offline)
        async let fromBob: Void = Self.writeNotes(["b1", "b2", "b3"], through: bob.offline)
        _ = try await (fromAlice, fromBob)
        #expect(
            try await server.query("SELECT id || '|' || owner FROM notes ORDER BY id") == [
                "a1|alice", "a2|alice", "a3|alice", "b1|bob", "b2|bob", "b3|bob",
            ])
    }

    /// The conflict list is the account's too: Alice's write in conflict is listed for her, and
    /// Bob, signed in next on the same store, lists none, rejects none and counts none.
    @Test(arguments: engines)
    func anotherUserSeesNoneOfTheFirstsConflicts(_ engine: TestEngine) async throws {
        let server = try await RESTServer.start()
        let seeding = URLSessionTransport(
            baseURL: server.baseURL, tokens: UserToken(user: "alice"), configuration: .testServer)
        let seeded = try await seeding.send(
            PostgREST.insert(into: "tasks", json: #"{"id":"t1","title":"Call the bank"}"#, returning: false))
        try #require(seeded.isSuccess, "seed: \(seeded.status) \(seeded.body)")
        let folder = try TemporaryFolder()
        let store = try await engine.open(folder.url)
        let tasks = PostgREST.select("tasks", columns: "id,title,version", order: "id")
        let alice = try await Self.signIn("alice", on: store, server)
        _ = try await alice.offline.read(tasks)
        alice.transport.isOffline = true
        _ = try await alice.offline.write(
            PostgREST.update("tasks", where: [.eq("id", "t1")], json: #"{"title":"A's offline title"}"#))
        // The row changes on the server meanwhile (version 2): Alice's write is in conflict.
        _ = try await server.query("UPDATE tasks SET title = 'Changed elsewhere' WHERE id = 't1'")
        alice.transport.isOffline = false
        _ = try await alice.offline.flush()
        try #require(try await alice.offline.conflicts().count == 1, "Alice's write is a conflict")
        await alice.offline.close()

        let bob = try await Self.signIn("bob", on: store, server)
        #expect(try await bob.offline.conflicts().isEmpty)
        #expect(try await bob.offline.rejectedWrites().isEmpty)
        #expect(bob.offline.status.conflictCount == 0 && bob.offline.status.rejectedCount == 0)
        #expect(try await bob.offline.read(tasks, policy: .cacheOnly).body == nil)
        await bob.offline.close()

        let back = try await Self.signIn("alice", on: store, server)
        let kept = try await back.offline.conflicts()
        #expect(kept.count == 1 && kept.first?.write.request.path.contains("id=eq.t1") == true, "still hers")
    }

    static func writeNotes(_ ids: [String], through offline: SovariaOffline) async throws {
        for id in ids {
            _ = try await offline.write(
                PostgREST.insert(into: "notes", json: #"{"id":"\#(id)","title":"x"}"#, returning: false))
        }
        try await offline.flush()
    }
}
