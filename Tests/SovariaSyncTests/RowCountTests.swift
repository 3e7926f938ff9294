import Foundation
import SovariaHTTP
import SovariaPostgREST
import SovariaQueue
import SovariaSync
import SovariaTestEngines
import SovariaTestServers
import Testing

/// The count a page asks for (`Prefer: count=exact`, ``LocalRead/rowCount``) moves with the
/// pending writes by the rows they add to or take from those its filters match, over every page,
/// against a real PostgreSQL behind the test server (Tests/Server). The notes n1, n2, n3 and n5
/// are open, n4 is done; the page shows the first two open notes of four.
@Suite(.serialized) struct RowCountTests {
    static let page: DataRequest = {
        var read = PostgREST.select(
            "notes", columns: "id,title,done", where: [.eq("done", "false")], order: "id", limit: 2)
        read.setHeader("Prefer", "count=exact")
        return read
    }()
    /// Every note: the list screen a page's rows are also in.
    static let everyNote = PostgREST.select("notes", columns: "id,title,done", order: "id")

    /// A device of Alice's that read the page (and `alsoCached`) online, then went offline; the
    /// server stays up.
    static func offlineDevice(alsoCached: [DataRequest] = []) async throws -> (RESTServer, Device) {
        let server = try await RESTServer.start()
        try await seed(
            server, "notes",
            #"[{"id":"n1","title":"One","done":false},{"id":"n2","title":"Two","done":false},"#
                + #"{"id":"n3","title":"Three","done":false},{"id":"n4","title":"Four","done":true},"#
                + #"{"id":"n5","title":"Five","done":false}]"#)
        let device = try await Device(.memory, server)
        let online = try await device.offline.read(page)
        try #require(
            online.rowCount == 4 && online.isExact, "the server's count online: \(String(describing: online.rowCount))")
        for read in alsoCached { _ = try await device.offline.read(read) }
        device.transport.isOffline = true
        return (server, device)
    }

    static func insert(_ id: String, done: Bool) -> DataRequest {
        PostgREST.insert(into: "notes", json: #"{"id":"\#(id)","title":"\#(id)","done":\#(done)}"#, returning: false)
    }

    static func ids(_ read: LocalRead) throws -> [String] {
        struct Row: Decodable { var id: String }
        return try read.decode([Row].self, using: JSONDecoder())?.map(\.id) ?? []
    }

    @Test func anInsertThatMatchesAddsOneToAPagesCount() async throws {
        let (server, device) = try await Self.offlineDevice()
        _ = try await device.queued(Self.insert("n6", done: false))
        let read = try await device.offline.read(Self.page)
        #expect(read.rowCount == 5 && read.isExact, "\(String(describing: read.rowCount)) \(read.inexactReasons)")
        #expect(try Self.ids(read) == ["n1", "n2"], "the row comes after the page")
        withExtendedLifetime(server) {}
    }

    @Test func anInsertThatDoesNotMatchLeavesAPagesCount() async throws {
        let (server, device) = try await Self.offlineDevice()
        _ = try await device.queued(Self.insert("n0", done: true))
        let read = try await device.offline.read(Self.page)
        #expect(read.rowCount == 4 && read.isExact, "\(String(describing: read.rowCount)) \(read.inexactReasons)")
        #expect(read.hasPendingWrites, "the insert was applied")
        withExtendedLifetime(server) {}
    }

    @Test func aDeleteOfARowThePageHoldsTakesOneFromItsCount() async throws {
        let (server, device) = try await Self.offlineDevice()
        _ = try await device.queued(PostgREST.delete(from: "notes", where: [.eq("id", "n1")]))
        let read = try await device.offline.read(Self.page)
        #expect(read.rowCount == 3, "\(String(describing: read.rowCount))")
        // The page itself may take a row past it that no cached answer holds; its count is known.
        #expect(read.inexactReasons == [.pageMayTakeRowsPastIt(limit: 2)])
        withExtendedLifetime(server) {}
    }

    @Test func aDeleteOfARowNoCachedAnswerHoldsKeepsTheServersCountAndSaysSo() async throws {
        let (server, device) = try await Self.offlineDevice()
        _ = try await device.queued(PostgREST.delete(from: "notes", where: [.eq("id", "n5")]))
        let read = try await device.offline.read(Self.page)
        #expect(read.rowCount == 4 && read.inexactReasons == [.countNotRecomputed], "\(read.inexactReasons)")
        #expect(try Self.ids(read) == ["n1", "n2"])
        withExtendedLifetime(server) {}
    }

    @Test func anUpdateThatMovesAHeldRowOutOfTheFilterTakesOneFromAPagesCount() async throws {
        let (server, device) = try await Self.offlineDevice()
        _ = try await device.queued(PostgREST.update("notes", where: [.eq("id", "n2")], json: #"{"done":true}"#))
        let read = try await device.offline.read(Self.page)
        #expect(read.rowCount == 3, "\(String(describing: read.rowCount))")
        #expect(read.inexactReasons == [.pageMayTakeRowsPastIt(limit: 2)])
        withExtendedLifetime(server) {}
    }

    @Test func anUpdateOfAFilterColumnByAFilterThatMayReachRowsNoCachedAnswerHoldsKeepsTheServersCount() async throws {
        let (server, device) = try await Self.offlineDevice()
        // Reopens every done note: n4, which no cached answer holds, comes into the filter.
        _ = try await device.queued(PostgREST.update("notes", where: [.eq("done", "true")], json: #"{"done":false}"#))
        let read = try await device.offline.read(Self.page)
        #expect(read.rowCount == 4 && read.inexactReasons.contains(.countNotRecomputed), "\(read.inexactReasons)")
        withExtendedLifetime(server) {}
    }

    @Test func aDeleteOfARowOnlyTheListOfEveryNoteHoldsTakesOneFromAPagesCount() async throws {
        let (server, device) = try await Self.offlineDevice(alsoCached: [Self.everyNote])
        _ = try await device.queued(PostgREST.delete(from: "notes", where: [.eq("id", "n5")]))
        let read = try await device.offline.read(Self.page)
        #expect(read.rowCount == 3 && read.isExact, "\(String(describing: read.rowCount)) \(read.inexactReasons)")
        withExtendedLifetime(server) {}
    }

    @Test func anUpdateThatBringsARowOnlyTheListOfEveryNoteHoldsIntoTheFilterAddsOneToAPagesCount() async throws {
        let (server, device) = try await Self.offlineDevice(alsoCached: [Self.everyNote])
        _ = try await device.queued(PostgREST.update("notes", where: [.eq("id", "n4")], json: #"{"done":false}"#))
        let read = try await device.offline.read(Self.page)
        #expect(read.rowCount == 5 && read.isExact, "\(String(describing: read.rowCount)) \(read.inexactReasons)")
        withExtendedLifetime(server) {}
    }

    @Test func aPagesCountOfflineAndAfterTheWritesSyncIsTheServers() async throws {
        let (server, device) = try await Self.offlineDevice(alsoCached: [Self.everyNote])
        for write in [
            Self.insert("n6", done: false), Self.insert("n7", done: true),
            PostgREST.delete(from: "notes", where: [.eq("id", "n1")]),
            PostgREST.update("notes", where: [.eq("id", "n2")], json: #"{"done":true}"#),
            PostgREST.update("notes", where: [.eq("id", "n4")], json: #"{"done":false}"#),
            PostgREST.delete(from: "notes", where: [.eq("id", "n5")]),
        ] {
            _ = try await device.queued(write)
        }
        let offline = try await device.offline.read(Self.page)
        #expect(
            offline.rowCount == 3 && offline.isExact,
            "\(String(describing: offline.rowCount)) \(offline.inexactReasons)")
        #expect(try Self.ids(offline) == ["n3", "n4"])

        device.transport.isOffline = false
        #expect(try await device.offline.flush() == 6)
        // The sync marks the table's answers stale: the list of every note no longer decides the
        // rows the page does not hold, until it is fetched again. A count called known is right.
        let synced = try await device.offline.read(Self.page, policy: .cacheOnly)
        #expect(
            synced.rowCount == 3 || synced.inexactReasons.contains(.countNotRecomputed),
            "\(String(describing: synced.rowCount)) \(synced.inexactReasons)")
        let truth = try await URLSessionTransport(
            baseURL: server.baseURL, tokens: AliceToken(), configuration: .testServer
        ).send(Self.page)
        #expect(PostgREST().rowCount(in: truth.headers) == 3, "the server's count: \(truth.headers)")
        let fetched = try await device.offline.read(Self.page, policy: .networkOnly)
        #expect(fetched.rowCount == 3 && fetched.source == .network && fetched.isExact)
    }
}
