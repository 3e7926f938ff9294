import Foundation
import Sovaria
import SovariaQueue
import Synchronization
import Testing

@testable import SovariaPostgREST
@testable import SovariaSync

/// A pull that reads on past a full page (``SovariaOffline/Configuration/feedPullBytes``): the
/// join of pages as a plain value, and the pull's failure paths (a later page offline, a clear
/// between pages, the account each page is asked for, a full page with nothing after it).
@Suite struct ChangeFeedPullTests {
    static func change(_ position: Int64, _ key: String = "n1") -> RowChange {
        RowChange(position: position, table: "notes", key: key, operation: .upsert(row: #"{"id":"\#(key)"}"#))
    }

    @Test func joiningKeepsTheLaterPagesNewsAndTheFirstPagesOfferToWait() {
        let first = ChangeFeedPage(
            changes: [Self.change(1), Self.change(2)], position: nil, hasMore: true, offersWaiting: true, remaining: 9)
        #expect(first.resumePosition == 2, "a page that names no position resumes after its last change")
        let second = first.joined(
            with: ChangeFeedPage(changes: [Self.change(3)], position: nil, hasMore: false, remaining: nil))
        #expect(second.changes.map(\.position) == [1, 2, 3])
        #expect(second.position == 3 && !second.hasMore && second.remaining == nil && second.offersWaiting)
        let marker = first.joined(with: ChangeFeedPage(changes: [], position: 7, hasMore: false, remaining: 0))
        #expect(marker.position == 7 && marker.changes.count == 2 && marker.remaining == 0)
        let empty = first.joined(with: ChangeFeedPage(changes: [], position: nil))
        #expect(empty.position == 2 && !empty.hasMore, "an empty page moves nothing but what it says")
        let trimmed = first.joined(with: ChangeFeedPage(changes: [], position: 40, mustRefetch: true))
        #expect(trimmed.mustRefetch && trimmed.position == 40)
    }

    @Test func aPullReadsOnOnlyWhileAFullPageLeavesMoreUnderTheLimit() {
        let full = ChangeFeedPage(changes: [Self.change(1)], position: 1, hasMore: true)
        #expect(full.readsOn(holding: 10, limit: 11))
        #expect(!full.readsOn(holding: 11, limit: 11), "at the limit")
        #expect(!full.readsOn(holding: 0, limit: 0), "0: one page per pull")
        var counted = full
        counted.remaining = 0
        #expect(!counted.readsOn(holding: 0, limit: 100), "the feed said nothing is left")
        counted.remaining = 3
        #expect(counted.readsOn(holding: 0, limit: 100))
        #expect(!ChangeFeedPage(changes: [Self.change(1)], position: 1).readsOn(holding: 0, limit: 100), "not full")
        #expect(
            !ChangeFeedPage(changes: [], position: 9, mustRefetch: true, hasMore: true).readsOn(holding: 0, limit: 100))
        #expect(!ChangeFeedPage(changes: [], position: nil, hasMore: true).readsOn(holding: 0, limit: 100))
    }

    /// A change that names its row both ways (renamed as the request asks, and by the column's
    /// own name) is read with the renamed one, whichever comes first, as every other field is.
    @Test func theRenamedRowWinsWhicheverComesFirst() async throws {
        let both = [
            #"{"p":1,"k":"n1","o":"upsert","row":{"id":"n1","t":"long"},"r":{"id":"n1","t":"short"}}"#,
            #"{"p":2,"k":"n2","o":"upsert","r":{"id":"n2","t":"short"},"row":{"id":"n2","t":"long"}}"#,
            #"{"p":3,"k":"n3","o":"upsert","row":{"id":"n3","t":"own"}}"#,
        ]
        let answer = DataResponse(status: 200, body: "[" + both.joined(separator: ",") + "]")
        let page = try await PostgRESTChangeFeed(transport: PagedFeed([.success(answer)]))
            .changes(of: "notes", after: nil, wait: nil)
        #expect(
            page.changes.map(\.operation) == [
                .upsert(row: #"{"id":"n1","t":"short"}"#), .upsert(row: #"{"id":"n2","t":"short"}"#),
                .upsert(row: #"{"id":"n3","t":"own"}"#),
            ])
    }

    /// A controller with the account `alice` whose feed (pages of 2) is `feed`.
    static func device(_ feed: PagedFeed) async throws -> Rig {
        try await Rig(.memory) { configuration in
            configuration.account = try? AccountID("alice")
            configuration.overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
            configuration.changeFeed = PostgRESTChangeFeed(transport: feed, pageSize: 2)
            configuration.feedFollowsAtOpen = false
        }
    }

    static func page(_ positions: Int...) -> Result<DataResponse, SyncTransportError> {
        let rows = positions.map { #"{"p":\#($0),"k":"n\#($0)","o":"upsert","r":{"id":"n\#($0)"}}"# }
        return .success(DataResponse(status: 200, body: "[" + rows.joined(separator: ",") + "]"))
    }

    @Test func everyPageOfAPullIsAskedForItsAccount() async throws {
        let feed = PagedFeed([Self.page(1, 2), Self.page(3, 4), Self.page(5)])
        let rig = try await Self.device(feed)
        let pulled = try await rig.offline.pullChanges(of: "notes")
        #expect(pulled.changes == 5 && pulled.position == 5 && !pulled.hasMore, "\(pulled)")
        #expect(feed.accounts == Array(repeating: try AccountID("alice"), count: 3))
    }

    /// A later page the device cannot reach ends the pull with the pages before it; the next
    /// pull meets the network's error, and the controller is offline.
    @Test func aLaterPageOfflineEndsThePullAndTheNextPullMeetsIt() async throws {
        let offline = SyncTransportError.offline("no network")
        let feed = PagedFeed([Self.page(1, 2), .failure(offline), .failure(offline)])
        let rig = try await Self.device(feed)
        let pulled = try await rig.offline.pullChanges(of: "notes")
        #expect(pulled.changes == 2 && pulled.position == 2 && pulled.hasMore, "\(pulled)")
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 2)
        let error = await #expect(throws: SyncTransportError.self) { try await rig.offline.pullChanges(of: "notes") }
        #expect(error?.code == .offline)
        #expect(!rig.offline.online)
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == 2)
    }

    /// A full page with nothing after it: a feed that does not count reads the empty page and is
    /// caught up; one that says nothing is left is not asked again.
    @Test func aFullPageWithNothingAfterItIsCaughtUp() async throws {
        let uncounted = PagedFeed([Self.page(1, 2), Self.page()])
        let rig = try await Self.device(uncounted)
        let pulled = try await rig.offline.pullChanges(of: "notes")
        #expect(pulled.changes == 2 && !pulled.hasMore && uncounted.accounts.count == 2, "\(pulled)")
        #expect(rig.offline.status.changeFeeds["notes"]?.isCaughtUp == true)

        var counted = Self.page(1, 2)
        if case .success(var response) = counted {
            response.headers["Content-Range"] = "0-1/2"
            counted = .success(response)
        }
        let told = PagedFeed([counted, Self.page(3)])
        let other = try await Self.device(told)
        let once = try await other.offline.pullChanges(of: "notes")
        #expect(once.changes == 2 && told.accounts.count == 1, "the feed said 0 left: \(once)")
        #expect(other.offline.status.changeFeeds["notes"]?.behindBy == 0)
    }

    /// A clear (a sign-out) forgets the answers the overlay keeps parsed for pages and sessions,
    /// with the answers themselves.
    @Test func aClearForgetsTheParsesTheOverlayKeeps() async throws {
        let rig = try await Self.device(PagedFeed([Self.page(1)]))
        rig.transport.answer(DataResponse(status: 200, body: #"[{"id":"n0"}]"#))
        _ = try await rig.offline.read(PostgREST.select("notes", columns: "id", order: "id"), policy: .networkOnly)
        #expect(try await rig.offline.pullChanges(of: "notes").updatedAnswers == 1)
        let overlay = try #require(rig.offline.configuration.overlay as? PostgRESTOverlay)
        #expect(overlay.parsedAnswers.count == 1, "the page's parse, kept for the next")
        try await rig.offline.clear()
        #expect(overlay.parsedAnswers.count == 0)
    }

    /// A clear while the pull waits for its second page: what the pull read is not for what the
    /// store holds now, so nothing of it is applied, and no third page is asked for.
    @Test func aClearBetweenPagesLeavesNothingOfThePull() async throws {
        let feed = PagedFeed([Self.page(1, 2), Self.page(3, 4), Self.page(5)], holding: 1)
        let rig = try await Self.device(feed)
        let pull = Task { try await rig.offline.pullChanges(of: "notes") }
        await feed.waitUntilHeld()
        try await rig.offline.clear()
        feed.release()
        let pulled = try await pull.value
        #expect(pulled.changes == 0 && pulled.position == nil, "\(pulled)")
        #expect(try await rig.offline.feedCheckpoint(of: "notes") == nil)
        #expect(feed.accounts.count == 2, "no page after the clear")
    }
}

/// A feed server answering from a list (then empty pages), recording the account each request
/// was sent for (``SovariaOffline/sendingAccount``), and holding the request at `holding` (its
/// index) until ``release()``.
final class PagedFeed: SyncTransport {
    private let answers: Mutex<[Result<DataResponse, SyncTransportError>]>
    private let sentFor = Mutex<[AccountID?]>([])
    private let holding: Int?
    private let held = AsyncStream.makeStream(of: Void.self)
    private let released = AsyncStream.makeStream(of: Void.self)

    init(_ answers: [Result<DataResponse, SyncTransportError>], holding: Int? = nil) {
        self.answers = Mutex(answers)
        self.holding = holding
    }

    /// The account of each request, in order.
    var accounts: [AccountID?] { sentFor.withLock { $0 } }

    /// Returns once the held request has come.
    func waitUntilHeld() async {
        for await _ in held.stream { return }
    }

    /// Lets the held request go on.
    func release() { released.continuation.yield() }

    func send(_ request: DataRequest) async throws -> DataResponse {
        let index = sentFor.withLock { sent in
            sent.append(SovariaOffline.sendingAccount)
            return sent.count - 1
        }
        if index == holding {
            held.continuation.yield()
            for await _ in released.stream { break }
        }
        let answer = answers.withLock {
            $0.isEmpty ? .success(DataResponse(status: 200, body: "[]")) : $0.removeFirst()
        }
        return try answer.get()
    }
}
