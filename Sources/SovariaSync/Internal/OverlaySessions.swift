import Sovaria
import SovariaCache
import SovariaPlumbing
import SovariaQueue
import Synchronization

/// The overlay sessions of a controller, one per read (and one more for a read asked again with
/// its table's other answers), each with its latest answer: the one place an overlaid answer is
/// kept. A read repeated while nothing changed (the same change version) takes the latest
/// answer without reading the writes; one whose writes are the same takes it without asking the
/// session; otherwise the session answers (a PostgREST one applies the new writes alone). A read
/// no write applied to, and a read whose table had no other answer to ask with, are kept too, as
/// an entry without a session: repeated at the same version, neither reads the writes again.
///
/// Bounded like the query cache's memory layer, least recently used first: at most
/// ``maxCount`` sessions and ``maxBytes`` of cached text and parsed rows. Shed under memory
/// pressure as that layer is: a warning keeps a quarter of both (and the sessions of queries a
/// live reader shows), a critical event keeps none. A session that went is made again from the
/// cached answer next time; no answer changes.
final class OverlaySessions: Sendable {
    /// What a read repeated at the version it was last asked at takes.
    enum Kept {
        /// The overlaid answer.
        case answer(OverlayAnswer)
        /// Nothing: no write applied (the read's own entry), or no other answer of the table to
        /// ask with (the entry of the read asked with related answers; the read's own answer
        /// stands).
        case nothing
    }

    /// A session (or none, for what ``Kept/nothing`` records), the inputs it was made from (it
    /// answers only for the same ones), and its latest answer.
    final class Entry: Sendable {
        /// The read, headers included (a `Range` header changes how it is evaluated).
        let read: DataRequest
        let cachedBody: String?
        let related: [RelatedAnswer]
        let session: (any OverlaySession)?
        /// The latest answer, the writes it applied and the change version it was asked at.
        private let latest: Mutex<Latest?>

        struct Latest {
            let version: UInt64
            let writes: [OverlayWrite]
            let answer: OverlayAnswer?
        }

        init(read: DataRequest, cachedBody: String?, related: [RelatedAnswer], session: any OverlaySession) {
            self.read = read
            self.cachedBody = cachedBody
            self.related = related
            self.session = session
            latest = Mutex(nil)
        }

        /// An entry that keeps ``Kept/nothing`` at `version`.
        init(nothingFor read: DataRequest, cachedBody: String?, at version: UInt64) {
            self.read = read
            self.cachedBody = cachedBody
            related = []
            session = nil
            latest = Mutex(Latest(version: version, writes: [], answer: nil))
        }

        /// Whether the session answers `read` over `cachedBody` and `related`: the same read, and
        /// the same bytes (`String`'s `==` would take text in another Unicode normalization for
        /// the same, and the session copies rows out of the text it parsed).
        func answers(_ read: DataRequest, cachedBody: String?, related: [RelatedAnswer]) -> Bool {
            answers(read, cachedBody: cachedBody)
                && self.related.count == related.count
                && zip(self.related, related).allSatisfy { $0.read == $1.read && Self.sameBytes($0.body, $1.body) }
        }

        /// Whether the session answers `read` over `cachedBody`, whatever its related answers.
        func answers(_ read: DataRequest, cachedBody: String?) -> Bool {
            self.read == read && Self.sameBytes(self.cachedBody, cachedBody)
        }

        /// What was kept when it was asked at `version`.
        func kept(at version: UInt64) -> Kept? {
            latest.withLock { latest in
                guard let latest, latest.version == version else { return nil }
                return latest.answer.map(Kept.answer) ?? .nothing
            }
        }

        /// Keeps ``Kept/nothing`` as the latest result, asked at `version`, unless one asked at a
        /// later version is kept.
        func keepNothing(at version: UInt64) {
            latest.withLock { latest in
                if version >= latest?.version ?? 0 { latest = Latest(version: version, writes: [], answer: nil) }
            }
        }

        /// The answer of `session` with `writes`: the latest one when it applied the same writes,
        /// else the session's, kept as the latest unless one asked at a later version is.
        func answer(of session: any OverlaySession, writes: [OverlayWrite], version: UInt64) -> OverlayAnswer {
            let kept = latest.withLock { latest -> OverlayAnswer? in
                guard let known = latest, known.writes == writes, let answer = known.answer else { return nil }
                if version > known.version { latest = Latest(version: version, writes: writes, answer: answer) }
                return answer
            }
            if let kept { return kept }
            let answer = session.answer(writes: writes)
            latest.withLock { latest in
                if version >= latest?.version ?? 0 { latest = Latest(version: version, writes: writes, answer: answer) }
            }
            return answer
        }

        /// Whether both are the same UTF-8 bytes, or both `nil`.
        static func sameBytes(_ a: String?, _ b: String?) -> Bool {
            guard let a, let b else { return a == nil && b == nil }
            return a.hasSameUTF8Bytes(as: b)
        }
    }

    /// The most sessions kept.
    static let maxCount = 200
    /// The most bytes kept (estimated): four times the query cache's default memory layer
    /// (16 MiB of text), as parsed rows cost several times their text.
    static let maxBytes = 64 << 20
    /// The estimated bytes of an entry without a session.
    private static let nothingCost = 256
    /// The suffix of the session of a read asked again with related answers.
    private static let relatedSuffix = "\u{0}related"

    /// How the answers were computed, over every session made so far.
    private let totals = Mutex(OverlayPaths())

    private let entries: MemoryCache<String, Entry>

    /// Sessions kept up to `countLimit` and `byteLimit` (estimated bytes).
    init(countLimit: Int = maxCount, byteLimit: Int = maxBytes) {
        entries = MemoryCache(
            countLimit: countLimit, costLimit: byteLimit, rank: .overlaySessions)
    }

    /// What was kept for `read` (whose query is `key`; asked again with related answers when
    /// `withRelated`) over `cachedBody`, when it was asked at change `version`: nothing that
    /// result depends on changed since.
    func kept(
        _ read: DataRequest, key: String, withRelated: Bool, cachedBody: String?, at version: UInt64
    ) -> Kept? {
        guard let entry = entries.value(forKey: withRelated ? key + Self.relatedSuffix : key),
            entry.answers(read, cachedBody: cachedBody)
        else { return nil }
        return entry.kept(at: version)
    }

    /// Keeps ``Kept/nothing`` for `read` (whose query is `key`; the entry of the read asked with
    /// related answers when `withRelated`) over `cachedBody` at change `version`: as the latest
    /// result of its session when it has one for the same cached answer (kept for the next write),
    /// else in an entry of its own.
    func keepNothing(
        _ read: DataRequest, key: String, withRelated: Bool, cachedBody: String?, at version: UInt64
    ) {
        let id = withRelated ? key + Self.relatedSuffix : key
        if let entry = entries.value(forKey: id), entry.session != nil, entry.answers(read, cachedBody: cachedBody) {
            entry.keepNothing(at: version)
        } else {
            entries.set(
                Entry(nothingFor: read, cachedBody: cachedBody, at: version), forKey: id, cost: Self.nothingCost)
        }
    }

    /// The answer of `evaluator` to `read` (whose query is `key`) with `writes`, from its session
    /// when one was made from the same cached answer and related answers, else from a new one,
    /// kept; the answer is kept as the session's latest, asked at change `version`.
    func answer(
        _ read: DataRequest, key: String, cachedBody: String?, related: [RelatedAnswer], writes: [OverlayWrite],
        version: UInt64, evaluator: any OverlayEvaluator
    ) -> OverlayAnswer {
        let id = related.isEmpty ? key : key + Self.relatedSuffix
        if let entry = entries.value(forKey: id), let session = entry.session,
            entry.answers(read, cachedBody: cachedBody, related: related)
        {
            let before = session.paths
            let answer = entry.answer(of: session, writes: writes, version: version)
            let after = session.paths
            totals.withLock {
                $0.appended += after.appended - before.appended
                $0.rebuilt += after.rebuilt - before.rebuilt
                $0.updated += after.updated - before.updated
            }
            return answer
        }
        let session = evaluator.session(read, cachedBody: cachedBody, related: related)
        let entry = Entry(read: read, cachedBody: cachedBody, related: related, session: session)
        let answer = entry.answer(of: session, writes: writes, version: version)
        totals.withLock { $0.made += 1 }
        entries.set(entry, forKey: id, cost: session.estimatedBytes)
        return answer
    }

    /// Gives memory back for `level`: on a warning, the least recently used sessions go until a
    /// quarter of both limits hold, except those of queries `isShown` says a screen shows; on a
    /// critical event, all go.
    func shed(for level: MemoryPressure, keeping isShown: (String) -> Bool) {
        switch level {
        case .warning:
            let fraction = QueryCache.warningShedFraction
            entries.trim(
                toCount: Int(Double(entries.countLimit) * fraction), cost: Int(Double(entries.costLimit) * fraction)
            ) { id, _ in
                isShown(id.hasSuffix(Self.relatedSuffix) ? String(id.dropLast(Self.relatedSuffix.count)) : id)
            }
        case .critical:
            entries.removeAll()
        }
    }

    /// Drops every session.
    func removeAll() { entries.removeAll() }

    /// How the answers were computed: sessions made (a cached answer parsed), answers that
    /// applied only appended writes (and of those, answers derived from the last one), answers
    /// that applied every write again. Counted around each session's answer: answers that run at
    /// the same time may be counted twice (these are statistics, for tests and diagnostics).
    var paths: OverlayPaths { totals.withLock { $0 } }

    /// The queries whose sessions are kept, most recently used first (a read asked again with
    /// related answers is listed with a `\0related` suffix).
    var queries: [String] { entries.keysByRecency }

    /// How many sessions are kept.
    var count: Int { entries.count }
    /// Their estimated bytes.
    var bytes: Int { entries.totalCost }
}
