import Foundation
import Sovaria
import SovariaCache
import SovariaQueue
import SovariaTestEngines
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaPostgREST
@_spi(Diagnostics) @testable import SovariaSync

/// A server that shapes its answers by the request's headers as PostgREST does: `Accept` (one
/// object, refused with 406 when the rows are not one; CSV), `Accept-Profile` (another schema's
/// rows under the same path), `Range`, and `Prefer: count=exact` in `Content-Range`.
final class ShapingServer: SyncTransport {
    struct State {
        var online = true
        var received: [DataRequest] = []
        /// The rows of each schema's `notes`, by id.
        var rows: [String: [String]] = ["public": ["a1", "a2", "a3", "a4", "a5"], "other": ["o1", "o2"]]
    }

    let state = Mutex(State())

    func send(_ request: DataRequest) async throws -> DataResponse {
        try state.withLock { state in
            guard state.online else { throw SyncTransportError.offline("shaping server: no network") }
            state.received.append(request)
            guard request.method == "GET" else { return DataResponse(status: 201) }
            var ids = state.rows[request.header("Accept-Profile") ?? "public"] ?? []
            let query = URLComponents(string: request.path)?.queryItems ?? []
            if let id = query.first(where: { $0.name == "id" })?.value?.dropFirst(3) {
                ids = ids.filter { $0 == String(id) }
            }
            let total = ids.count
            var first = 0
            if let range = request.header("Range"), let dash = range.firstIndex(of: "-"),
                let from = Int(range[..<dash]), let to = Int(range[range.index(after: dash)...])
            {
                first = from
                ids = Array(ids.dropFirst(from).prefix(to - from + 1))
            }
            let contentRange =
                "\(first)-\(first + ids.count - 1)/"
                + (request.header("Prefer")?.contains("count=exact") == true ? String(total) : "*")
            let objects = ids.map { #"{"id":"\#($0)"}"# }
            switch request.header("Accept") ?? "application/json" {
            case "application/vnd.pgrst.object+json":
                guard objects.count == 1 else {
                    return DataResponse(status: 406, body: #"{"code":"PGRST116"}"#)
                }
                return DataResponse(status: 200, headers: ["Content-Range": contentRange], body: objects[0])
            case "text/csv":
                return DataResponse(status: 200, body: (["id"] + ids).joined(separator: "\n"))
            default:
                return DataResponse(
                    status: 200, headers: ["Content-Range": contentRange],
                    body: "[" + objects.joined(separator: ",") + "]")
            }
        }
    }

    var online: Bool {
        get { state.withLock { $0.online } }
        set { state.withLock { $0.online = newValue } }
    }

    var received: [DataRequest] { state.withLock { $0.received } }
}

/// A read's identity through the controller (issue 52): reads of one path with different
/// headers never share a cached answer, every refetch sends the read's headers, a table is its
/// schema and name, and a singular read is an object or the server's refusal.
@Suite struct ReadIdentityTests {
    static let list = PostgREST.select("notes", columns: "id", order: "id")
    static let single: DataRequest = {
        var read = PostgREST.select("notes", columns: "id", where: [.eq("id", "a1")], order: "id")
        read.setHeader("Accept", "application/vnd.pgrst.object+json")
        return read
    }()
    static let plainOfA1 = PostgREST.select("notes", columns: "id", where: [.eq("id", "a1")], order: "id")

    static func with(_ read: DataRequest, _ name: String, _ value: String) -> DataRequest {
        var read = read
        read.setHeader(name, value)
        return read
    }

    /// A controller over `store` and `server`, with the overlay for `notes` in both schemas.
    static func controller(_ store: any OfflineStore, _ server: ShapingServer) async throws -> SovariaOffline {
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.overlay = PostgRESTOverlay(
            tables: ["notes": .init(primaryKey: "id"), "other.notes": .init(primaryKey: "id")], textOrder: .bytes)
        return try await SovariaOffline(store: store, transport: server, configuration: configuration)
    }

    static func ids(_ read: LocalRead) throws -> [String] {
        struct Row: Decodable { var id: String }
        return try read.decode([Row].self, using: JSONDecoder())?.map(\.id) ?? []
    }

    @Test func aSingularReadThenThePlainReadOfThePathAskTheServerEach() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        let object = try await offline.read(Self.single)
        #expect(object.body == #"{"id":"a1"}"#)
        let plain = try await offline.read(Self.plainOfA1)
        #expect(plain.source == .network && server.received.count == 2, "the plain read is not the object's answer")
        #expect(try Self.ids(plain) == ["a1"])
        // Offline, each gets its own answer.
        server.online = false
        #expect(try await offline.read(Self.single).body == #"{"id":"a1"}"#)
        #expect(try await offline.read(Self.plainOfA1).body == #"[{"id":"a1"}]"#)
    }

    @Test func thePlainReadThenTheSingularReadAskTheServerEach() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        _ = try await offline.read(Self.plainOfA1)
        let object = try await offline.read(Self.single)
        #expect(object.body == #"{"id":"a1"}"# && server.received.count == 2)
    }

    @Test func aSingularReadTheServerRefusesIsNotAnsweredWithACachedList() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        _ = try await offline.read(Self.list)
        var many = Self.list
        many.setHeader("Accept", "application/vnd.pgrst.object+json")
        await #expect(throws: SovariaOfflineError.self) { _ = try await offline.read(many) }
        do {
            _ = try await offline.read(many)
        } catch let error as SovariaOfflineError {
            #expect(error.code == .unexpectedStatus && error.response?.status == 406)
        }
    }

    @Test func aSingularReadWhosePendingWritesLeaveNoRowIsRefusedOffline() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        _ = try await offline.read(Self.single)
        server.online = false
        _ = try await offline.write(PostgREST.delete(from: "notes", where: [.eq("id", "a1")]))
        do {
            _ = try await offline.read(Self.single)
            Issue.record("the server will refuse the read once the delete syncs")
        } catch let error as SovariaOfflineError {
            #expect(error.code == .unexpectedStatus && error.response?.status == 406)
        }
        // A live query shows the refusal as a value.
        let answer = try await offline.currentAnswer(Self.single, identity: ReadIdentity(Self.single, api: offline.api))
        #expect(answer.body == nil && answer.refusal?.status == 406)
    }

    @Test func aRangePageThenThePlainListGetsEveryRow() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        let page = try await offline.read(Self.with(Self.list, "Range", "0-0"))
        #expect(try Self.ids(page) == ["a1"])
        let all = try await offline.read(Self.list)
        #expect(try Self.ids(all) == ["a1", "a2", "a3", "a4", "a5"] && all.isExact)
        server.online = false
        _ = try await offline.write(PostgREST.insert(into: "notes", json: #"{"id":"h0"}"#))
        let written = try await offline.read(Self.list)
        #expect(try Self.ids(written) == ["a1", "a2", "a3", "a4", "a5", "h0"] && written.isExact)
        let pageWritten = try await offline.read(Self.with(Self.list, "Range", "0-0"))
        // Issue 61: a Range page is evaluated as the page it names (rows 0–0 by id).
        #expect(try pageWritten.isExact && Self.ids(pageWritten) == ["a1"], "\(pageWritten.inexactReasons)")
    }

    @Test func anotherSchemaAndCSVAreAnswersOfTheirOwn() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        _ = try await offline.read(Self.list)
        let other = try await offline.read(Self.with(Self.list, "Accept-Profile", "other"))
        #expect(try Self.ids(other) == ["o1", "o2"] && other.source == .network)
        let csv = try await offline.read(Self.with(Self.list, "Accept", "text/csv"))
        #expect(csv.body == "id\na1\na2\na3\na4\na5" && csv.source == .network)
        #expect(server.received.count == 3)
        server.online = false
        _ = try await offline.write(PostgREST.insert(into: "notes", json: #"{"id":"h0"}"#))
        let csvOffline = try await offline.read(Self.with(Self.list, "Accept", "text/csv"))
        #expect(csvOffline.body == "id\na1\na2\na3\na4\na5")
        #expect(csvOffline.inexactReasons == [.answerNotRows("Accept: text/csv")])
    }

    @Test func aPendingWriteAppliesOnlyToTheReadsOfItsSchema() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        let otherList = Self.with(Self.list, "Accept-Profile", "other")
        _ = try await offline.read(Self.list)
        _ = try await offline.read(otherList)
        server.online = false
        _ = try await offline.write(
            Self.with(PostgREST.insert(into: "notes", json: #"{"id":"o3"}"#), "Content-Profile", "other"))
        _ = try await offline.write(PostgREST.insert(into: "notes", json: #"{"id":"h0"}"#))
        let mine = try await offline.read(Self.list)
        #expect(try Self.ids(mine) == ["a1", "a2", "a3", "a4", "a5", "h0"] && mine.isExact)
        let theirs = try await offline.read(otherList)
        #expect(try Self.ids(theirs) == ["o1", "o2", "o3"] && theirs.isExact)
    }

    @Test func theRelatedAnswersAndTheFeedsRefetchesCarryTheReadsHeaders() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        let otherList = Self.with(Self.list, "Accept-Profile", "other")
        let otherOne = Self.with(
            PostgREST.select("notes", columns: "id", where: [.eq("id", "o1")]), "Accept-Profile", "other")
        _ = try await offline.read(otherList)
        _ = try await offline.read(otherOne)
        _ = try await offline.read(Self.list)
        let related = try await offline.relatedAnswers(of: otherOne)
        #expect(related.map(\.read) == [ReadIdentity(otherList, api: PostgREST()).request])
        #expect(related.first?.read.header("Accept-Profile") == "other")
        // The cached reads of the table, as the feed and a stale mark rebuild them.
        let reads = try await offline.cachedReads(of: "other.notes")
        #expect(reads.allSatisfy { $0.request.header("Accept-Profile") == "other" } && reads.count == 2)
        #expect(try await offline.cachedReads(of: "notes").map(\.request) == [Self.list])
    }

    @Test func theAnswersSurviveARestartEachUnderItsOwnRead() async throws {
        let folder = try TemporaryFolder()
        let engine = TestEngine.sqlite(.synced)
        let server = ShapingServer()
        do {
            let store = try await engine.open(folder.url)
            let offline = try await Self.controller(store, server)
            _ = try await offline.read(Self.single)
            _ = try await offline.read(Self.with(Self.list, "Prefer", "count=exact"))
            await offline.close()
        }
        let store = try await engine.open(folder.url)
        let offline = try await Self.controller(store, server)
        server.online = false
        #expect(try await offline.read(Self.single, policy: .cacheOnly).body == #"{"id":"a1"}"#)
        #expect(try await offline.read(Self.plainOfA1, policy: .cacheOnly).body == nil)
        let counted = try await offline.read(Self.with(Self.list, "Prefer", "count=exact"), policy: .cacheOnly)
        #expect(counted.response?.headers["Content-Range"] == "0-4/5", "the count is kept with the answer")
    }

    @Test func aCountedReadsCountMovesWithPendingWritesWhenItIsNotAPage() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        let counted = Self.with(Self.list, "Prefer", "count=exact")
        #expect(try await offline.read(counted).response?.headers["Content-Range"] == "0-4/5")
        server.online = false
        let unchanged = try await offline.read(counted)
        #expect(unchanged.isExact && unchanged.rowCount == 5, "no pending write: the server's count")
        _ = try await offline.write(PostgREST.insert(into: "notes", json: #"{"id":"h0"}"#))
        let inserted = try await offline.read(counted)
        #expect(try Self.ids(inserted).count == 6 && inserted.isExact && inserted.rowCount == 6, "an insert adds one")
        _ = try await offline.write(PostgREST.delete(from: "notes", where: [.eq("id", "a2")]))
        _ = try await offline.write(PostgREST.delete(from: "notes", where: [.eq("id", "a3")]))
        let deleted = try await offline.read(counted)
        #expect(
            deleted.isExact && deleted.rowCount == 4, "a delete of a held row removes one: \(deleted.rowCount ?? -1)")
    }

    @Test func aRangePagesCountMovesWithAnInsertAndIsTheServersWhenADeleteIsNotKnown() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        let page = Self.with(Self.with(Self.list, "Prefer", "count=exact"), "Range", "0-1")
        #expect(try await offline.read(page).response?.headers["Content-Range"] == "0-1/5")
        server.online = false
        #expect(try await offline.read(page).rowCount == 5)
        _ = try await offline.write(PostgREST.insert(into: "notes", json: #"{"id":"h0"}"#))
        let inserted = try await offline.read(page)
        #expect(
            inserted.rowCount == 6 && inserted.isExact, "an insert of a new key adds one: \(inserted.inexactReasons)")
        // a5 is past the page, and no cached answer holds it: whether it existed is not known.
        _ = try await offline.write(PostgREST.delete(from: "notes", where: [.eq("id", "a5")]))
        let deleted = try await offline.read(page)
        #expect(deleted.rowCount == 5 && deleted.inexactReasons == [.countNotRecomputed])
    }

    @Test func theCountAndThePageComeFromTheRequestAndTheHeadersAsPostgRESTWritesThem() {
        let api = PostgREST()
        #expect(api.rowCount(in: ["Content-Range": "0-24/3573"]) == 3573)
        #expect(api.rowCount(in: ["content-range": "*/5"]) == 5)
        #expect(api.rowCount(in: ["Content-Range": "0-4/*"]) == nil, "no count asked for")
        #expect(api.rowCount(in: ["Content-Range": "0-4"]) == nil)
        #expect(api.rowCount(in: [:]) == nil)
        #expect(!api.pagesRows(Self.list))
        #expect(api.pagesRows(Self.with(Self.list, "Range", "0-9")))
        #expect(api.pagesRows(PostgREST.select("notes", order: "id", limit: 10)))
        #expect(api.pagesRows(DataRequest(method: "GET", path: "/rest/v1/notes?offset=5")))
        #expect(!api.pagesRows(DataRequest(method: "GET", path: "/rest/v1/notes?title=eq.limit")))
    }

    @Test func anIdentityIsReadBackFromItsCacheKey() throws {
        let api = PostgREST()
        let reads = [
            Self.list,
            Self.with(Self.with(Self.list, "Range", "0-9"), "Accept-Profile", "other"),
            // Bytes a `Character` walk reads as one with their neighbours: `\r\n` is one
            // character, and so is a space before a combining mark.
            Self.with(DataRequest(method: "GET", path: "/rest/v1/notes?title=eq.a\r"), "Range", "0-1"),
            DataRequest(method: "GET", path: "/rest/v1/notes?title=eq. \u{301}"),
            // A header value with a line break in it, kept as one space.
            Self.with(Self.list, "Range", "0-\r\n 9"),
        ]
        for read in reads {
            let identity = ReadIdentity(read, api: api)
            let back = try #require(ReadIdentity(cacheKey: identity.cacheKey, api: api))
            #expect(back == identity)
            #expect(back.method == identity.method && back.headers == identity.headers && back.table == identity.table)
            #expect(back.path.utf8.elementsEqual(read.path.utf8), "\(back.path.debugDescription)")
            #expect(back.cacheKey.utf8.elementsEqual(identity.cacheKey.utf8))
        }
        #expect(ReadIdentity(reads.last!, api: api).headers.map(\.value) == ["0- 9"])
        // A key written by another version, a header's name in capitals: read as the read it names.
        let written = try #require(ReadIdentity(cacheKey: "GET /rest/v1/notes?id=eq.1\nRange: 0-1", api: api))
        #expect(written.cacheKey == "GET /rest/v1/notes?id=eq.1\nrange: 0-1")
        #expect(written.request.header("Range") == "0-1")
        #expect(ReadIdentity(cacheKey: "GET/rest/v1/notes", api: api) == nil, "no space after the method")
        #expect(
            ReadIdentity(cacheKey: "GET /rest/v1/notes\nno colon", api: api) == nil, "a header line without a colon")
    }

    @Test func aSingularReadTellsTheVersionAnEditExpects() async throws {
        let rig = try await Rig(.memory) { configuration in
            configuration.conflictRules = ["notes": ConflictRule(versionColumn: "version", onConflict: .reject)]
        }
        rig.transport.answer(DataResponse(status: 200, body: #"{"id":"a1","version":2}"#))
        _ = try await rig.offline.read(Self.single)
        rig.transport.online = false
        let outcome = try await rig.offline.write(
            PostgREST.update("notes", where: [.eq("id", "a1")], json: #"{"title":"edited"}"#))
        guard case .queued(let write) = outcome else {
            Issue.record("queued offline: \(outcome)")
            return
        }
        #expect(write.request.path.contains("version=eq.2"), "\(write.request.path)")
    }

    @Test func aLiveQuerysRefetchSendsItsReadsHeaders() async throws {
        let server = ShapingServer()
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.timer = ManualTimer()
        configuration.memoryPressure = nil
        configuration.changeFeed = UnreadableFeed()
        let offline = try await SovariaOffline(
            store: MemoryOfflineStore(), transport: server, configuration: configuration)
        let otherList = Self.with(Self.list, "Accept-Profile", "other")
        var answers = offline.observe(otherList).makeAsyncIterator()
        _ = try await answers.next()
        let fetched = try #require(try await answers.next())
        #expect(try Self.ids(fetched) == ["o1", "o2"])
        // The feed's page cannot be applied: the answers go stale, and the one a live query
        // shows is fetched again at once, with its headers.
        await #expect(throws: ChangeFeedError.self) { try await offline.pullChanges(of: "other.notes") }
        // The stale mark's answer may come first; then the refetched one.
        var refetched = try #require(try await answers.next())
        if refetched.response?.isStale == true { refetched = try #require(try await answers.next()) }
        #expect(refetched.response?.isStale == false && refetched.source == .network)
        #expect(try Self.ids(refetched) == ["o1", "o2"], "still the other schema's rows")
        #expect(server.received.count == 2 && server.received.last?.header("Accept-Profile") == "other")
    }

    @Test func aLiveQuerysAnswerFromItsFetchSaysNetwork() async throws {
        let server = ShapingServer()
        let offline = try await Self.controller(MemoryOfflineStore(), server)
        var answers = offline.observe(Self.list).makeAsyncIterator()
        let first = try #require(try await answers.next())
        #expect(first.body == nil && first.source == .none)
        let fetched = try #require(try await answers.next())
        #expect(try Self.ids(fetched) == ["a1", "a2", "a3", "a4", "a5"])
        #expect(fetched.source == .network)
        // A later answer brought by a local write shows the same server answer, from where it came.
        server.online = false
        _ = try await offline.write(PostgREST.insert(into: "notes", json: #"{"id":"h0"}"#))
        let written = try #require(try await answers.next())
        #expect(try Self.ids(written).last == "h0" && written.source == .network)
    }
}

/// A feed whose every page is malformed.
final class UnreadableFeed: ChangeFeed {
    func changes(of table: String, after position: Int64?, wait: Duration?) async throws -> ChangeFeedPage {
        throw ChangeFeedError(.malformedChange, table: table, "unreadable")
    }
}
