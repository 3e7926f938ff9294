import Foundation
import Sovaria
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestServers
import Synchronization
import Testing

/// A request a controller makes for an account goes only with that account's token (issue 60):
/// the transport on its own, against the test server (`SovariaOffline.sendingAccount` set as a
/// controller sets it).
@Suite struct AccountTokenTests {
    /// Gives the token `current` holds: a JSON Web Token, an opaque string, or none.
    final class HeldToken: AccessTokenProvider {
        let current: Mutex<String?>
        let onRefresh: Mutex<String?>
        init(_ token: String?, afterRefresh: String? = nil) {
            current = Mutex(token)
            onRefresh = Mutex(afterRefresh)
        }
        func accessToken() async throws -> String? { current.withLock { $0 } }
        func refreshAccessToken() async throws {
            if let next = onRefresh.withLock({ $0 }) { current.withLock { $0 = next } }
        }
    }

    static func alice() throws -> AccountID { try AccountID("alice") }
    static let read = PostgREST.select("notes")

    static func send(
        _ request: DataRequest, as account: AccountID?, through transport: URLSessionTransport
    ) async throws -> DataResponse {
        try await SovariaOffline.$sendingAccount.withValue(account) { try await transport.send(request) }
    }

    /// Sends `request` as `account` and expects `wrongAccount` with nothing reaching `server`;
    /// returns the error's message.
    static func expectRefused(
        _ request: DataRequest, as account: AccountID, through transport: URLSessionTransport, _ server: RESTServer,
        sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> String? {
        let before = try await server.requests().count
        let error = await #expect(throws: SyncTransportError.self, sourceLocation: sourceLocation) {
            _ = try await Self.send(request, as: account, through: transport)
        }
        #expect(error?.code == .wrongAccount, sourceLocation: sourceLocation)
        #expect(try await server.requests().count == before, "nothing sent", sourceLocation: sourceLocation)
        return error?.message
    }

    @Test func aRequestOfAnAccountGoesWithItsOwnToken() async throws {
        let server = try await RESTServer.start()
        let transport = URLSessionTransport(
            baseURL: server.baseURL, tokens: HeldToken(TestJWT.token(of: "alice")), configuration: .testServer)
        #expect(try await Self.send(Self.read, as: Self.alice(), through: transport).status == 200)
        #expect(try await server.requests().count == 1)
    }

    @Test func anotherUsersTokenIsNotSentForTheAccount() async throws {
        let server = try await RESTServer.start()
        let transport = URLSessionTransport(
            baseURL: server.baseURL, tokens: HeldToken(TestJWT.token(of: "bob")), configuration: .testServer)
        let write = PostgREST.insert(into: "notes", json: #"{"id":"n1","title":"Alice's"}"#, returning: false)
        for request in [Self.read, write] {
            let message = try await Self.expectRefused(request, as: Self.alice(), through: transport, server)
            #expect(message?.contains("of bob for the account alice") == true, "\(message ?? "")")
        }
        #expect(try await server.query("SELECT count(*)::text FROM notes") == ["0"])
    }

    @Test func noTokenIsNotSentForTheAccount() async throws {
        let server = try await RESTServer.start()
        let transport = URLSessionTransport(baseURL: server.baseURL, tokens: HeldToken(nil), configuration: .testServer)
        let message = try await Self.expectRefused(Self.read, as: Self.alice(), through: transport, server)
        #expect(message?.contains("no token for the account alice") == true, "\(message ?? "")")
    }

    @Test func anOpaqueTokenIsNotSentForTheAccountUnlessTheProviderSaysWhoseItIs() async throws {
        let server = try await RESTServer.start()
        let opaque = URLSessionTransport(
            baseURL: server.baseURL, tokens: HeldToken("token-alice"), configuration: .testServer)
        let message = try await Self.expectRefused(Self.read, as: Self.alice(), through: opaque, server)
        #expect(message?.contains("account(ofToken:)") == true, "\(message ?? "")")

        /// Opaque tokens `token-<user>`, whose owner the provider knows.
        struct Opaque: AccessTokenProvider {
            func accessToken() async throws -> String? { "token-alice" }
            func refreshAccessToken() async throws {}
            func account(ofToken token: String) -> AccountID? {
                token.hasPrefix("token-") ? try? AccountID(String(token.dropFirst("token-".count))) : nil
            }
        }
        let known = URLSessionTransport(baseURL: server.baseURL, tokens: Opaque(), configuration: .testServer)
        #expect(try await Self.send(Self.read, as: Self.alice(), through: known).status == 200)
    }

    @Test func aProviderWithATokenPerAccountIsAskedForTheRequestsAccount() async throws {
        let server = try await RESTServer.start()
        /// Keeps every signed-in user's token: each account's requests get their own.
        struct PerAccount: AccessTokenProvider {
            func accessToken() async throws -> String? { nil }
            func refreshAccessToken() async throws {}
            func accessToken(for account: AccountID?) async throws -> String? {
                account.map { TestJWT.token(of: $0.rawValue) }
            }
        }
        let transport = URLSessionTransport(baseURL: server.baseURL, tokens: PerAccount(), configuration: .testServer)
        for user in ["alice", "bob"] {
            let insert = PostgREST.insert(into: "notes", json: #"{"id":"\#(user)-1","title":"x"}"#, returning: false)
            #expect(try await Self.send(insert, as: try AccountID(user), through: transport).status == 201)
        }
        #expect(
            try await server.query("SELECT id || '|' || owner FROM notes ORDER BY id") == [
                "alice-1|alice", "bob-1|bob",
            ])
    }

    /// Another `Authorization`, in the transport's configuration or in the request, does not
    /// replace the account's checked token.
    @Test func noOtherAuthorizationHeaderReplacesTheAccountsToken() async throws {
        let server = try await RESTServer.start()
        var configuration = URLSessionTransport.Configuration()
        configuration.headers["authorization"] = "Bearer " + TestJWT.token(of: "bob")
        let transport = URLSessionTransport(
            baseURL: server.baseURL, tokens: HeldToken(TestJWT.token(of: "alice")), configuration: configuration)
        var insert = PostgREST.insert(into: "notes", json: #"{"id":"n1","title":"x"}"#, returning: false)
        insert.setHeader("AUTHORIZATION", "Bearer " + TestJWT.token(of: "carol"))
        #expect(try await Self.send(insert, as: Self.alice(), through: transport).status == 201)
        #expect(try await server.query("SELECT id || '|' || owner FROM notes") == ["n1|alice"])
        // Outside an account the request's own header still wins, as before.
        var asCarol = PostgREST.insert(into: "notes", json: #"{"id":"n2","title":"x"}"#, returning: false)
        asCarol.setHeader("Authorization", "Bearer " + TestJWT.token(of: "carol"))
        #expect(try await transport.send(asCarol).status == 201)
        #expect(try await server.query("SELECT owner FROM notes WHERE id = 'n2'") == ["carol"])
    }

    /// Outside a controller's account, the transport sends what the provider gives, unchecked.
    @Test func aRequestOfNoAccountIsNotChecked() async throws {
        let server = try await RESTServer.start()
        let transport = URLSessionTransport(
            baseURL: server.baseURL, tokens: HeldToken(TestJWT.token(of: "bob")), configuration: .testServer)
        #expect(try await Self.send(Self.read, as: nil, through: transport).status == 200)
        #expect(try await transport.send(Self.read).status == 200)
    }

    /// A 401 refreshes the token; a refresh that brings another user's token sends nothing more.
    @Test func aRefreshThatBringsAnotherUsersTokenSendsNothingMore() async throws {
        let server = try await RESTServer.start()
        let tokens = HeldToken(TestJWT.token(of: "alice", signature: "forged"), afterRefresh: TestJWT.token(of: "bob"))
        let transport = URLSessionTransport(baseURL: server.baseURL, tokens: tokens, configuration: .testServer)
        let error = await #expect(throws: SyncTransportError.self) {
            _ = try await Self.send(Self.read, as: Self.alice(), through: transport)
        }
        #expect(error?.code == .wrongAccount)
        #expect(try await server.requests().map(\.status) == [401], "only the first try, with Alice's refused token")
    }

    @Test func aJSONWebTokensSubjectIsReadWhateverItsPadding() throws {
        for user in ["a", "ab", "abc", "alice", "user@example.com", "8d1f0c3e-5b6a-4f7e-9c2d-1a2b3c4d5e6f"] {
            #expect(JSONWebToken.subject(of: TestJWT.token(of: user)) == user)
            #expect(HeldToken(nil).account(ofToken: TestJWT.token(of: user)) == (try AccountID(user)))
        }
    }

    @Test func whatIsNotAJSONWebTokenWithAStringSubjectHasNone() {
        func token(_ payload: String) -> String {
            "eyJhbGciOiJIUzI1NiJ9." + Data(payload.utf8).base64EncodedString().replacingOccurrences(of: "=", with: "")
                + ".sig"
        }
        for text in [
            "", "token-alice", "a.b", "a.b.c.d", "eyJ.%%%.sig", token("not json"), token("[1]"), token(#"{"sub":7}"#),
            token(#"{"role":"authenticated"}"#),
        ] {
            #expect(JSONWebToken.subject(of: text) == nil, "\(text)")
        }
        // A subject that is no valid account id names no account.
        #expect(HeldToken(nil).account(ofToken: TestJWT.token(of: "../etc")) == nil)
    }
}
