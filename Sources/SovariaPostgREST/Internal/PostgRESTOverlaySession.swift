import SovariaQueue
import SovariaSync
import Synchronization

/// A PostgREST read over one cached answer: the answer parsed once, and the state the writes
/// applied so far left. An answer whose writes extend the last one's applies only the new writes
/// (a write by key touches its row alone), and derives the answer from the last one by moving the
/// rows they touched (``OverlayEvaluation/updatedAnswer(from:)``) when that one was exact; any
/// other list is applied again to the parsed answer, and the read runs over every row. Each way
/// gives the answer a fresh evaluation gives (the differential test checks it after every write).
final class PostgRESTOverlaySession: OverlaySession {
    private struct State {
        /// The cached answer and the related ones, read; no write applied.
        let loaded: OverlayEvaluation
        /// `loaded` with `applied` applied.
        var current: OverlayEvaluation
        var applied: [OverlayWrite] = []
        /// The last answer, and the rows it shows when the next can be derived from them.
        var last: (answer: OverlayAnswer, shown: OverlayEvaluation.ShownRows?)?
        var paths = OverlayPaths()
    }

    /// The answer when the read is settled before any write applies.
    private let settled: OverlayAnswer?
    private let state: Mutex<State>
    let estimatedBytes: Int
    let rowCount: Int

    /// A parsed row's bytes besides its text, with ``bytesPerColumn``: a little over what the
    /// bench measures a session hold per row (docs/ARCHITECTURE.md, "Local-first reads").
    static let bytesPerRow = 200
    /// Each column's share of a parsed row.
    static let bytesPerColumn = 60

    init(_ evaluation: OverlayEvaluation, cachedBody: String?, related: [RelatedAnswer]) {
        var loaded = evaluation
        settled = loaded.load(cachedBody: cachedBody, related: related)
        rowCount = loaded.rows.count
        let columns = loaded.cachedColumns?.count ?? 0
        let text = (cachedBody?.utf8.count ?? 0) + related.reduce(0) { $0 + $1.body.utf8.count }
        estimatedBytes = text + rowCount * (Self.bytesPerRow + columns * Self.bytesPerColumn)
        state = Mutex(State(loaded: loaded, current: loaded))
    }

    var paths: OverlayPaths { state.withLock { $0.paths } }

    func answer(writes: [OverlayWrite]) -> OverlayAnswer {
        if let settled { return settled }
        return state.withLock { state in
            if writes.count >= state.applied.count, writes.starts(with: state.applied) {
                if writes.count == state.applied.count, let last = state.last { return last.answer }
                state.current.touched = []
                for write in writes[state.applied.count...] { state.current.apply(write) }
                state.applied = writes
                state.paths.appended += 1
                if let shown = state.last?.shown, let updated = state.current.updatedAnswer(from: shown) {
                    state.paths.updated += 1
                    state.last = updated
                    return updated.answer
                }
            } else {
                state.current = state.loaded
                for write in writes { state.current.apply(write) }
                state.applied = writes
                state.paths.rebuilt += 1
            }
            let answered = state.current.answeredShowing()
            state.last = answered
            return answered.answer
        }
    }
}
