import Foundation
import Sovaria
import SovariaPlumbing

/// A query's cached result and what is known about it.
public struct CachedResponse: Sendable, Hashable {
    /// The query's identity (for example a PostgREST URL with its filters), of any length.
    public let query: String
    /// The response body, e.g. the JSON text the server sent. Its UTF-8 length is what the
    /// cache's bound counts.
    public let body: String
    /// When the server produced it (its `Date` header): eviction removes the oldest first.
    public let serverTime: Date
    /// When this device received it, by the cache's clock: what `maxAge` is measured from.
    public let fetchedAt: Date
    /// The server's version marker, sent back as `If-None-Match` to revalidate.
    public let etag: String?
    /// Whether a local write has made it out of date; it keeps its place in eviction order.
    public let isStale: Bool
    /// The change-feed position it is current to: it holds every change of its table at or
    /// before it (the server said so with the read, or the feed brought it there). `nil`: not
    /// known. A feed page applies to it only the changes after it.
    public let position: Int64?
    /// The response headers kept with the body, those a reader needs (for PostgREST,
    /// `Content-Range`): the server's, as it sent them. An answer whose body was brought up to
    /// date without a fetch keeps none.
    public let headers: [String: String]

    /// Creates a response.
    public init(
        query: String, body: String, serverTime: Date, fetchedAt: Date, etag: String? = nil, isStale: Bool = false,
        position: Int64? = nil, headers: [String: String] = [:]
    ) {
        self.headers = headers
        self.query = query
        self.body = body
        self.serverTime = serverTime
        self.fetchedAt = fetchedAt
        self.etag = etag
        self.isStale = isStale
        self.position = position
    }

    /// The UTF-8 length of ``body``, what the bound counts.
    public var sizeBytes: Int { body.utf8.count }

    /// Whether it is older than `maxAge` at `now`, or marked stale.
    public func needsRefresh(maxAge: Duration?, now: Date) -> Bool {
        if isStale { return true }
        guard let maxAge else { return false }
        return now.timeIntervalSince(fetchedAt) > maxAge.timeInterval
    }

    func with(stale: Bool) -> CachedResponse {
        CachedResponse(
            query: query, body: body, serverTime: serverTime, fetchedAt: fetchedAt, etag: etag, isStale: stale,
            position: position, headers: headers)
    }
}
