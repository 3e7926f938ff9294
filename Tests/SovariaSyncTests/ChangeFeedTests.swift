import Dispatch
import Foundation
import Sovaria
import SovariaCache
import SovariaQueue
import SovariaTestKit
import SovariaTestServers
import Synchronization
import Testing

@testable import SovariaPostgREST
@_spi(Diagnostics) @testable import SovariaSync

/// Changes from other devices through the controller: a PostgREST change feed (its answers
/// scripted, as `ChangeFeed.sql` serves them) brought into the cached answers without fetching
/// them. The real server's feed is checked in SovariaHTTPTests (`ChangeFeedEndToEndTests`).
@Suite struct ChangeFeedTests {
    static let all = PostgREST.select("notes", columns: "id,title,done", order: "id")
    static let open = PostgREST.select("notes", columns: "id,title", where: [.eq("done", "false")], order: "title")
    static let firstTwo = PostgREST.select("notes", columns: "id,title,done", order: "id", limit: 2)
    static let server =
        #"[{"id":"n1","title":"Milk","done":false},{"id":"n2","title":"Bread","done":true},"#
        + #"{"id":"n3","title":"Eggs","done":false}]"#

    /// A controller whose feed is read from `feedServer`; the lists come from `rig.transport`.
    struct FeedRig {
        let rig: Rig
        let feedServer = ScriptedTransport()
        var offline: SovariaOffline { rig.offline }

        init(
            _ engine: SyncEngine, store wrap: Rig.Wrap? = nil, followed: [String] = [], pageSize: Int = 500,
            refetchPast: Int? = 5_000, pullBytes: Int = 1 << 20
        )
            async throws
        {
            let feedServer = feedServer
            rig = try await Rig(engine, wrap: wrap) { configuration in
                configuration.overlay = PostgRESTOverlay(
                    tables: ["notes": .init(primaryKey: "id", defaults: ["done": "false"])], textOrder: .bytes)
                configuration.changeFeed = PostgRESTChangeFeed(
                    transport: feedServer, pageSize: pageSize)
                configuration.followedTables = followed
                configuration.feedFollowsAtOpen = false  // the tests fire the timer
                configuration.feedRefetchPast = refetchPast
                configuration.feedPullBytes = pullBytes
            }
        }

        /// Caches the three reads from the server's rows.
        func cacheTheLists() async throws {
            rig.transport.answer(
                DataResponse(status: 200, body: ChangeFeedTests.server),
                DataResponse(
                    status: 200,
                    body: #"[{"id":"n3","title":"Eggs"},{"id":"n1","title":"Milk"}]"#),
                DataResponse(
                    status: 200,
                    body: #"[{"id":"n1","title":"Milk","done":false},{"id":"n2","title":"Bread","done":true}]"#))
            for read in [ChangeFeedTests.all, ChangeFeedTests.open, ChangeFeedTests.firstTwo] {
                _ = try await offline.read(read, policy: .networkOnly)
            }
        }

        /// The feed's next answer: `rows`, JSON objects of the view's columns.
        func feed(_ rows: String..., headers: [String: String] = [:]) {
            feedServer.answer(
                DataResponse(status: 200, headers: headers, body: "[" + rows.joined(separator: ",") + "]"))
        }
    }

    static func upsert(_ position: Int, _ row: String) -> String {
        let id = row.split(separator: "\"")[3]
        return #"{"position":\#(position),"table":"notes","key":"\#(id)","op":"upsert","row":\#(row)}"#
    }

    static func delete(_ position: Int, _ id: String) -> String {
        #"{"position":\#(position),"table":"notes","key":"\#(id)","op":"delete","row":null}"#
    }

    /// The three changes another device made: a new note, a rename, a delete.
    static let threeChanges = [
        upsert(10, #"{"id":"n4","title":"Apples","done":false,"owner":"alice"}"#),
        upsert(11, #"{"id":"n3","title":"Brown eggs","done":false,"owner":"alice"}"#),
        delete(12, "n1"),
    ]

    static func cached(_ offline: SovariaOffline, _ read: DataRequest) async throws -> CachedResponse? {
        try await offline.cache.cachedResponse(for: ReadIdentity(read, api: PostgREST()).cacheKey)
    }

    /// PostgreSQL writes `jsonb` with a space after each `:` and `,`; a row may repeat a column
    /// (the last value counts, as in `jsonb`). The row reaches the overlay as written.
    @Test func aRowWrittenWithSpacesAndARepeatedColumnAppliesAsItsValues() async throws {
        let rig = try await FeedRig(.memory)
        try await rig.cacheTheLists()
        rig.feed(
            #"{"p": 10, "k": "n1", "o": "upsert", "r": { "id" : "n1", "title": "Old", "done": false , "title": "Oat milk" }}"#
        )
        #expect(try await rig.offline.pullChanges(of: "notes").updatedAnswers >= 1)
        let all = try await Self.cached(rig.offline, Self.all)
        #expect(all?.body.hasPrefix(#"[{"id":"n1","title":"Oat milk","done":false},"#) == true, "\(all?.body ?? "")")
        #expect(all?.isStale == false)
    }

    /// A change that spells a row's text another way (`é` composed in the cache, `e` and a
    /// combining accent in the change) reaches the cached answer byte for byte, as the server's
    /// next answer would hold it: Swift's `!=` calls the two bodies equal.
    @Test func aRespelledValueReachesTheCachedAnswer() async throws {
        let rig = try await FeedRig(.memory)
        let composed = "[{\"id\":\"n1\",\"title\":\"Caf\u{E9}\",\"done\":false}]"
        rig.rig.transport.answer(DataResponse(status: 200, body: composed))
        _ = try await rig.offline.read(Self.all, policy: .networkOnly)
        rig.feed(Self.upsert(10, "{\"id\":\"n1\",\"title\":\"Cafe\u{301}\",\"done\":false}"))
        #expect(try await rig.offline.pullChanges(of: "notes").updatedAnswers == 1)
        let all = try await Self.cached(rig.offline, Self.all)
        #expect(
            all.map { Array($0.body.utf8) } == Array("[{\"id\":\"n1\",\"title\":\"Cafe\u{301}\",\"done\":false}]".utf8))
    }

    /// A read spelled another way after a clear (`é` composed, then `e` and a combining accent:
    /// one read to Swift's `==`, two keys in the cache) is brought up to date by the next page:
    /// what the last page kept of the first spelling's answer (its place in the cache) is not
    /// taken for the second's, which it would not find.
    @Test func aReadSpelledAnotherWayAfterAClearIsStillBroughtUpToDate() async throws {
        let rig = try await FeedRig(.memory)
        // Written out, not percent-encoded: the two paths' bytes differ where Swift sees one text.
        func read(_ title: String) -> DataRequest {
            DataRequest(
                method: "GET", path: "/rest/v1/notes?select=id,title,done&title=eq.\(title)&order=id", headers: [:],
                body: nil)
        }
        let (composed, decomposed) = (read("Caf\u{E9}"), read("Cafe\u{301}"))
        #expect(composed == decomposed, "Swift calls the two reads equal")
        rig.rig.transport.answer(
            DataResponse(status: 200, body: "[{\"id\":\"n1\",\"title\":\"Caf\u{E9}\",\"done\":false}]"))
        _ = try await rig.offline.read(composed, policy: .networkOnly)
        rig.feed(Self.upsert(10, "{\"id\":\"n1\",\"title\":\"Caf\u{E9}\",\"done\":true}"))
        #expect(try await rig.offline.pullChanges(of: "notes").updatedAnswers == 1)

        try await rig.offline.clear()
        let body = "[{\"id\":\"n2\",\"title\":\"Cafe\u{301}\",\"done\":false}]"
        rig.rig.transport.answer(DataResponse(status: 200, body: body))
        _ = try await rig.offline.read(decomposed, policy: .networkOnly)
        rig.feed(Self.upsert(11, "{\"id\":\"n2\",\"title\":\"Cafe\u{301}\",\"done\":true}"))
        #expect(try await rig.offline.pullChanges(of: "notes").updatedAnswers == 1)
        let cached = try await Self.cached(rig.offline, decomposed)
        let expected = "[{\"id\":\"n2\",\"title\":\"Cafe\u{301}\",\"done\":true}]"
        #expect(cached.map { Array($0.body.utf8) } == Array(expected.utf8), "\(cached?.body ?? "")")
        #expect(cached?.isStale == false)
    }

    /// Two rows whose keys spell one text two ways are two rows, as in PostgreSQL: a page that
    /// changes both changes each (Swift's `String` keys took them for one row, and kept only the
    /// last change, applied to whichever row its key met first).
    @Test func rowsWhoseKeysDifferOnlyInTheirBytesAreTwoRows() async throws {
        let rig = try await FeedRig(.memory)
        rig.rig.transport.answer(
            DataResponse(
                status: 200,
                body: "[{\"id\":\"e\u{301}\",\"title\":\"one\",\"done\":false},"
                    + "{\"id\":\"\u{E9}\",\"title\":\"two\",\"done\":false}]"))
        _ = try await rig.offline.read(Self.all, policy: .networkOnly)
        rig.feed(
            Self.upsert(10, "{\"id\":\"\u{E9}\",\"title\":\"TWO\",\"done\":false}"),
            Self.upsert(11, "{\"id\":\"e\u{301}\",\"title\":\"ONE\",\"done\":false}"))
        _ = try await rig.offline.pullChanges(of: "notes")
        let all = try await Self.cached(rig.offline, Self.all)
        let expected =
            "[{\"id\":\"e\u{301}\",\"title\":\"ONE\",\"done\":false},{\"id\":\"\u{E9}\",\"title\":\"TWO\",\"done\":false}]"
        #expect(all.map { Array($0.body.utf8) } == Array(expected.utf8), "\(all?.body ?? "")")
    }

    @Test(arguments: SyncEngine.all)
    func anotherDevicesInsertUpdateAndDeleteReachTheCachedAnswersWithoutAFetch(_ engine: SyncEngine) async throws {
        let rig = try await FeedRig(engine)
        try await rig.cacheTheLists()
        let fetches = rig.rig.transport.received.count
        rig.feed(Self.threeChanges[0], Self.threeChanges[1], Self.threeChanges[2])

        let pulled = try await rig.offline.pullChanges(of: "notes")
        #expect(pulled.changes == 3 && pulled.position == 12 && !pulled.mustRefetch && !pulled.hasMore)
        #expect(pulled.updatedAnswers == 2 && pulled.staleAnswers == 1, "\(pulled)")
        let all = try await Self.cached(rig.offline, Self.all)
        #expect(
            all?.body == #"[{"id":"n2","title":"Bread","done":true},{"id":"n3","title":"Brown eggs","done":false},"#
                + #"{"id":"n4","title":"Apples","done":false}]"#, "the owner column is not selected")
        #expect(all?.isStale == false)
        let open = try await Self.cached(rig.offline, Self.open)
        #expect(open?.body == #"[{"id":"n4","title":"Apples"},{"id":"n3","title":"Brown eggs"}]"#, "by title")
        #expect(try await Self.cached(rig.offline, Self.firstTwo)?.isStale == true, "a limit page lost a row")
        #expect(rig.rig.transport.received.count == fetches, "no list was fetched")
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 12)
        #expect(rig.offline.status.changeFeeds["notes"]?.position == 12)
        #expect(rig.offline.status.changeFeeds["notes"]?.isCaughtUp == true)
        let read = try await rig.offline.read(Self.all, policy: .cacheOnly)
        #expect(read.isExact && read.body == all?.body)

        // The stale page is fetched on its next network-policy read, and only it.
        rig.rig.transport.answer(
            DataResponse(
                status: 200,
                body: #"[{"id":"n2","title":"Bread","done":true},"#
                    + #"{"id":"n3","title":"Brown eggs","done":false}]"#))
        let page = try await rig.offline.read(Self.firstTwo)
        #expect(page.source == .network && rig.rig.transport.received.count == fetches + 1)
        let asked = rig.feedServer.received.map(\.path)
        #expect(
            asked == [
                "/rest/v1/sovaria_feed?select=p%3Aposition,k%3Akey,o%3Aop,r%3Arow&table=eq.notes&order=position&limit=500"
            ],
            "\(asked)")
    }

    /// An answer the server said is current to a position takes only the later changes: a page
    /// the feed serves while it catches up does not set back a row the answer holds newer, and a
    /// change applied moves the answer's position.
    @Test(arguments: SyncEngine.all)
    func aPageAppliesToAnAnswerOnlyTheChangesAfterThePositionItIsCurrentTo(_ engine: SyncEngine) async throws {
        let rig = try await FeedRig(engine)
        rig.rig.transport.answer(
            DataResponse(
                status: 200, headers: ["Sovaria-Position": "11"],
                body: #"[{"id":"n1","title":"Oat milk","done":false}]"#))
        _ = try await rig.offline.read(Self.all, policy: .networkOnly)
        #expect(try await Self.cached(rig.offline, Self.all)?.position == 11)

        rig.feed(Self.upsert(10, #"{"id":"n1","title":"Milk","done":false}"#))  // older than the answer
        let older = try await rig.offline.pullChanges(of: "notes")
        let kept = try await Self.cached(rig.offline, Self.all)
        #expect(kept?.body == #"[{"id":"n1","title":"Oat milk","done":false}]"#, "not set back")
        #expect(kept?.isStale == false && kept?.position == 11 && older.updatedAnswers == 0)

        rig.feed(Self.upsert(12, #"{"id":"n2","title":"Bread","done":true}"#))
        try await rig.offline.pullChanges(of: "notes")
        let moved = try await Self.cached(rig.offline, Self.all)
        #expect(
            moved?.body == #"[{"id":"n1","title":"Oat milk","done":false},{"id":"n2","title":"Bread","done":true}]"#)
        #expect(moved?.position == 12)
        #expect(try await rig.offline.read(Self.all, policy: .cacheOnly).isExact)
    }

    @Test(arguments: SyncEngine.all)
    func thePullResumesAfterItsCheckpointAndAPageAppliedTwiceChangesNothing(_ engine: SyncEngine) async throws {
        let rig = try await FeedRig(engine)
        try await rig.cacheTheLists()
        rig.feed(Self.threeChanges[0], Self.threeChanges[1], Self.threeChanges[2])
        try await rig.offline.pullChanges(of: "notes")
        let once = try await Self.cached(rig.offline, Self.all)?.body
        rig.feed()
        try await rig.offline.pullChanges(of: "notes")
        #expect(rig.feedServer.received.last?.path.contains("position=gt.12") == true, "after the checkpoint")

        // A crash between the answers and the checkpoint (a store without atomic batches): the
        // page comes again, and changes nothing.
        try await rig.rig.store.delete(SovariaOffline.feedPrefix + "notes")
        rig.feed(Self.threeChanges[0], Self.threeChanges[1], Self.threeChanges[2])
        let again = try await rig.offline.pullChanges(of: "notes")
        #expect(again.updatedAnswers == 0 && again.position == 12)
        #expect(try await Self.cached(rig.offline, Self.all)?.body == once)
    }

    @Test(arguments: SyncEngine.all)
    func theCheckpointIsWrittenInTheSameBatchAsTheAnswersAfterThem(_ engine: SyncEngine) async throws {
        let batches = BatchLog()
        let rig = try await FeedRig(engine, store: Rig.Wrap { BatchLogStore(inner: $0, log: batches) })
        try await rig.cacheTheLists()
        rig.feed(Self.threeChanges[0], Self.threeChanges[1], Self.threeChanges[2])
        batches.reset()
        try await rig.offline.pullChanges(of: "notes")
        let written = batches.all
        #expect(written.count == 1, "one store batch: \(written)")
        #expect(written.first?.last == SovariaOffline.feedPrefix + "notes", "the checkpoint last")
        #expect(written.first?.contains { $0.hasPrefix("sov:cache:") } == true)

        // A batch that fails changes nothing: the answers and the checkpoint stay.
        let before = try await Self.cached(rig.offline, Self.all)
        rig.feed(Self.delete(13, "n2"))
        batches.failNext()
        await #expect(throws: StoreFailure.self) { try await rig.offline.pullChanges(of: "notes") }
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 12)
        #expect(try await Self.cached(rig.offline, Self.all) == before)
        rig.feed(Self.delete(13, "n2"))
        #expect(try await rig.offline.pullChanges(of: "notes").position == 13, "the same page, again")
        #expect(try await Self.cached(rig.offline, Self.all)?.body.contains("n2") == false)
    }

    /// A backlog of full pages is read on in one pull and applied in one store batch: each
    /// answer is rewritten once for them all, and the checkpoint moves to the last page's end.
    @Test(arguments: SyncEngine.all)
    func aPullReadsOnWhilePagesComeFullAndAppliesThemInOneBatch(_ engine: SyncEngine) async throws {
        let batches = BatchLog()
        let rig = try await FeedRig(
            engine, store: Rig.Wrap { BatchLogStore(inner: $0, log: batches) }, pageSize: 2)
        try await rig.cacheTheLists()
        rig.feed(Self.threeChanges[0], Self.threeChanges[1])
        rig.feed(Self.threeChanges[2], Self.upsert(13, #"{"id":"n2","title":"Rye","done":true}"#))
        rig.feed(Self.upsert(14, #"{"id":"n5","title":"Figs","done":false}"#))
        batches.reset()
        let asked = rig.feedServer.received.count

        let pulled = try await rig.offline.pullChanges(of: "notes")
        #expect(pulled.changes == 5 && pulled.position == 14 && !pulled.hasMore, "\(pulled)")
        #expect(rig.feedServer.received.count - asked == 3, "three pages, one pull")
        #expect(batches.all.count == 1, "one store batch: \(batches.all)")
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 14)
        let all = try await Self.cached(rig.offline, Self.all)
        #expect(
            all?.body == #"[{"id":"n2","title":"Rye","done":true},{"id":"n3","title":"Brown eggs","done":false},"#
                + #"{"id":"n4","title":"Apples","done":false},{"id":"n5","title":"Figs","done":false}]"#)
        #expect(all?.isStale == false)
        #expect(rig.offline.status.changeFeeds["notes"]?.isCaughtUp == true)
    }

    /// A pull reads on until the rows it holds reach `feedPullBytes`; `0` reads one page.
    @Test(arguments: [0, 1, 2])
    func aPullStopsReadingOnOnceItsRowsPassTheBytes(pagesOfBytes: Int) async throws {
        let pages = [
            [Self.threeChanges[0], Self.threeChanges[1]],
            [Self.threeChanges[2], Self.upsert(13, #"{"id":"n2","title":"Rye","done":true}"#)],
            [Self.upsert(14, #"{"id":"n5","title":"Figs","done":false}"#), Self.upsert(15, #"{"id":"n6"}"#)],
        ]
        // One byte more than the first `pagesOfBytes` pages' rows: the pull reads one page more
        // than them (it stops once it reaches the limit, not before); one page with 0.
        let rows: [[RowChange]] = [
            [
                RowChange(
                    position: 10, table: "notes", key: "n4",
                    operation: .upsert(row: #"{"id":"n4","title":"Apples","done":false,"owner":"alice"}"#)),
                RowChange(
                    position: 11, table: "notes", key: "n3",
                    operation: .upsert(row: #"{"id":"n3","title":"Brown eggs","done":false,"owner":"alice"}"#)),
            ],
            [
                RowChange(position: 12, table: "notes", key: "n1", operation: .delete),
                RowChange(
                    position: 13, table: "notes", key: "n2",
                    operation: .upsert(row: #"{"id":"n2","title":"Rye","done":true}"#)),
            ],
        ]
        let limit = pagesOfBytes == 0 ? 0 : rows.prefix(pagesOfBytes).joined().reduce(1) { $0 + $1.textBytes }
        let rig = try await FeedRig(.memory, pageSize: 2, pullBytes: limit)
        try await rig.cacheTheLists()
        for page in pages {
            rig.feedServer.answer(DataResponse(status: 200, body: "[" + page.joined(separator: ",") + "]"))
        }
        let asked = rig.feedServer.received.count
        let pulled = try await rig.offline.pullChanges(of: "notes")
        let read = pagesOfBytes + 1
        #expect(rig.feedServer.received.count - asked == read, "\(pulled)")
        #expect(pulled.changes == 2 * read && pulled.hasMore && pulled.position == 9 + 2 * Int64(read))
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 9 + 2 * Int64(read))
    }

    /// A later page the feed cannot serve ends the pull with the pages before it, applied; the
    /// next pull meets the error as a first page does. A must-refetch page ends it too: the pull
    /// is then a must-refetch.
    @Test func aLaterPageThatCannotBeAppliedEndsThePullWithThePagesBeforeIt() async throws {
        let rig = try await FeedRig(.memory, pageSize: 2)
        try await rig.cacheTheLists()
        rig.feed(Self.threeChanges[0], Self.threeChanges[1])
        rig.feedServer.answer(DataResponse(status: 503, body: #"{"message":"busy"}"#))
        let asked = rig.feedServer.received.count
        let first = try await rig.offline.pullChanges(of: "notes")
        #expect(first.changes == 2 && first.position == 11 && first.hasMore, "\(first)")
        #expect(rig.feedServer.received.count - asked == 2, "the 503 was the second page's")
        #expect(try await Self.cached(rig.offline, Self.all)?.body.contains("Brown eggs") == true)
        // The next pull meets the busy server as its first page: a typed, transient error.
        rig.feedServer.answer(DataResponse(status: 503, body: #"{"message":"busy"}"#))
        let busy = await #expect(throws: ChangeFeedError.self) { try await rig.offline.pullChanges(of: "notes") }
        #expect(busy?.code == .unavailable)
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 11)

        // A page whose change goes back behind the last page read: not joined, and an error
        // of its own at the next pull, which applies nothing.
        rig.feed(Self.threeChanges[2], Self.upsert(13, #"{"id":"n2","title":"Rye","done":true}"#))
        rig.feed(Self.upsert(12, #"{"id":"n5","title":"Figs","done":false}"#))
        let second = try await rig.offline.pullChanges(of: "notes")
        #expect(second.changes == 2 && second.position == 13, "\(second)")
        rig.feed(Self.upsert(12, #"{"id":"n5","title":"Figs","done":false}"#))
        await #expect(throws: ChangeFeedError.self) { try await rig.offline.pullChanges(of: "notes") }
        #expect(rig.offline.status.changeFeeds["notes"]?.lastError?.code == .positionWentBack)
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 13)

        let refetch = try await FeedRig(.memory, pageSize: 2)
        try await refetch.cacheTheLists()
        refetch.feed(Self.threeChanges[0], Self.threeChanges[1])
        refetch.feed(#"{"position":40,"table":"notes","key":"","op":"trimmed","row":null}"#)
        let trimmed = try await refetch.offline.pullChanges(of: "notes")
        #expect(trimmed.mustRefetch && trimmed.position == 40 && trimmed.staleAnswers == 3, "\(trimmed)")
        #expect(try await refetch.offline.feedCheckpoint(of: "notes") == 40)
    }

    @Test(arguments: SyncEngine.all)
    func aMalformedChangeIsATypedErrorAndNothingOfItsPageIsApplied(_ engine: SyncEngine) async throws {
        let rig = try await FeedRig(engine)
        try await rig.cacheTheLists()
        let before = try await Self.cached(rig.offline, Self.all)?.body
        let errors = Task { await rig.offline.changeFeedErrors.first { _ in true } }
        rig.feed(Self.threeChanges[0], #"{"position":"eleven","table":"notes","key":"n3","op":"upsert"}"#)
        await #expect(throws: ChangeFeedError.self) { try await rig.offline.pullChanges(of: "notes") }
        #expect(try await Self.cached(rig.offline, Self.all)?.body == before, "nothing applied half")
        #expect(try await Self.cached(rig.offline, Self.all)?.isStale == true, "the answers went stale")
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == nil)
        #expect(rig.offline.status.changeFeeds["notes"]?.lastError?.code == .malformedChange)
        #expect(await errors.value?.code == .malformedChange)
        #expect(try await rig.offline.read(Self.all, policy: .cacheOnly).isExact == false)
    }

    @Test(arguments: [
        (
            "a position going back", [upsert(10, #"{"id":"n4","title":"A","done":false}"#), delete(9, "n1")],
            ChangeFeedError.Code.positionWentBack
        ),
        ("an unknown op", [#"{"position":5,"table":"notes","key":"n1","op":"merge","row":null}"#], .malformedChange),
        (
            "an upsert without a row", [#"{"position":5,"table":"notes","key":"n1","op":"upsert","row":null}"#],
            .malformedChange
        ),
        ("another table", [#"{"position":5,"table":"lists","key":"l1","op":"delete","row":null}"#], .unexpectedTable),
        // A row is kept as the text the server wrote, not parsed on the way: it must still be an object.
        (
            "an upsert whose row is a string", [#"{"position":5,"key":"n1","op":"upsert","row":"{\"id\":\"n1\"}"}"#],
            .malformedChange
        ),
        (
            "an upsert whose row is an array", [#"{"position":5,"key":"n1","op":"upsert","row":[{"id":"n1"}]}"#],
            .malformedChange
        ),
        ("a row that is not JSON", [#"{"position":5,"key":"n1","op":"upsert","row":{"id":n1}}"#], .malformedChange),
    ])
    func aPageThatCannotBeAppliedIsRefused(
        _ name: String, _ rows: [String], _ code: ChangeFeedError.Code
    )
        async throws
    {
        let rig = try await FeedRig(.memory)
        try await rig.cacheTheLists()
        rig.feedServer.answer(DataResponse(status: 200, body: "[" + rows.joined(separator: ",") + "]"))
        do {
            try await rig.offline.pullChanges(of: "notes")
            Issue.record("\(name) was applied")
        } catch let error as ChangeFeedError {
            #expect(error.code == code && error.table == "notes", "\(name): \(error)")
        }
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == nil)
        #expect(try await Self.cached(rig.offline, Self.all)?.body == Self.server)
    }

    /// A read that does not wait asks the server to count what is left; the status says how far
    /// behind the device is, `nil` while behind on a server that does not count, 0 once caught up.
    @Test func theStatusSaysHowFarBehindTheFeedIs() async throws {
        let rig = try await FeedRig(.memory, pageSize: 2, pullBytes: 0)  // the status after each page
        rig.feed(
            Self.upsert(1, #"{"id":"n1","title":"A"}"#), Self.upsert(2, #"{"id":"n2","title":"B"}"#),
            headers: ["Content-Range": "0-1/5"])
        try await rig.offline.pullChanges(of: "notes")
        #expect(rig.feedServer.received.last?.header("Prefer") == "count=exact")
        #expect(rig.offline.status.changeFeeds["notes"]?.behindBy == 3)
        rig.feed(
            Self.upsert(3, #"{"id":"n3","title":"C"}"#), Self.upsert(4, #"{"id":"n4","title":"D"}"#),
            headers: ["Content-Range": "0-1/*"])
        try await rig.offline.pullChanges(of: "notes")
        #expect(rig.offline.status.changeFeeds["notes"]?.behindBy == nil, "the server did not count")
        #expect(rig.offline.status.changeFeeds["notes"]?.isCaughtUp == false)
        rig.feed(Self.upsert(5, #"{"id":"n5","title":"E"}"#))
        try await rig.offline.pullChanges(of: "notes", wait: .seconds(3))
        #expect(rig.feedServer.received.last?.header("Prefer") == "wait=3", "a wait asks no count")
        #expect(rig.offline.status.changeFeeds["notes"]?.behindBy == 0)
        #expect(rig.offline.status.changeFeeds["notes"]?.isCaughtUp == true)
    }

    /// A full page whose count says nothing is left after it ends the catch-up: no read of an
    /// empty page follows (a round trip on a real network), and the device is caught up. A full
    /// page with more counted, or not counted, is read on.
    @Test func aFullPageCountedAsTheLastEndsTheCatchUp() async throws {
        let rig = try await FeedRig(.memory, pageSize: 2)
        let asked = rig.feedServer.received.count
        rig.feed(
            Self.upsert(1, #"{"id":"n1","title":"A"}"#), Self.upsert(2, #"{"id":"n2","title":"B"}"#),
            headers: ["Content-Range": "0-1/2"])
        let last = try await rig.offline.pullChanges(of: "notes")
        #expect(last.changes == 2 && !last.hasMore, "\(last)")
        #expect(rig.feedServer.received.count - asked == 1, "one read, no empty page after it")
        #expect(rig.offline.status.changeFeeds["notes"]?.isCaughtUp == true)
        for range in ["0-1/3", "0-1/*"] {
            let reader = PostgRESTChangeFeed(
                transport: CannedFeed(
                    response: DataResponse(
                        status: 206, headers: ["Content-Range": range],
                        body: "[" + Self.upsert(3, #"{"id":"n3"}"#) + "," + Self.upsert(4, #"{"id":"n4"}"#) + "]")),
                pageSize: 2)
            let page = try await reader.changes(of: "notes", after: 2, wait: nil)
            #expect(page.hasMore, "\(range): more may follow")
        }
    }

    /// Answers every request with one response.
    struct CannedFeed: SyncTransport {
        let response: DataResponse
        func send(_ request: DataRequest) async throws -> DataResponse { response }
    }

    /// A backlog past `feedRefetchPast` (as the server counts it) is skipped: no change of the
    /// page is applied, every answer of the table goes stale, and the checkpoint moves to the
    /// feed's latest position. A backlog at the limit is applied; so is one on a feed that cannot
    /// say where it ends.
    @Test func aBacklogPastTheLimitIsSkippedAndItsAnswersFetchedAgain() async throws {
        let rig = try await FeedRig(.memory, pageSize: 2, refetchPast: 4)
        try await rig.cacheTheLists()
        rig.feed(
            Self.upsert(10, #"{"id":"n4","title":"Apples","done":false}"#),
            Self.upsert(11, #"{"id":"n5","title":"Pears","done":false}"#), headers: ["Content-Range": "0-1/4"])
        let applied = try await rig.offline.pullChanges(of: "notes")
        #expect(applied.changes == 2 && applied.skippedChanges == 0, "at the limit: applied")
        let fetches = rig.rig.transport.received.count

        rig.feed(
            Self.upsert(12, #"{"id":"n6","title":"Plums","done":false}"#),
            Self.upsert(13, #"{"id":"n7","title":"Figs","done":false}"#), headers: ["Content-Range": "0-1/9"])
        rig.feed(#"{"position":40}"#)
        let skipped = try await rig.offline.pullChanges(of: "notes")
        #expect(skipped.skippedChanges == 9 && skipped.changes == 0 && !skipped.hasMore && !skipped.mustRefetch)
        #expect(
            rig.feedServer.received.last?.path
                == "/rest/v1/sovaria_feed?select=position&table=eq.notes&order=position.desc&limit=1")
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 40)
        let status = rig.offline.status.changeFeeds["notes"]
        #expect(status?.isCaughtUp == true && status?.behindBy == 0 && status?.mustRefetchCount == 0)
        for read in [Self.all, Self.open, Self.firstTwo] {
            #expect(try await Self.cached(rig.offline, read)?.isStale == true, "\(read.path)")
            let local = try await rig.offline.read(read, policy: .cacheOnly)
            #expect(local.inexactReasons.contains(.staleAfterServerChanges) && local.body?.contains("Plums") == false)
        }
        #expect(rig.rig.transport.received.count == fetches, "stale, fetched at their next network read")

        let unbounded = try await FeedRig(.memory, pageSize: 2, refetchPast: nil)
        unbounded.feed(
            Self.upsert(1, #"{"id":"n4","title":"Apples"}"#), Self.upsert(2, #"{"id":"n5","title":"Pears"}"#),
            headers: ["Content-Range": "0-1/900"])
        #expect(try await unbounded.offline.pullChanges(of: "notes").changes == 2, "no limit: applied")
    }

    @Test func anErrorStatusOrABodyThatIsNoArrayIsATypedError() async throws {
        let rig = try await FeedRig(.memory)
        rig.feedServer.answer(DataResponse(status: 404, body: #"{"message":"relation sovaria_feed does not exist"}"#))
        await #expect(throws: ChangeFeedError(.unexpectedStatus, table: "notes", "")) {
            do { try await rig.offline.pullChanges(of: "notes") } catch let error as ChangeFeedError {
                throw ChangeFeedError(error.code, table: error.table, "")
            }
        }
        rig.feedServer.answer(DataResponse(status: 200, body: #"{"not":"a page"}"#))
        await #expect(throws: ChangeFeedError.self) { try await rig.offline.pullChanges(of: "notes") }
        let noFeed = try await Rig(.memory)
        await #expect(throws: ChangeFeedError.self) { try await noFeed.offline.pullChanges(of: "notes") }
    }

    @Test(arguments: SyncEngine.all)
    func aMustRefetchMarksEveryAnswerStaleAndALiveQueryFetchesOnce(_ engine: SyncEngine) async throws {
        let rig = try await FeedRig(engine)
        try await rig.cacheTheLists()
        var answers = rig.offline.observe(Self.all, policy: .cacheOnly).makeAsyncIterator()
        _ = try await answers.next()
        let fetches = rig.rig.transport.received.count
        let refetched = #"[{"id":"n2","title":"Bread","done":true}]"#
        rig.rig.transport.answer(DataResponse(status: 200, body: refetched))
        rig.feed(#"{"position":40,"table":"notes","key":"","op":"trimmed","row":null}"#)

        let pulled = try await rig.offline.pullChanges(of: "notes")
        #expect(pulled.mustRefetch && pulled.staleAnswers == 3 && pulled.position == 40)
        var shown = try await answers.next()
        if shown?.body != refetched { shown = try await answers.next() }  // the stale mark, then the fetch
        #expect(shown?.body == refetched && shown?.isExact == true)
        await rig.offline.cache.waitForBackgroundRefreshes()
        let gets = rig.rig.transport.received.dropFirst(fetches).filter { $0.method == "GET" }
        #expect(gets.map(\.path) == [Self.all.path], "only the shown answer, once")
        #expect(try await Self.cached(rig.offline, Self.open)?.isStale == true)
        #expect(rig.offline.status.changeFeeds["notes"]?.mustRefetchCount == 1)
    }

    @Test(arguments: SyncEngine.all)
    func aLiveQueryAnswersOnceForABatchAndPendingWritesStillApplyOnTop(_ engine: SyncEngine) async throws {
        let rig = try await FeedRig(engine)
        try await rig.cacheTheLists()
        rig.rig.transport.online = false
        _ = try await rig.offline.write(
            PostgREST.update("notes", where: [.eq("id", "n2")], json: #"{"title":"Rye bread"}"#))
        // The lists' server stays off: the write stays pending (the feed reaching its server
        // starts a flush, which finds no network).
        var answers = rig.offline.observe(Self.all, policy: .cacheOnly).makeAsyncIterator()
        let first = try await answers.next()
        #expect(first?.body?.contains("Rye bread") == true)
        rig.feed(Self.threeChanges[0], Self.threeChanges[1], Self.threeChanges[2])
        try await rig.offline.pullChanges(of: "notes")
        let next = try await answers.next()
        #expect(try LocalFirstTests.ids(#require(next)) == ["n2", "n3", "n4"], "the whole batch in one answer")
        #expect(next?.body?.contains("Rye bread") == true && next?.body?.contains("Brown eggs") == true)
        #expect(next?.hasPendingWrites == true && next?.isExact == true)
    }

    @Test(arguments: SyncEngine.all)
    func theEchoOfAnOwnSyncedWriteDoesNotFlickerAndALaterChangeByAnotherDeviceWins(
        _ engine: SyncEngine
    )
        async throws
    {
        let rig = try await FeedRig(engine)
        try await rig.cacheTheLists()
        rig.feed()
        try await rig.offline.pullChanges(of: "notes")  // the device follows the table
        rig.rig.transport.answer(DataResponse(status: 200, body: #"[{"id":"n2","title":"Mine","done":true}]"#))
        _ = try await rig.offline.write(
            PostgREST.update("notes", where: [.eq("id", "n2")], json: #"{"title":"Mine"}"#))
        #expect(try await rig.offline.read(Self.all, policy: .cacheOnly).body?.contains("Mine") == true)

        rig.feed(Self.upsert(20, #"{"id":"n2","title":"Mine","done":true}"#))  // the echo
        try await rig.offline.pullChanges(of: "notes")
        let echoed = try await rig.offline.read(Self.all, policy: .cacheOnly)
        #expect(echoed.body?.contains("Mine") == true && echoed.isExact)

        rig.feed(Self.upsert(21, #"{"id":"n2","title":"Theirs","done":true}"#))  // another device, later
        try await rig.offline.pullChanges(of: "notes")
        let later = try await rig.offline.read(Self.all, policy: .cacheOnly)
        #expect(later.body?.contains("Theirs") == true && later.body?.contains("Mine") == false, "\(later.body ?? "")")
        #expect(later.isExact)
    }

    /// A synced write whose answer said where its change is stays over the answers until the feed
    /// reaches that position, not merely the log's end (a transaction still running can hold the
    /// feed short of it): nothing flickers back to the row before the write.
    @Test(arguments: SyncEngine.all)
    func aSyncedWriteShowsUntilTheFeedReachesItsChange(_ engine: SyncEngine) async throws {
        let rig = try await FeedRig(engine)
        try await rig.cacheTheLists()
        rig.feed()
        try await rig.offline.pullChanges(of: "notes")
        rig.rig.transport.answer(
            DataResponse(
                status: 200, headers: ["Sovaria-Write-Position": "30"],
                body: #"[{"id":"n2","title":"Mine","done":true}]"#))
        _ = try await rig.offline.write(
            PostgREST.update("notes", where: [.eq("id", "n2")], json: #"{"title":"Mine"}"#))

        rig.feed()  // the log's end for now: the write's change is held back
        try await rig.offline.pullChanges(of: "notes")
        rig.feed(Self.upsert(25, #"{"id":"n3","title":"Eggs","done":true}"#))  // another change, before it
        try await rig.offline.pullChanges(of: "notes")
        let held = try await rig.offline.read(Self.all, policy: .cacheOnly)
        #expect(held.body?.contains("Mine") == true && held.isExact, "\(held.body ?? "")")

        rig.feed(Self.upsert(30, #"{"id":"n2","title":"Mine","done":true}"#))  // the echo
        try await rig.offline.pullChanges(of: "notes")
        rig.feed(Self.upsert(31, #"{"id":"n2","title":"Theirs","done":true}"#))
        try await rig.offline.pullChanges(of: "notes")
        let later = try await rig.offline.read(Self.all, policy: .cacheOnly)
        #expect(later.body?.contains("Theirs") == true && later.body?.contains("Mine") == false && later.isExact)
    }

    @Test(arguments: SyncEngine.all)
    func anAnswerTheFeedMarkedStaleIsNeverCalledExactEvenWithSyncedWrites(_ engine: SyncEngine) async throws {
        let rig = try await FeedRig(engine)
        try await rig.cacheTheLists()
        rig.rig.transport.answer(DataResponse(status: 201))
        _ = try await rig.offline.write(
            PostgREST.insert(into: "notes", json: #"{"id":"n9","title":"Synced","done":false}"#, returning: false))
        rig.feed(Self.delete(30, "n1"))  // the limit page loses a row: stale
        try await rig.offline.pullChanges(of: "notes")
        let page = try await rig.offline.read(Self.firstTwo, policy: .cacheOnly)
        #expect(!page.isExact && page.inexactReasons.contains(.staleAfterServerChanges), "\(page.inexactReasons)")
    }

    @Test func theTimerFollowsTheTablesWaitsWhenOfferedAndBacksOffWithoutNetwork() async throws {
        let rig = try await FeedRig(.memory, followed: ["notes"])
        try await rig.cacheTheLists()
        rig.feed(Self.threeChanges[0], headers: ["Preference-Applied": "wait=20"])
        rig.feed(headers: ["Preference-Applied": "wait=20"])
        await rig.rig.timer.fire()
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 10)
        #expect(
            rig.feedServer.received.map { $0.header("Prefer") } == ["count=exact", "wait=20"],
            "no wait before its first page (a count); caught up by it, a wait at once, not at the next tick")
        rig.feed(headers: ["Preference-Applied": "wait=20"])
        await rig.rig.timer.fire()
        #expect(rig.feedServer.received.last?.header("Prefer") == "wait=20", "caught up, and the server offers it")

        rig.feedServer.online = false
        await rig.rig.timer.fire()
        let tries = rig.feedServer.received.count
        #expect(!rig.offline.online)
        rig.feedServer.online = true
        await rig.rig.timer.fire()
        #expect(rig.feedServer.received.count == tries, "no pull before the retry time")
        rig.rig.clock.advance(seconds: 31)
        rig.feed(Self.threeChanges[1])
        await rig.rig.timer.fire()
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 11 && rig.offline.online)
    }
}

/// The keys of each batch a store wrote; can fail the next one.
final class BatchLog: Sendable {
    private let state = Mutex((batches: [[String]](), failNext: false))
    func reset() { state.withLock { $0.batches = [] } }
    func failNext() { state.withLock { $0.failNext = true } }
    /// Takes back a ``failNext()`` no batch used.
    func clearFailure() { state.withLock { $0.failNext = false } }
    var all: [[String]] { state.withLock { $0.batches } }
    /// Records `batch`, or throws when asked to fail it.
    func record(_ batch: [StoreWrite]) throws {
        try state.withLock { state in
            if state.failNext {
                state.failNext = false
                throw StoreFailure()
            }
            state.batches.append(batch.map(\.key))
        }
    }
}

/// The failure ``BatchLog/failNext()`` makes.
struct StoreFailure: Error {}

/// A store that logs its batches in a ``BatchLog`` (a `set` or `delete` is a batch of one).
final class BatchLogStore: ForwardingStore {
    let inner: any OfflineStore
    let log: BatchLog
    init(inner: any OfflineStore, log: BatchLog) {
        self.inner = inner
        self.log = log
    }
    func write(_ batch: [StoreWrite]) async throws {
        try log.record(batch)
        try await inner.write(batch)
    }
}

/// A page reads only what it needs (issue 62, item 2): the overlay is asked with the body of an
/// answer only where the answer's version in the cache moved since the last page (or the
/// overlay no longer keeps it); every other answer is asked by its version alone, and not read.
@Suite struct ChangeFeedSelectiveReadTests {
    /// Forwards to a `PostgRESTOverlay`, recording each versioned question; calls `hook` once, the
    /// first time a page asks which changes can alter its answers (the page has read the answers'
    /// versions, and not yet the bodies it reads late).
    final class WatchedOverlay: OverlayEvaluator, Sendable {
        let inner = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
        let asked = Recorder<[FeedAnswer]>()
        let hook = Mutex<(@Sendable () -> Void)?>(nil)

        func answer(
            _ read: DataRequest, cachedBody: String?, writes: [OverlayWrite], related: [RelatedAnswer]
        ) -> OverlayAnswer {
            inner.answer(read, cachedBody: cachedBody, writes: writes, related: related)
        }
        func session(_ read: DataRequest, cachedBody: String?, related: [RelatedAnswer]) -> any OverlaySession {
            inner.session(read, cachedBody: cachedBody, related: related)
        }
        func changesThatCanAlter(versioned answers: [FeedAnswer], among changes: [RowChange]) -> [[Int]?] {
            hook.withLock { hook in
                defer { hook = nil }
                return hook
            }?()
            asked.append(answers)
            return inner.changesThatCanAlter(versioned: answers, among: changes)
        }
        func shedKeptAnswers() { inner.shedKeptAnswers() }
    }

    /// Runs its jobs on a queue of its own: a page run on it may block in the overlay's hook
    /// without taking a thread from Swift's cooperative pool, where the fetch it waits for runs.
    final class QueueExecutor: TaskExecutor {
        let queue = DispatchQueue(label: "sovaria.test.page")
        func enqueue(_ job: consuming ExecutorJob) {
            let job = UnownedJob(job)
            queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
        }
    }

    /// A device whose overlay is watched (``WatchedOverlay``), following a scripted feed it
    /// pulls by hand.
    static func watchedRig(_ engine: SyncEngine) async throws -> (Rig, WatchedOverlay, ScriptedTransport) {
        let overlay = WatchedOverlay()
        let feedServer = ScriptedTransport()
        let rig = try await Rig(engine) { configuration in
            configuration.overlay = overlay
            configuration.changeFeed = PostgRESTChangeFeed(transport: feedServer)
            configuration.feedFollowsAtOpen = false
        }
        return (rig, overlay, feedServer)
    }

    /// The answer `title=eq.open` holding n1, seen by a page at position 7; the next page brings
    /// `changes`, and while it runs (after it read the answers' versions) a fetch the server
    /// answered at position 9 stores `[n1 open, n2 open]`. Returns the answer the page leaves.
    static func aFetchStoresWhileAPageRuns(_ changes: [String]) async throws -> CachedResponse {
        let (rig, overlay, feedServer) = try await Self.watchedRig(.memory)
        let read = PostgREST.select("notes", columns: "id,title", where: [.eq("title", "open")], order: "id")
        rig.transport.answer(DataResponse(status: 200, body: #"[{"id":"n1","title":"open"}]"#))
        _ = try await rig.offline.read(read, policy: .networkOnly)
        feedServer.answer(
            DataResponse(status: 200, body: "[" + ChangeFeedTests.upsert(7, #"{"id":"n9","title":"closed"}"#) + "]"))
        _ = try await rig.offline.pullChanges(of: "notes")
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 7)

        feedServer.answer(DataResponse(status: 200, body: "[" + changes.joined(separator: ",") + "]"))
        rig.transport.answer(
            DataResponse(
                status: 200, headers: ["Sovaria-Position": "9"],
                body: #"[{"id":"n1","title":"open"},{"id":"n2","title":"open"}]"#))
        let offline = rig.offline
        overlay.hook.withLock { hook in
            hook = {
                let fetched = DispatchSemaphore(value: 0)
                Task.detached {
                    _ = try? await offline.read(read, policy: .networkOnly)
                    fetched.signal()
                }
                fetched.wait()
            }
        }
        _ = try await withTaskExecutorPreference(QueueExecutor()) {
            try await offline.pullChanges(of: "notes")
        }
        #expect(overlay.hook.withLock { $0 == nil }, "the fetch ran while the page did")
        #expect(try await offline.feedCheckpoint(of: "notes") == 11)
        let answer = try #require(try await ChangeFeedTests.cached(offline, read))
        await offline.close()
        return answer
    }

    /// The page's changes alter the answer it knew (n1 deleted), and the body it then reads is
    /// the fetch's: every change counts for that body (n2 closed at 11 leaves it too), not only
    /// those found for the body the page knew.
    @Test func aBodyStoredAfterThePageBeganTakesEveryChange() async throws {
        let answer = try await Self.aFetchStoresWhileAPageRuns([
            ChangeFeedTests.delete(10, "n1"), ChangeFeedTests.upsert(11, #"{"id":"n2","title":"closed"}"#),
        ])
        #expect(answer.body == "[]" && !answer.isStale && answer.position == 11, "\(answer)")
    }

    /// No change of the page alters the answer it knew, but the fetch stored meanwhile was
    /// answered at 9, before n2 closed at 11: it is marked stale, not kept as current.
    @Test func aBodyStoredWhileThePageRanAndAnsweredBeforeItIsMarkedStale() async throws {
        let answer = try await Self.aFetchStoresWhileAPageRuns([
            ChangeFeedTests.upsert(11, #"{"id":"n2","title":"closed"}"#)
        ])
        #expect(answer.isStale && answer.position == 9, "\(answer)")
    }

    @Test(arguments: SyncEngine.all)
    func theOverlayGetsTheBodiesOfOnlyTheAnswersWhoseVersionMoved(_ engine: SyncEngine) async throws {
        let (rig, overlay, feedServer) = try await Self.watchedRig(engine)
        // One answer per row, by key; and the whole table.
        let byKey = (1...6).map { PostgREST.select("notes", columns: "id,title", where: [.eq("id", "n\($0)")]) }
        let all = PostgREST.select("notes", columns: "id,title", order: "id")
        for (index, read) in byKey.enumerated() {
            rig.transport.answer(DataResponse(status: 200, body: #"[{"id":"n\#(index + 1)","title":"t"}]"#))
            _ = try await rig.offline.read(read, policy: .networkOnly)
        }
        rig.transport.answer(
            DataResponse(
                status: 200, body: "[" + (1...6).map { #"{"id":"n\#($0)","title":"t"}"# }.joined(separator: ",") + "]"))
        _ = try await rig.offline.read(all, policy: .networkOnly)
        let keys = (byKey + [all]).map { ReadIdentity($0, api: PostgREST()).cacheKey }

        var lastStart: [String: UInt64] = [:]  // each answer's version as the last page began
        for page in 1...4 {
            let row = page % 3 + 1  // n2, n3, n1, n2: each page renames one row
            feedServer.answer(
                DataResponse(
                    status: 200,
                    body: "[" + ChangeFeedTests.upsert(page * 10, #"{"id":"n\#(row)","title":"p\#(page)"}"#) + "]"))
            var start: [String: UInt64] = [:]
            // Unwrapped first: assigned straight into the dictionary, `#require` would check an
            // optional of the optional, and a missing version would pass.
            for key in keys {
                let version: UInt64 = try #require(rig.offline.cache.version(of: key))
                start[key] = version
            }
            let askedBefore = overlay.asked.all.count
            let pulled = try await rig.offline.pullChanges(of: "notes")
            #expect(pulled.updatedAnswers == 2, "page \(page): n\(row)'s own answer and the whole table")
            let asks = overlay.asked.all.dropFirst(askedBefore)
            for asked in asks {
                #expect(Set(asked.map(\.id)) == Set(keys), "page \(page): every answer is asked about")
                for answer in asked { #expect(answer.version == start[answer.id], "page \(page): its version then") }
            }
            func withBodies(_ asked: [FeedAnswer]?) -> Set<String> {
                Set((asked ?? []).filter { $0.cachedBody != nil }.map(\.id))
            }
            // First with the bodies of the answers whose version moved: on the first page all, on
            // a later one those the page before rewrote. Then, if some change can alter answers
            // it did not read, again with theirs: n\(row)'s own and the whole table.
            let moved = Set(keys.filter { lastStart[$0] != start[$0] })
            #expect(withBodies(asks.first) == moved, "page \(page)")
            #expect(page == 1 ? moved.count == keys.count : moved.count == 2, "page \(page)")
            let altered = Set([keys[row - 1], keys[6]])
            #expect(asks.count == (altered.isSubset(of: moved) ? 1 : 2), "page \(page)")
            #expect(withBodies(asks.last) == moved.union(altered), "page \(page)")
            lastStart = start
        }
        await rig.offline.close()
    }

    /// A pull that brings nothing between two pages (a caught-up read, a long poll that timed
    /// out) keeps no versions: the next page gives the overlay the bodies of the answers the page
    /// before rewrote, which it met at their old versions, and asks it once.
    @Test func aPageAfterAnEmptyPullGivesTheBodiesTheLastPageRewrote() async throws {
        let (rig, overlay, feedServer) = try await Self.watchedRig(.memory)
        let byKey = (1...3).map { PostgREST.select("notes", columns: "id,title", where: [.eq("id", "n\($0)")]) }
        for (index, read) in byKey.enumerated() {
            rig.transport.answer(DataResponse(status: 200, body: #"[{"id":"n\#(index + 1)","title":"t"}]"#))
            _ = try await rig.offline.read(read, policy: .networkOnly)
        }
        let rewritten = ReadIdentity(byKey[1], api: PostgREST()).cacheKey
        for (page, body) in [
            (1, "[" + ChangeFeedTests.upsert(10, #"{"id":"n2","title":"p1"}"#) + "]"), (2, "[]"),
            (3, "[" + ChangeFeedTests.upsert(30, #"{"id":"n2","title":"p3"}"#) + "]"),
        ] {
            feedServer.answer(DataResponse(status: 200, body: body))
            let askedBefore = overlay.asked.all.count
            let pulled = try await rig.offline.pullChanges(of: "notes")
            let asks = overlay.asked.all.dropFirst(askedBefore)
            switch page {
            case 2: #expect(pulled.changes == 0 && asks.isEmpty, "an empty page asks nothing")
            case 3:
                #expect(pulled.updatedAnswers == 1)
                #expect(asks.count == 1, "asked once: \(asks.map { $0.map(\.cachedBody) })")
                let withBodies = asks.first?.filter { $0.cachedBody != nil }.map(\.id)
                #expect(withBodies == [rewritten], "the body page 1 rewrote")
            default: #expect(pulled.updatedAnswers == 1)
            }
        }
        let answer = try await rig.offline.read(byKey[1], policy: .cacheOnly)
        #expect(answer.body?.contains("p3") == true && answer.isExact, "\(answer.body ?? "nil")")
        await rig.offline.close()
    }
}
