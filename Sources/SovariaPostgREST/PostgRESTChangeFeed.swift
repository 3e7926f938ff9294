import SovariaPlumbing
import SovariaQueue
import SovariaSync

/// The change feed `ChangeFeed.sql` keeps in PostgreSQL, read through PostgREST with a plain
/// `GET`: `<prefix>sovaria_feed?select=p:position,k:key,o:op,r:row&table=eq.<table>&position=gt.<N>&order=position&limit=500`
/// (the columns renamed to one letter: the envelope of a change costs about 53 bytes beside its row).
///
/// The view serves a change only once no transaction that could still log an earlier one runs,
/// so positions are in commit order and a checkpoint never skips a change; row-level security
/// shows each user only the changes of rows they may read (a row leaving their sight is a
/// delete for them). A `trimmed` row, met when the checkpoint is older than the log keeps,
/// makes the page a must-refetch. When the server answers `Preference-Applied: wait=…` it
/// holds an empty answer until a change comes (`Prefer: wait=S`, a long poll): Sovaria's test
/// server does; PostgREST answers at once, and the controller polls. A read that does not wait
/// asks `Prefer: count=exact`, and the total in `Content-Range` says how far behind the reader
/// is (`ChangeFeedStatus.behindBy`): a count of the changes after the checkpoint, on the
/// log's index.
///
/// ```swift
/// var configuration = SovariaOffline.Configuration(api: PostgREST())
/// configuration.overlay = PostgRESTOverlay(tables: ["notes": .init(primaryKey: "id")], textOrder: .bytes)
/// configuration.changeFeed = PostgRESTChangeFeed(transport: transport)
/// configuration.followedTables = ["notes"]
/// ```
public struct PostgRESTChangeFeed: ChangeFeed {
    /// The network the feed is read through (the controller's own transport, for its tokens).
    public let transport: any SyncTransport
    /// The API's path prefix and dialect.
    public var api: PostgREST
    /// The view the feed is read from. Default: `sovaria_feed`.
    public var view: String
    /// The most changes a page holds. Default: 500.
    public var pageSize: Int

    /// The feed read through `transport`. A change names its row by the key `ChangeFeed.sql`
    /// publishes; the overlay finds the row by its table's key column
    /// (`PostgRESTOverlay.Table.primaryKey`), so a key is stated once on the device.
    public init(
        transport: any SyncTransport, api: PostgREST = PostgREST(), view: String = "sovaria_feed",
        pageSize: Int = 500
    ) {
        self.transport = transport
        self.api = api
        self.view = view
        self.pageSize = max(1, pageSize)
    }

    /// The request of a page of `table`'s changes after `position`, waiting up to `wait`.
    public func request(of table: String, after position: Int64?, wait: Duration?) -> DataRequest {
        var filters: [PostgREST.Filter] = [.eq("table", table)]
        if let position { filters.append(.gt("position", String(position))) }
        // Not the `table` column: the filter names it. The others renamed to one letter
        // (PostgREST's `alias:column`): a change's envelope is its row's cost beside the row.
        var request = api.select(
            view, columns: "p:position,k:key,o:op,r:row", where: filters, order: "position", limit: pageSize)
        // A wait is asked for once caught up; until then, the count of the changes still waiting
        // (PostgREST's `Content-Range: 0-499/N`), for the status's `behindBy`.
        if let wait {
            request.setHeader("Prefer", "wait=\(max(0, Int(wait.components.seconds)))")
        } else {
            request.setHeader("Prefer", "count=exact")
        }
        return request
    }

    /// One page of `table`'s changes after `position`.
    ///
    /// - Throws: `ChangeFeedError` with `unavailable` for 408, 429 and 5xx (try later),
    ///   `unexpectedStatus` for any other answer that is not 2xx, `malformedChange` for a body
    ///   that is not an array of changes; the transport's errors.
    public func changes(of table: String, after position: Int64?, wait: Duration?) async throws -> ChangeFeedPage {
        let response = try await transport.send(request(of: table, after: position, wait: wait))
        guard response.isSuccess else { throw Self.statusError(response, table: table) }
        let offersWaiting = response.header("Preference-Applied")?.contains("wait=") == true
        // Each change's row is kept as the server wrote it: validated, not parsed into values and
        // written back (the overlay parses it where it applies it).
        let page = try FeedPageReader.read(response.body, table: table)
        // A full page has more after it, unless the count says none is left: the reader then
        // waits at once instead of asking for an empty page.
        let remaining = Self.total(response.header("Content-Range")).map { $0 - page.count }
        return ChangeFeedPage(
            changes: page.changes, position: page.last, mustRefetch: page.mustRefetch,
            hasMore: page.count >= pageSize && remaining != 0, offersWaiting: offersWaiting, remaining: remaining)
    }

    /// The total of a `Content-Range: 0-499/N` (or `*/N`) header; `nil` without one or for `/*`.
    static func total(_ contentRange: String?) -> Int? {
        guard let contentRange, let slash = contentRange.lastIndex(of: "/") else { return nil }
        return Int(contentRange[contentRange.index(after: slash)...]).map { max(0, $0) }
    }

    /// The position of `table`'s latest change the view serves: `GET
    /// <prefix>sovaria_feed?select=position&table=eq.<table>&order=position.desc&limit=1`.
    ///
    /// - Throws: as ``changes(of:after:wait:)``.
    public func latestPosition(of table: String) async throws -> Int64? {
        let request = api.select(
            view, columns: "position", where: [.eq("table", table)], order: "position.desc", limit: 1)
        let response = try await transport.send(request)
        guard response.isSuccess else { throw Self.statusError(response, table: table) }
        guard case .array(let items) = try? JSONParser.parse(response.body) else {
            throw ChangeFeedError(
                .malformedChange, table: table, "the feed's answer is not a JSON array: \(response.body.prefix(200))")
        }
        guard let item = items.first else { return nil }
        guard case .object(let object) = item, case .number(let number)? = object["position"],
            let position = Int64(number)
        else {
            throw ChangeFeedError(
                .malformedChange, table: table, "a latest position that is not an integer: \(item.text)")
        }
        return position
    }

    /// The error of an answer that is not 2xx: `unavailable` when trying later may succeed
    /// (408, 429, 5xx, as the flush reads them), `unexpectedStatus` otherwise.
    static func statusError(_ response: DataResponse, table: String) -> ChangeFeedError {
        ChangeFeedError(
            response.asksToTryLater ? .unavailable : .unexpectedStatus, table: table,
            "the feed answered \(response.status): \(response.body.prefix(500))", response: response)
    }

    /// The position a read is current to: the `Sovaria-Position` header `ChangeFeed.sql`'s
    /// `sovaria_pre_request()` adds to every answer when PostgREST runs it (`db-pre-request`).
    public func position(of response: DataResponse) -> Int64? {
        Self.integer(response.header("Sovaria-Position"))
    }

    /// The position of a write's change: the `Sovaria-Write-Position` header `ChangeFeed.sql`'s
    /// trigger sets (through `response.headers`, which PostgREST sends).
    public func position(ofWrite response: DataResponse) -> Int64? {
        Self.integer(response.header("Sovaria-Write-Position"))
    }

    private static func integer(_ header: String?) -> Int64? {
        header.flatMap { Int64(String($0.filter { $0 != " " && $0 != "\t" })) }
    }
}
