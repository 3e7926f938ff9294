import Foundation
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestServers
import Testing

/// The transport on its own, against the test server.
@Suite struct URLSessionTransportTests {
    @Test func aServerThatIsNotListeningIsOffline() async throws {
        let server = try await RESTServer.start()
        let transport = URLSessionTransport(baseURL: server.baseURL, tokens: TestTokens())
        let before = try await transport.send(PostgREST.select("notes"))
        #expect(before.status == 200)
        try await server.stop()
        for request in [PostgREST.select("notes"), insertNote("n1", title: "Offline")] {
            do {
                let response = try await transport.send(request)
                Issue.record("a stopped server answered \(response.status)")
            } catch let error as SyncTransportError {
                #expect(error.code == .offline, "\(error)")
            } catch {
                Issue.record("expected offline, got \(error)")
            }
        }
    }

    @Test func aPathThatMakesNoHTTPURLIsAnInvalidRequestAndSendsNothing() async throws {
        let server = try await RESTServer.start()
        let transport = URLSessionTransport(baseURL: server.baseURL, tokens: TestTokens())
        let error = await #expect(throws: SyncTransportError.self) {
            try await transport.send(DataRequest(method: "GET", path: "ftp://example.com/rest/v1/notes"))
        }
        #expect(error?.code == .invalidRequest)
        #expect(error?.message.contains("ftp://example.com/rest/v1/notes") == true)
        #expect(try await server.requests().isEmpty)
    }

    @Test func writesCarryAnIdempotencyKeyAndReadsNone() async throws {
        let server = try await RESTServer.start()
        let transport = URLSessionTransport(baseURL: server.baseURL, tokens: TestTokens())
        var keyed = insertNote("n2", title: "Keyed")
        keyed.headers["Idempotency-Key"] = "app-key-1"
        #expect(try await transport.send(insertNote("n1", title: "Unkeyed")).status == 201)
        #expect(try await transport.send(keyed).status == 201)
        #expect(try await transport.send(PostgREST.select("notes")).status == 200)
        let keys = try await server.requests().map(\.idempotencyKey)
        #expect(keys.count == 3)
        #expect(keys[0].map { $0.count == 36 } == true, "a new client id for a write without one")
        #expect(keys[1] == "app-key-1", "the request's own key is kept")
        #expect(keys[2] == nil, "reads carry none")
    }

    @Test func headerNamesInAnyCaseAreOneHeaderAndTheFirstSpellingByItsBytesIsSent() async throws {
        let server = try await RESTServer.start()
        let transport = URLSessionTransport(baseURL: server.baseURL, tokens: TestTokens())
        var keyed = insertNote("n1", title: "Lower-case key")
        keyed.headers["idempotency-key"] = "app-key-2"
        #expect(try await transport.send(keyed).status == 201)
        #expect(try await server.requests().map(\.idempotencyKey) == ["app-key-2"], "the app's key, not a new one")
        // Two spellings with two values: "Prefer" sorts before "prefer", so the server is asked
        // for the rows every time, whatever order the dictionary holds them in.
        for attempt in 0..<12 {
            let rename = DataRequest(
                method: "PATCH", path: "/rest/v1/notes?id=eq.n1",
                headers: ["prefer": "return=minimal", "Prefer": "return=representation"],
                body: #"{"title":"Renamed \#(attempt)"}"#)
            #expect(rename.header("PREFER") == "return=representation")
            let answer = try await transport.send(rename)
            #expect(answer.status == 200 && answer.body.contains("Renamed \(attempt)"), "attempt \(attempt): \(answer)")
        }
    }

    @Test func postgrestRequestsEncodeTheirFilters() {
        let select = PostgREST.select(
            "notes", columns: "id,title", where: [.eq("title", "a b&c=d"), .in("id", ["x,1", "y"])], order: "id.desc",
            limit: 5)
        #expect(select.method == "GET")
        #expect(
            select.path
                == "/rest/v1/notes?select=id,title&title=eq.a%20b%26c%3Dd&id=in.(%22x,1%22,%22y%22)&order=id.desc&limit=5"
        )
        let upsert = PostgREST.insert(into: "notes", json: "{}", upsert: true)
        #expect(upsert.headers["Prefer"] == "return=representation,resolution=merge-duplicates")
        #expect(PostgREST.delete(from: "notes", where: [.isNull("body")]).path == "/rest/v1/notes?body=is.null")
        #expect(PostgREST().table(of: select) == "notes")
    }
}
