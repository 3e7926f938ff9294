import SovariaQueue

/// The session of an evaluator that keeps nothing between answers: each answer is the
/// evaluator's, asked afresh.
final class FreshOverlaySession<Evaluator: OverlayEvaluator>: OverlaySession {
    private let evaluator: Evaluator
    private let read: DataRequest
    private let cachedBody: String?
    private let related: [RelatedAnswer]
    let estimatedBytes: Int

    init(evaluator: Evaluator, read: DataRequest, cachedBody: String?, related: [RelatedAnswer]) {
        self.evaluator = evaluator
        self.read = read
        self.cachedBody = cachedBody
        self.related = related
        estimatedBytes = (cachedBody?.utf8.count ?? 0) + related.reduce(0) { $0 + $1.body.utf8.count }
    }

    func answer(writes: [OverlayWrite]) -> OverlayAnswer {
        evaluator.answer(read, cachedBody: cachedBody, writes: writes, related: related)
    }
}
