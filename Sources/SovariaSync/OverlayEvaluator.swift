import SovariaQueue

/// Computes a local-first answer: a read's cached server answer with the pending writes of its
/// table applied, by the rules of the API the writes are sent to.
///
/// ``SovariaOffline`` stays transport-agnostic: for each read it asks the evaluator for a
/// ``OverlaySession`` over the cached body, keeps it (bounded, shed under memory pressure), and
/// asks it for the answer with the writes as they are. `PostgRESTOverlay` (in SovariaPostgREST)
/// is the evaluator for PostgREST; an app on another API plugs its own. An evaluator that only
/// implements ``answer(_:cachedBody:writes:related:)`` gets a session that asks it afresh.
///
/// - Important: Called from any task, often (every read and every live-query update): keep it
///   pure and fast. Never present a guess as exact: when a write or a read feature is beyond
///   the evaluator, show what it knows and say why in ``OverlayAnswer/inexactReasons``.
public protocol OverlayEvaluator: Sendable {
    /// The answer to `read`, given the server's cached answer (`nil`: nothing cached), the
    /// writes of the read's table, oldest first, and the other cached answers of the table.
    ///
    /// A write is a request (``OverlayWrite/Effect/request(_:)``: queued or synced), or a change
    /// the change feed brought (``OverlayWrite/Effect/change(_:)``: a row's new state or its
    /// removal, by key), which the feed's pages apply to the cached answers.
    ///
    /// `related` is empty at first; an answer that sets ``OverlayAnswer/wantsRelatedAnswers``
    /// (rows it does not hold could decide it) is asked again with the table's other cached
    /// answers, which may know those rows.
    func answer(
        _ read: DataRequest, cachedBody: String?, writes: [OverlayWrite], related: [RelatedAnswer]
    ) -> OverlayAnswer

    /// A session answering `read` over `cachedBody` and `related`, which stay the same for its
    /// life; the controller asks it for each answer as the writes change.
    ///
    /// By default, a session that calls ``answer(_:cachedBody:writes:related:)``. Implement it
    /// to keep what the session read between answers (the cached answer parsed once, the state
    /// the writes left).
    func session(_ read: DataRequest, cachedBody: String?, related: [RelatedAnswer]) -> any OverlaySession

    /// For each of `answers` (reads of one table and their cached server answers), the indexes of
    /// the `changes` (a page of the change feed: each row's last change) that can change it: a
    /// change of a row the answer holds, or a row it does not hold that now matches the read.
    /// The change feed evaluates each answer with these alone, and leaves an answer no change
    /// can touch as it is.
    ///
    /// Answer conservatively: an index left out must be a change that cannot alter the answer
    /// whatever the rows the server holds. By default, every change for every answer.
    func changesThatCanAlter(
        _ answers: [(read: DataRequest, cachedBody: String)], among changes: [RowChange]
    ) -> [[Int]]

    /// ``changesThatCanAlter(_:among:)`` for answers the evaluator may have met on an earlier
    /// page: each names its ``FeedAnswer/version``, and comes without its body where the
    /// controller did not read it. An answer without a body whose version the evaluator does not
    /// keep gets `nil`: the controller reads it and asks again with every answer.
    ///
    /// `answers` are all the table's answers the page evaluates, each ``FeedAnswer/id`` once: the
    /// evaluator may forget the table's others (an id given twice gets what its first got). By
    /// default, ``changesThatCanAlter(_:among:)`` of the answers with bodies, and `nil` for the
    /// others.
    func changesThatCanAlter(versioned answers: [FeedAnswer], among changes: [RowChange]) -> [[Int]?]

    /// Gives back what the evaluator keeps in memory between calls (answers it parsed for the
    /// next page), when the device is short of memory. By default, nothing is kept.
    func shedKeptAnswers()

    /// The column that names a row of `table`, where the evaluator is told it: a
    /// ``ConflictRule`` given no key column takes it, so a table's key is stated once. By
    /// default, `nil` (the rule's `"id"`).
    func primaryKey(of table: String) -> String?
}

extension OverlayEvaluator {
    /// Every change, for every answer.
    public func changesThatCanAlter(
        _ answers: [(read: DataRequest, cachedBody: String)], among changes: [RowChange]
    ) -> [[Int]] {
        Array(repeating: Array(changes.indices), count: answers.count)
    }

    /// ``changesThatCanAlter(_:among:)`` of the answers that come with bodies; `nil` for the
    /// others.
    public func changesThatCanAlter(versioned answers: [FeedAnswer], among changes: [RowChange]) -> [[Int]?] {
        let read = answers.indices.filter { answers[$0].cachedBody != nil }
        let found = changesThatCanAlter(
            read.map { (answers[$0].read, answers[$0].cachedBody ?? "") }, among: changes)
        var result = [[Int]?](repeating: nil, count: answers.count)
        for (index, indexes) in zip(read, found) { result[index] = indexes }
        return result
    }

    /// Nothing kept, nothing to give back.
    public func shedKeptAnswers() {}

    /// No key stated: a ``ConflictRule`` without one uses `"id"`.
    public func primaryKey(of table: String) -> String? { nil }

    /// A session that asks ``answer(_:cachedBody:writes:related:)`` for every answer.
    public func session(_ read: DataRequest, cachedBody: String?, related: [RelatedAnswer]) -> any OverlaySession {
        FreshOverlaySession(evaluator: self, read: read, cachedBody: cachedBody, related: related)
    }
}

/// One cached answer of a table as a change feed's page asks which of its changes can alter it
/// (``OverlayEvaluator/changesThatCanAlter(versioned:among:)``).
public struct FeedAnswer: Sendable {
    /// Which answer: the same for each of its versions (the controller gives its cache key).
    public var id: String
    /// Changes whenever the cached answer does, and never names two bodies of one ``id``; `nil`
    /// when not known (then ``cachedBody`` is there, and nothing learned from it is taken as
    /// known later).
    public var version: UInt64?
    /// The read it answers.
    public var read: DataRequest
    /// Its cached body, or `nil` where the controller did not read it. A body given is the one
    /// the page evaluates: it may be later than ``version`` (a fetch stored it since), and what
    /// can alter it is found for it, not for a body kept from before.
    public var cachedBody: String?

    /// An answer as a page asks about it.
    public init(id: String, version: UInt64?, read: DataRequest, cachedBody: String?) {
        self.id = id
        self.version = version
        self.read = read
        self.cachedBody = cachedBody
    }
}

/// Another cached server answer of the same table: the rows it holds are rows the server has.
public struct RelatedAnswer: Sendable, Hashable {
    /// The read it answered.
    public var read: DataRequest
    /// Its cached body.
    public var body: String

    /// A related answer.
    public init(read: DataRequest, body: String) {
        self.read = read
        self.body = body
    }
}

/// A write the overlay applies: one waiting in the queue, one synced after the cached answer
/// was fetched (it stays in the answers until a fresh server answer has it, so nothing flickers
/// back between the sync and the refetch), or a change another device made that the change feed
/// brought.
public struct OverlayWrite: Sendable, Hashable {
    /// What a write does to the table's rows.
    public enum Effect: Sendable, Hashable {
        /// A request in the API's dialect, as the queue keeps it.
        case request(DataRequest)
        /// A change the feed brought: the row's whole new state, or its removal, by the row's
        /// key (the evaluator knows each table's key column).
        case change(RowChange)
    }

    /// The write's client id (its `Idempotency-Key`); `feed:<position>` for a change.
    public var id: String {
        get {
            if let givenID { return givenID }
            if case .change(let change) = effect { return "feed:\(change.position)" }
            return ""
        }
        set { givenID = newValue }
    }
    /// The id given; `nil` for a change's, made when asked for (a page makes a write of each of
    /// its changes, and asks none its id).
    private var givenID: String?
    /// What the write does.
    public var effect: Effect
    /// `true` while the write waits in the queue; `false` once it synced, and for a change.
    public var isPending: Bool

    /// A write of `request` for the overlay.
    public init(id: String, request: DataRequest, isPending: Bool) {
        self.givenID = id
        self.effect = .request(request)
        self.isPending = isPending
    }

    /// A change the feed brought, for the overlay: applied by its row's key, never pending.
    public init(change: RowChange) {
        self.effect = .change(change)
        self.isPending = false
    }

    /// Equal when the id, the effect and whether it is pending are.
    public static func == (lhs: OverlayWrite, rhs: OverlayWrite) -> Bool {
        lhs.effect == rhs.effect && lhs.isPending == rhs.isPending && lhs.id == rhs.id
    }

    /// Hashes what ``==(_:_:)`` compares.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(id)
        hasher.combine(effect)
        hasher.combine(isPending)
    }

    /// The request, for a write that is one (`nil` for a change the feed brought).
    public var request: DataRequest? {
        if case .request(let request) = effect { request } else { nil }
    }
}

/// What an ``OverlayEvaluator`` answers.
public struct OverlayAnswer: Sendable, Hashable {
    /// The answer's body (for PostgREST, the JSON array of rows), or `nil` when nothing is known.
    public var body: String?
    /// Why the answer may differ from the server's after the writes sync, in the order met;
    /// empty when it is exact.
    public var inexactReasons: [InexactReason]
    /// The rows of the answer that pending writes touched.
    public var pendingRows: [PendingRow]
    /// Whether pending writes changed the answer: rows added, changed or removed.
    public var changedByPendingWrites: Bool
    /// Whether rows the cached answer does not hold could decide the answer (or its
    /// ``rowCountChange``): the controller then asks again with the table's other cached answers.
    public var wantsRelatedAnswers: Bool
    /// The server's answer instead of a body, when it will refuse the read once the writes
    /// sync: a read of one row as an object whose rows are not one (PostgREST: 406). Set only on
    /// an exact answer; ``body`` is then `nil`.
    public var refusal: DataResponse?
    /// How many rows the writes add to the rows the read's filters match, over every page
    /// (negative: take from them): what moves the server's count (PostgREST's `Content-Range`
    /// total) to the one it answers once the writes sync. `nil` when that is not known: a write
    /// may add or remove a row no cached answer holds, or whether a row matches is not known.
    /// `nil` by default; computed for a read that asks for a count.
    ///
    /// - Important: Set it only when every write is decided for the rows the read matches,
    ///   not only for those its page shows: whether each row a write touches matched before it and
    ///   matches after it is known, and no write can change a row the evaluator does not hold in a
    ///   way that changes whether it matches.
    public var rowCountChange: Int?

    /// Whether the answer is what the server will answer once the writes have synced.
    public var isExact: Bool { inexactReasons.isEmpty }

    /// An answer.
    public init(
        body: String?, inexactReasons: [InexactReason] = [], pendingRows: [PendingRow] = [],
        changedByPendingWrites: Bool = false, wantsRelatedAnswers: Bool = false, refusal: DataResponse? = nil,
        rowCountChange: Int? = nil
    ) {
        self.refusal = refusal
        self.rowCountChange = rowCountChange
        self.body = body
        self.inexactReasons = inexactReasons
        self.pendingRows = pendingRows
        self.changedByPendingWrites = changedByPendingWrites
        self.wantsRelatedAnswers = wantsRelatedAnswers
    }
}

/// A row of an answer that pending writes touched: draw it as "waiting to sync".
public struct PendingRow: Sendable, Hashable {
    /// The row's primary key as JSON text (`"\"n1\""`, `"7"`), or `nil` when the row has none yet.
    public var key: String?
    /// The client ids of the pending writes that touched it, oldest first.
    public var writeIDs: [String]

    /// A pending row.
    public init(key: String?, writeIDs: [String]) {
        self.key = key
        self.writeIDs = writeIDs
    }
}
