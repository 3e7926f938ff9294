import SovariaCache
import SovariaQueue

/// The answers of a live query, from ``SovariaOffline/observe(_:policy:maxAge:)``: the current
/// one first, then one after each change that alters it.
///
/// - Important: Iterate it from one task; each iteration is a live reader of its own.
public struct LiveQuery: AsyncSequence, Sendable {
    /// A local-first answer.
    public typealias Element = LocalRead

    let offline: SovariaOffline
    let request: DataRequest
    let policy: ReadPolicy
    let maxAge: Duration?

    /// Starts following: from now on, changes to the query's table are seen.
    public func makeAsyncIterator() -> Iterator { Iterator(follower: LiveQueryFollower(self)) }

    /// Waits for the next answer.
    public struct Iterator: AsyncIteratorProtocol {
        let follower: LiveQueryFollower

        /// The next answer, or `nil` once the iterating task is cancelled or the controller closed.
        public mutating func next() async throws -> LocalRead? { try await follower.next(isolation: nil) }

        /// The next answer, on the caller's actor.
        public mutating func next(isolation actor: isolated (any Actor)?) async throws(any Error) -> LocalRead? {
            try await follower.next(isolation: actor)
        }
    }
}

/// One iteration of a live query: its change signals, its live reader, its last answer.
final class LiveQueryFollower {
    private let query: LiveQuery
    private var changes: AsyncStream<Void>.Iterator
    private let reader: LiveReader
    /// The query's read identity, built once for every answer it reads.
    private let identity: ReadIdentity
    private var last: LocalRead?
    private var refresh: Task<Void, Never>?

    init(_ query: LiveQuery) {
        self.query = query
        identity = ReadIdentity(query.request, api: query.offline.api)
        changes = query.offline.signals.follow(table: identity.table ?? "").makeAsyncIterator()
        reader = query.offline.cache.startReading(identity.cacheKey)
    }

    deinit {
        refresh?.cancel()
        query.offline.cache.stopReading(reader)
    }

    func next(isolation actor: isolated (any Actor)?) async throws -> LocalRead? {
        let offline = query.offline
        guard let last else {
            try offline.checkOpen()
            let current = try await offline.currentAnswer(query.request, identity: identity)
            self.last = current
            if query.policy != .cacheOnly {
                // Its answer reaches a later `next()` as a change of the table.
                let (request, identity, policy, maxAge) = (query.request, identity, query.policy, query.maxAge)
                refresh = Task {
                    _ = try? await offline.readThroughCache(request, identity: identity, policy: policy, maxAge: maxAge)
                }
            }
            return current
        }
        while await changes.next(isolation: actor) != nil {
            guard !Task.isCancelled, (try? offline.checkOpen()) != nil else { return nil }
            var answer = try await offline.currentAnswer(query.request, identity: identity)
            // The answer is read from the cache: a server answer that arrived since the last one
            // (the query's own fetch, another read's, the change feed's) came from the network;
            // one that did not came from where the last answer's did.
            if let response = answer.response {
                answer.source = Self.arrived(response, after: last.response) ? .network : last.source
            }
            if answer != last {
                self.last = answer
                return answer
            }
        }
        return nil
    }

    /// Whether `response` is another server answer than `earlier` (a stale mark alone is not).
    private static func arrived(_ response: CachedResponse, after earlier: CachedResponse?) -> Bool {
        guard let earlier else { return true }
        return response.body != earlier.body || response.fetchedAt != earlier.fetchedAt
            || response.serverTime != earlier.serverTime || response.etag != earlier.etag
    }
}
