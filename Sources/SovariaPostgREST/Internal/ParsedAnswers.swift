import SovariaPlumbing
import SovariaQueue
import Synchronization

/// The cached answers a change feed's page or a live query's session parsed, kept so the next
/// page parses only the answers that changed since (and a session or a page does not parse again
/// a body the other just parsed): each read's
/// ``OverlayCachedAnswer`` with the body it was parsed from, and each table's ``TableReach``
/// (its answers indexed by the rows they hold and their `eq` filters, by version). A page of one
/// change among 1,000 cached answers then costs a version comparison per answer, not a parse
/// or a lookup of its body.
///
/// It also keeps each read's parsed query (``query(of:)``), which every page and every
/// local-first answer of the read needs.
///
/// Bounded by the bytes of the bodies it holds: past ``byteLimit`` it is emptied (the next
/// page parses again); the queries by the bytes of their paths, past ``queryByteLimit``. Shared
/// by the copies of one ``PostgRESTOverlay`` configuration.
final class ParsedAnswers: Sendable {
    /// The most body bytes kept: a few thousand typical answers.
    static let byteLimit = 8 << 20

    private struct State {
        var answers: [ReadKey: OverlayCachedAnswer] = [:]
        var bytes = 0
    }

    /// A read by its method, path, headers (sorted by name) and body, compared byte for byte.
    /// Swift's `String` equality would take two spellings of one text (`é` composed or not) for
    /// one read, whose filters PostgreSQL compares as bytes. It holds the read's own strings (no
    /// copy: a page makes a key for each of its answers, twice).
    private struct ReadKey: Hashable {
        let read: DataRequest
        /// The hash of the read's parts, taken once: a page looks a read up two to four times.
        let hash: Int

        init(_ read: DataRequest) {
            self.read = read
            var hasher = Hasher()
            func combine(_ text: String, after separator: UInt8) {
                hasher.combine(separator)
                text.hashUTF8Bytes(into: &hasher)
            }
            combine(read.method, after: 0)
            combine(read.path, after: 0)
            for (name, value) in Self.headers(of: read) {
                combine(name, after: 0)
                combine(value, after: UInt8(ascii: ":"))
            }
            if let body = read.body { combine(body, after: 1) }
            hash = hasher.finalize()
        }

        static func == (a: ReadKey, b: ReadKey) -> Bool {
            let (x, y) = (a.read, b.read)
            guard a.hash == b.hash, x.method.hasSameUTF8Bytes(as: y.method), x.path.hasSameUTF8Bytes(as: y.path),
                x.headers.count == y.headers.count, (x.body == nil) == (y.body == nil)
            else { return false }
            if let body = x.body, let other = y.body, !body.hasSameUTF8Bytes(as: other) { return false }
            // Most reads have no headers: nothing sorted for them.
            return x.headers.isEmpty
                || zip(headers(of: x), headers(of: y)).allSatisfy {
                    $0.key.hasSameUTF8Bytes(as: $1.key) && $0.value.hasSameUTF8Bytes(as: $1.value)
                }
        }

        func hash(into hasher: inout Hasher) { hasher.combine(hash) }

        /// `read`'s headers in the order of their names' bytes (a dictionary's own order is not
        /// the same for two equal ones).
        private static func headers(of read: DataRequest) -> [(key: String, value: String)] {
            read.headers.isEmpty ? [] : read.headers.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
        }
    }

    private let state = Mutex(State())
    /// Each table's ``TableReach``, by table name, bounded by ``byteLimit`` of its own.
    private let reaches = Mutex([String: TableReach]())

    /// The answer to `read` parsed from `body`: the kept one when it was parsed from the same
    /// bytes, else `parse()`'s, kept (unless the body is past a quarter of ``byteLimit``: one
    /// answer does not empty what every other read keeps).
    func answer(to read: DataRequest, body: String, parse: () -> OverlayCachedAnswer) -> OverlayCachedAnswer {
        let key = ReadKey(read)
        if let kept = kept(key, body: body) { return kept }
        let parsed = parse()
        keep(parsed, as: key)
        return parsed
    }

    /// What `step` makes of the answer to `read` parsed from `body` (the kept one when it was
    /// parsed from the same bytes, else `parse()`'s), keeping the parse `step` gives, if any, as
    /// the answer to `read` in its place: a change feed's page, which rewrites the body. One
    /// lookup of the read for both.
    func rewrite<Result>(
        _ read: DataRequest, body: String, parse: () -> OverlayCachedAnswer,
        _ step: (OverlayCachedAnswer) -> (Result, OverlayCachedAnswer?)
    ) -> Result {
        let key = ReadKey(read)
        let (result, rewritten) = step(kept(key, body: body) ?? parse())
        if let rewritten { keep(rewritten, as: key) }
        return result
    }

    /// Keeps `parsed` under `key`, unless its body is past a quarter of ``byteLimit`` (one answer
    /// does not empty what every other read keeps).
    private func keep(_ parsed: OverlayCachedAnswer, as key: ReadKey) {
        let size = parsed.cachedBody?.utf8.count ?? 0
        guard size <= Self.byteLimit / 4 else { return }
        state.withLock { state in
            if let old = state.answers[key] { state.bytes -= old.cachedBody?.utf8.count ?? 0 }
            if state.bytes + size > Self.byteLimit { state = State() }
            state.answers[key] = parsed
            state.bytes += size
        }
    }

    /// The kept answer to `read` when it was parsed from the same bytes as `body`; keeps
    /// nothing new.
    func kept(_ read: DataRequest, body: String) -> OverlayCachedAnswer? {
        kept(ReadKey(read), body: body)
    }

    private func kept(_ key: ReadKey, body: String) -> OverlayCachedAnswer? {
        guard let kept = state.withLock({ $0.answers[key] }), let parsedFrom = kept.cachedBody,
            parsedFrom.hasSameUTF8Bytes(as: body)
        else { return nil }
        return kept
    }

    /// Runs `body` with `table`'s kept reach; past ``byteLimit`` of bodies in all tables' reaches
    /// together, every reach is forgotten after it (the next page parses again).
    func withReach<Result>(of table: String, _ body: (inout TableReach) -> Result) -> Result {
        reaches.withLock { reaches in
            let result = body(&reaches[table, default: TableReach()])
            if reaches.values.reduce(0, { $0 + $1.bytes }) > Self.byteLimit { reaches = [:] }
            return result
        }
    }

    /// The query of `read` (its path and `Range`), parsed once: every page meets the same reads,
    /// and so do a screen's local-first answers. Forgotten all at once past ``queryByteLimit``.
    func query(of read: DataRequest) -> PostgRESTQuery {
        let key = QueryKey(read)
        if let query = queries.withLock({ $0.parsed[key] }) { return query }
        var query = PostgRESTQuery(path: read.path)
        if let range = key.range { query.restrict(toRangeHeader: range) }
        queries.withLock { queries in
            if queries.bytes + key.byteCount > Self.queryByteLimit { queries = Queries() }
            if queries.parsed.updateValue(query, forKey: key) == nil { queries.bytes += key.byteCount }
        }
        return query
    }

    /// The most bytes of paths whose queries are kept: a few thousand typical reads.
    static let queryByteLimit = 1 << 20

    /// What a read's query is parsed from, its path and `Range`, compared byte for byte: two
    /// spellings of one text (`é` composed or not) are two paths, whose filters compare as
    /// bytes. It holds the read's own strings (no copy of their bytes).
    private struct QueryKey: Hashable {
        let path: String
        let range: String?

        init(_ read: DataRequest) {
            (path, range) = (read.path, read.header("Range"))
        }

        /// The bytes it holds, toward ``queryByteLimit``.
        var byteCount: Int { path.utf8.count + (range?.utf8.count ?? 0) }

        static func == (a: QueryKey, b: QueryKey) -> Bool {
            guard a.path.hasSameUTF8Bytes(as: b.path) else { return false }
            switch (a.range, b.range) {
            case (nil, nil): return true
            case (let x?, let y?): return x.hasSameUTF8Bytes(as: y)
            default: return false
            }
        }

        func hash(into hasher: inout Hasher) {
            path.hashUTF8Bytes(into: &hasher)
            if let range {
                hasher.combine(0 as UInt8)
                range.hashUTF8Bytes(into: &hasher)
            }
        }
    }

    private struct Queries {
        var parsed: [QueryKey: PostgRESTQuery] = [:]
        var bytes = 0
    }

    private let queries = Mutex(Queries())

    /// The rows of `table`'s last page, parsed (``TableReach/pageRows``).
    func pageRows(of table: String?) -> TableReach.PageRows {
        guard let table else { return [:] }
        return reaches.withLock { $0[table]?.pageRows ?? [:] }
    }

    /// Forgets every kept answer, reach and query.
    func removeAll() {
        state.withLock { $0 = State() }
        reaches.withLock { $0 = [:] }
        queries.withLock { $0 = Queries() }
    }

    /// How many answers are kept (for tests).
    var count: Int { state.withLock { $0.answers.count } }
}
