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
