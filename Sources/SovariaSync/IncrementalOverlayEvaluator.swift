import SovariaQueue

/// An ``OverlayEvaluator`` that keeps what it read between answers: a session parses a cached
/// answer once, then applies each write appended to the queue to the state the earlier writes
/// left, instead of evaluating everything again. Package-visible: ``SovariaOffline`` keeps the
/// sessions (bounded, shed under memory pressure); a third-party evaluator is asked afresh each
/// time through ``OverlayEvaluator/answer(_:cachedBody:writes:related:)``.
package protocol IncrementalOverlayEvaluator: OverlayEvaluator {
    /// A session answering `read` over `cachedBody` and `related`, which it reads once.
    func session(_ read: DataRequest, cachedBody: String?, related: [RelatedAnswer]) -> any OverlaySession
}

/// The state of one read over one cached answer, kept between answers.
///
/// - Important: ``answer(writes:)`` answers exactly what
///   ``OverlayEvaluator/answer(_:cachedBody:writes:related:)`` answers for the same inputs,
///   whichever way it computes it.
package protocol OverlaySession: AnyObject, Sendable {
    /// The answer with `writes` (oldest first) applied: the writes after those of the last call
    /// are applied to the state it left when they extend them; otherwise all are applied again
    /// to the parsed cached answer.
    func answer(writes: [OverlayWrite]) -> OverlayAnswer
    /// About how many bytes the session holds: the cached text and its parsed rows.
    var estimatedBytes: Int { get }
    /// The rows it holds.
    var rowCount: Int { get }
    /// How its answers were computed so far.
    var paths: OverlayPaths { get }
}

/// How answers were computed: by applying only appended writes, or all of them again.
package struct OverlayPaths: Sendable, Hashable {
    /// Sessions made: a cached answer parsed.
    package var made = 0
    /// Answers that applied only the writes appended since the last one.
    package var appended = 0
    /// Answers that applied every write again to the parsed cached answer.
    package var rebuilt = 0
    /// Answers derived from the last one by moving the rows the appended writes touched, not by
    /// reading every row.
    package var updated = 0

    package init(made: Int = 0, appended: Int = 0, rebuilt: Int = 0, updated: Int = 0) {
        self.made = made
        self.appended = appended
        self.rebuilt = rebuilt
        self.updated = updated
    }
}
