import Foundation
import Observation
import Sovaria
import SovariaCache
import SovariaQueue
import SovariaTestKit
import SovariaTestServers
import Testing

@testable import SovariaPostgREST
@_spi(Diagnostics) @testable import SovariaSync

/// Local-first reads through the controller: pending writes overlaid on cached answers, what a
/// sync and a rejection do to them, live queries and the sync status. The overlay's rules
/// themselves are checked against PostgreSQL in SovariaHTTPTests.
@Suite struct LocalFirstTests {
    static let notes = PostgREST.select("notes", columns: "id,title,done", order: "id")
    static let overlay = PostgRESTOverlay(
        tables: ["notes": .init(primaryKey: "id", defaults: ["done": "false"])], textOrder: .bytes)

    static func rig(_ engine: SyncEngine) async throws -> Rig {
        try await Rig(engine) { $0.overlay = Self.overlay }
    }

    static func rows(_ json: String) -> DataResponse { DataResponse(status: 200, body: json) }

    static func insert(_ id: String) -> DataRequest {
        PostgREST.insert(into: "notes", json: #"{"id":"\#(id)","title":"\#(id.uppercased())"}"#, returning: false)
    }

    /// The ids of an answer's rows, in order.
    static func ids(_ read: LocalRead) throws -> [String] {
        struct Row: Decodable { var id: String }
        return try read.decode([Row].self, using: JSONDecoder())?.map(\.id) ?? []
    }

    @Test(arguments: SyncEngine.all)
    func offlineWritesShowAtOnceAndARefusedOneLeavesWhenRejected(engine: SyncEngine) async throws {
        let rig = try await Self.rig(engine)
        rig.transport.answer(Self.rows(#"[{"id":"a","title":"A","done":false}]"#))
        _ = try await rig.offline.read(Self.notes)
        rig.transport.online = false
        let b = try await rig.offline.write(Self.insert("b"))
        let c = try await rig.offline.write(Self.insert("c"))
        guard case .queued(let queuedB) = b, case .queued(let queuedC) = c else {
            Issue.record("offline writes are queued")
            return
        }
        let offline = try await rig.offline.read(Self.notes)
        #expect(try Self.ids(offline) == ["a", "b", "c"] && offline.isExact)
        #expect(offline.body?.contains(#"{"id":"b","title":"B","done":false}"#) == true, "the table's default")
        #expect(offline.pendingRows.map(\.writeIDs) == [[queuedB.id], [queuedC.id]] && offline.hasPendingWrites)
        #expect(offline.response?.body == #"[{"id":"a","title":"A","done":false}]"#, "the cached answer is untouched")

        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 201), DataResponse(status: 403, body: #"{"message":"no"}"#))
        #expect(try await rig.offline.flush() == 1)
        let afterSync = try await rig.offline.read(Self.notes, policy: .cacheOnly)
        #expect(try Self.ids(afterSync) == ["a", "b"], "the refused write left the answer, the synced one stays")
        #expect(!afterSync.hasPendingWrites && afterSync.isExact)
        // The write list changed under the session (one synced, one moved to the rejected list):
        // its answer is still the fresh evaluation's.
        let cached = try await rig.offline.readThroughCache(Self.notes, policy: .cacheOnly, maxAge: nil)
        #expect(try await rig.offline.overlaid(Self.notes, on: cached, fresh: true) == afterSync)
        #expect(rig.offline.sessions.paths.rebuilt > 0, "the session applied the writes again")
        #expect(try await rig.offline.rejectedWrites().map(\.write.id) == [queuedC.id])

        // The refetch after the sync has the synced row: the overlay no longer adds it.
        rig.transport.answer(Self.rows(#"[{"id":"a","title":"A","done":false},{"id":"b","title":"B","done":false}]"#))
        let fresh = try await rig.offline.read(Self.notes)
        #expect(fresh.source == .network && fresh.body == fresh.response?.body && fresh.isExact)
    }

    @Test(arguments: SyncEngine.all)
    func memoryPressureShedsTheCacheAndTheKeptAnswersAndReadsStillShowTheWrites(engine: SyncEngine) async throws {
        let pressure = ManualMemoryPressureSource()
        let rig = try await Rig(engine) {
            $0.overlay = Self.overlay
            $0.memoryPressure = pressure
        }
        #expect(pressure.observerCount == 2, "the controller and its cache")
        rig.transport.answer(Self.rows(#"[{"id":"a","title":"A","done":false}]"#))
        _ = try await rig.offline.read(Self.notes)
        rig.transport.online = false
        _ = try await rig.offline.write(Self.insert("b"))
        let before = try await rig.offline.read(Self.notes)
        #expect(rig.offline.cache.memoryResponseCount == 1)
        #expect(rig.offline.sessions.count == 1 && rig.offline.sessions.bytes > 0, "the answer parsed, kept")

        pressure.send(.critical)

        #expect(rig.offline.cache.memoryResponseCount == 0)
        #expect(rig.offline.sessions.count == 0 && rig.offline.sessions.bytes == 0)
        let after = try await rig.offline.read(Self.notes)
        #expect(try after.source == .store && after.body == before.body && Self.ids(after) == ["a", "b"])
        #expect(rig.offline.sessions.paths.made == 2, "parsed again after the shed")
    }

    /// A read with a `Range` header is a read of its own (issue 52): its cached page is not the
    /// plain read's answer, and neither is its overlay session; the page is one of the table's
    /// answers the plain read is evaluated over.
    @Test func aReadWithARangeHeaderLendsNeitherItsAnswerNorItsSessionToThePlainRead() async throws {
        let rig = try await Self.rig(.memory)
        var ranged = Self.notes
        ranged.headers["Range"] = "0-9"
        rig.transport.answer(Self.rows(#"[{"id":"a","title":"A","done":false}]"#))
        _ = try await rig.offline.read(ranged)
        rig.transport.online = false
        _ = try await rig.offline.write(Self.insert("b"))
        // Issue 61: the overlay evaluates a Range as its page (rows 0–9 of the rows in order).
        let page = try await rig.offline.read(ranged, policy: .cacheOnly)
        #expect(try page.isExact && Self.ids(page) == ["a", "b"], "\(page.inexactReasons)")
        _ = try await rig.offline.write(Self.insert("c"))
        let plain = try await rig.offline.read(Self.notes, policy: .cacheOnly)
        #expect(plain.response == nil, "the page is not the plain read's answer")
        // The page held fewer rows than it asked for: every row of the table, which the plain
        // read, with nothing cached of its own, is evaluated over.
        #expect(try Self.ids(plain) == ["a", "b", "c"], "\(plain.inexactReasons)")
        let server = try await rig.offline.readThroughCache(Self.notes, policy: .cacheOnly, maxAge: nil)
        #expect(try await rig.offline.overlaid(Self.notes, on: server, fresh: true) == plain)
    }

    @Test(arguments: SyncEngine.all)
    func aMemoryWarningShedsOverlaySessionsToAQuarterKeepingTheOneAScreenShows(engine: SyncEngine) async throws {
        let pressure = ManualMemoryPressureSource()
        let rig = try await Rig(engine) {
            $0.overlay = Self.overlay
            $0.memoryPressure = pressure
            $0.overlaySessionLimits = (count: 4, bytes: .max)
        }
        let pages = (1...3).map { PostgREST.select("notes", columns: "id,title,done", order: "id", limit: 10 * $0) }
        for read in [Self.notes] + pages {
            rig.transport.answer(Self.rows(#"[{"id":"a","title":"A","done":false}]"#))
            _ = try await rig.offline.read(read)
        }
        rig.transport.online = false
        _ = try await rig.offline.write(Self.insert("b"))
        // The screen's query first: it is the least recently used session when the warning comes.
        var screen = rig.offline.observe(Self.notes, policy: .cacheOnly).makeAsyncIterator()
        let shown = try await screen.next()
        var before: [LocalRead] = []
        for read in pages { before.append(try await rig.offline.read(read, policy: .cacheOnly)) }
        #expect(rig.offline.sessions.count == 4)

        pressure.send(.warning)

        let notesKey = ReadIdentity(Self.notes, api: PostgREST()).cacheKey
        #expect(rig.offline.sessions.queries == [notesKey], "a quarter of 4 is 1: the one a live query shows")
        for (read, answer) in zip(pages, before) {
            #expect(try await rig.offline.read(read, policy: .cacheOnly) == answer, "answers do not change")
        }
        #expect(try await rig.offline.read(Self.notes, policy: .cacheOnly).body == shown?.body)
        #expect(rig.offline.sessions.paths.made == 4 + 3, "the three shed sessions parsed again")
    }

    /// A read no write applies to (the pending write is another table's) is kept like an
    /// overlaid answer: repeated at the same change version, it reads no write. A write to its
    /// table moves the version, and the read shows the write.
    @Test func aReadNoWriteAppliesToIsKeptUntilAChange() async throws {
        let rig = try await Self.rig(.memory)
        rig.transport.answer(Self.rows(#"[{"id":"a","title":"A","done":false}]"#))
        _ = try await rig.offline.read(Self.notes)
        rig.transport.online = false
        _ = try await rig.offline.write(
            PostgREST.insert(into: "lists", json: #"{"id":"l","name":"L"}"#, returning: false))
        let first = try await rig.offline.read(Self.notes)
        #expect(try Self.ids(first) == ["a"] && !first.hasPendingWrites)
        let kept = rig.offline.sessions.kept(
            Self.notes, key: ReadIdentity(Self.notes, api: PostgREST()).cacheKey, withRelated: false,
            cachedBody: first.response?.body, at: rig.offline.signals.version)
        guard case .nothing = kept else {
            Issue.record("kept: \(String(describing: kept))")
            return
        }
        _ = try await rig.offline.write(Self.insert("b"))
        let second = try await rig.offline.read(Self.notes)
        #expect(try Self.ids(second) == ["a", "b"] && second.hasPendingWrites)
    }

    @Test(arguments: SyncEngine.all)
    func withNothingCachedPendingInsertsAnswerAnOfflineRead(engine: SyncEngine) async throws {
        let rig = try await Self.rig(engine)
        rig.transport.online = false
        await #expect(throws: SyncTransportError.self) { try await rig.offline.read(Self.notes) }
        _ = try await rig.offline.write(Self.insert("n2"))
        _ = try await rig.offline.write(Self.insert("n1"))
        let read = try await rig.offline.read(Self.notes)
        #expect(try Self.ids(read) == ["n1", "n2"] && read.source == .none && !read.isExact)
    }

    @Test(arguments: SyncEngine.all)
    func pendingWritesStillOverlayAfterAReopen(engine: SyncEngine) async throws {
        let rig = try await Self.rig(engine)
        rig.transport.answer(Self.rows(#"[{"id":"a","title":"A","done":false}]"#))
        _ = try await rig.offline.read(Self.notes)
        rig.transport.online = false
        _ = try await rig.offline.write(
            PostgREST.update("notes", where: [.eq("id", "a")], json: #"{"done":true}"#))
        await rig.offline.close()
        var configuration = SovariaOffline.Configuration(api: PostgREST())
        configuration.memoryPressure = nil  // the machine's own pressure must not shed caches mid-test
        configuration.overlay = Self.overlay
        configuration.timer = ManualTimer()
        let reopened = try await SovariaOffline(
            store: rig.store, transport: rig.transport, configuration: configuration)
        let read = try await reopened.read(Self.notes)
        #expect(read.body == #"[{"id":"a","title":"A","done":true}]"# && read.hasPendingWrites)
        await reopened.close()
    }

    @Test(.timeLimit(.minutes(10)), arguments: SyncEngine.all)
    func aLiveQueryAnswersAfterEachChangeAndEndsOnClose(engine: SyncEngine) async throws {
        let rig = try await Self.rig(engine)
        rig.transport.answer(Self.rows(#"[{"id":"a","title":"A","done":false}]"#))
        var answers = rig.offline.observe(Self.notes).makeAsyncIterator()
        let first = try await answers.next()
        #expect(first?.body == nil && first?.source == CacheRead.Source.none, "nothing cached yet")
        let fetched = try await answers.next()
        #expect(fetched?.body == #"[{"id":"a","title":"A","done":false}]"#, "then the network, by the policy")

        rig.transport.online = false
        _ = try await rig.offline.write(Self.insert("b"))
        #expect(try Self.ids(try #require(try await answers.next())) == ["a", "b"], "a local write")

        // A burst while the screen is busy is one answer.
        for index in 0..<100 { _ = try await rig.offline.write(Self.insert("c\(index)")) }
        let burst = try #require(try await answers.next())
        #expect(try Self.ids(burst).count == 102 && burst.pendingRows.count == 101)

        rig.transport.online = true
        #expect(try await rig.offline.flush() == 101)
        let synced = try #require(try await answers.next())
        #expect(try Self.ids(synced).count == 102 && !synced.hasPendingWrites, "a sync")

        rig.transport.answer(Self.rows(#"[{"id":"z","title":"Z","done":true}]"#))
        _ = try await rig.offline.read(Self.notes, maxAge: .zero)
        let refreshed = try #require(try await answers.next())
        #expect(try Self.ids(refreshed) == ["z"], "a refresh (fetched after the sync: no overlay)")

        // Its list is pinned while observed: eviction keeps it.
        try await rig.offline.cache.evict(downToResponses: 0)
        #expect(
            try await rig.offline.cache.cachedResponse(for: ReadIdentity(Self.notes, api: PostgREST()).cacheKey) != nil)

        try await rig.offline.clear()
        let cleared = try #require(try await answers.next())
        #expect(cleared.body == nil, "clear()")

        await rig.offline.close()
        #expect(try await answers.next() == nil, "ends on close")
    }

    @Test func aLiveQueryReleasesItsListWhenItsTaskEnds() async throws {
        let rig = try await Self.rig(SyncEngine.all[0])
        rig.transport.answer(Self.rows(#"[{"id":"a","title":"A","done":false}]"#))
        _ = try await rig.offline.read(Self.notes)
        let (started, didStart) = AsyncStream<Void>.makeStream()
        let observer = Task {
            for try await _ in rig.offline.observe(Self.notes, policy: .cacheOnly) { didStart.yield() }
        }
        for await _ in started { break }
        try await rig.offline.cache.evict(downToResponses: 0)
        #expect(try await rig.offline.cache.responseCount == 1, "pinned while observed")
        observer.cancel()
        _ = await observer.result
        try await rig.offline.cache.evict(downToResponses: 0)
        #expect(try await rig.offline.cache.responseCount == 0, "released when the task ended")
    }

    @Test func theStatusChangesInOrder() async throws {
        let rig = try await Self.rig(SyncEngine.all[0])
        var updates = rig.offline.statusUpdates().makeAsyncIterator()
        let initial = try #require(await updates.next())
        #expect(initial.isOnline && initial.pendingCount == 0 && !initial.isFlushing)
        rig.transport.online = false
        _ = try await rig.offline.write(Self.insert("a"))
        var seen = try #require(await updates.next())
        if seen.isOnline { seen = try #require(await updates.next()) }
        #expect(!seen.isOnline && seen.pendingCount == 1)
        rig.transport.online = true
        rig.transport.answer(DataResponse(status: 503, headers: ["Retry-After": "30"]))
        #expect(try await rig.offline.flush() == 0)
        var last = seen
        while last.nextRetryAt == nil || last.isFlushing || !last.isOnline {
            last = try #require(await updates.next())
        }
        #expect(last.pendingCount == 1 && last.lastError != nil && last.isOnline)
        #expect(last.nextRetryAt == rig.clock.read().addingTimeInterval(30))
        rig.clock.advance(seconds: 31)
        #expect(try await rig.offline.flush() == 1)
        while last.pendingCount > 0 || last.isFlushing { last = try #require(await updates.next()) }
        #expect(last.lastSyncedAt == rig.clock.read() && last.lastError == nil && last.nextRetryAt == nil)
        await rig.offline.close()
        while await updates.next() != nil {}
    }

    @MainActor @Test func theObservableModelTellsAViewWhenTheStatusChanges() async throws {
        let rig = try await Self.rig(SyncEngine.all[0])
        let model = SyncStatusModel(following: rig.offline)
        #expect(model.status.pendingCount == 0)
        let (changed, didChange) = AsyncStream<Void>.makeStream()
        func track() {
            withObservationTracking {
                _ = model.status
            } onChange: {
                didChange.yield()
            }
        }
        track()
        rig.transport.online = false
        _ = try await rig.offline.write(Self.insert("a"))
        var iterator = changed.makeAsyncIterator()
        while model.status.pendingCount != 1 {
            await iterator.next()
            track()
        }
        #expect(model.status.pendingCount == 1 && !model.status.isOnline)
    }

    @Test func codableRequestsAndAnswers() async throws {
        struct Note: Codable, Sendable, Equatable {
            var id: String
            var title: String
            var due: Date
        }
        let due = Date(timeIntervalSince1970: 1_800_000_000.25)
        let insert = try PostgREST.insert(into: "notes", value: Note(id: "a", title: "A", due: due))
        #expect(insert.body?.contains(#""due":"2027-01-15T08:00:00.250Z""#) == true)
        let rig = try await Self.rig(SyncEngine.all[0])
        rig.transport.answer(
            Self.rows(#"[{"id":"a","title":"A","due":"2027-01-15T08:00:00.250123+00:00"}]"#))
        let read = try await rig.offline.read(
            PostgREST.select("notes", columns: "id,title,due", order: "id"), as: [Note].self)
        let note = try #require(read.value?.first)
        #expect(note.id == "a" && read.read.source == .network)
        #expect(abs(note.due.timeIntervalSince1970 - 1_800_000_000.250123) < 1e-5, "PostgreSQL's microseconds")
        #expect(JSONCoding.parseDate("2027-01-15T08:00:00.25") == Date(timeIntervalSince1970: 1_800_000_000.25))
        #expect(JSONCoding.parseDate("2027-01-15T08:00:00Z") == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(JSONCoding.parseDate("yesterday") == nil)
        let update = try PostgREST.update("notes", where: [.eq("id", "a")], set: ["title": "B"])
        #expect(update.method == "PATCH" && update.body == #"{"title":"B"}"#)
    }
}
