@_spi(Diagnostics) import SovariaSync
import Synchronization

/// A PostgREST read over one cached answer: the answer parsed once (``OverlayCachedAnswer``), and
/// the rows the writes applied so far left (``OverlayRows``). An answer whose writes extend the
/// last one's applies only the new writes (a write by key touches its row alone), and derives
/// the answer from the rows the last one showed by moving the rows they touched
/// (``OverlayReadEvaluation/updatedAnswer(from:)``) when that one was exact; any other list is
/// applied again to the parsed answer, and the read runs over every row. Each way gives the
/// answer a fresh evaluation gives (the differential test checks it after every write).
///
/// The session keeps no answer: the sync layer's session cache keeps the latest one.
final class PostgRESTOverlaySession: OverlaySession {
    private struct State {
        /// The rows after `applied`.
        var current: OverlayRows
        var applied: [OverlayWrite] = []
        /// The rows the last answer showed, when the next can be derived from them.
        var shown: OverlayReadEvaluation.ShownRows?
        var paths = OverlayPaths()
    }

    private let cached: OverlayCachedAnswer
    private let state: Mutex<State>
    let estimatedBytes: Int

    /// A parsed row's bytes besides its text, with ``bytesPerColumn``: a little over what the
    /// bench measures a session hold per row (docs/ARCHITECTURE.md, "Local-first reads").
    static let bytesPerRow = 200
    /// Each column's share of a parsed row.
    static let bytesPerColumn = 60

    init(_ cached: OverlayCachedAnswer) {
        self.cached = cached
        let columns = cached.cachedColumns?.count ?? 0
        estimatedBytes =
            (cached.cachedBody?.utf8.count ?? 0) + cached.relatedBytes
            + cached.rows.count * (Self.bytesPerRow + columns * Self.bytesPerColumn)
        state = Mutex(State(current: OverlayRows(cached)))
    }

    var paths: OverlayPaths { state.withLock { $0.paths } }

    func answer(writes: [OverlayWrite]) -> OverlayAnswer {
        if let settled = cached.settled { return settled }
        return state.withLock { state in
            if writes.count >= state.applied.count, writes.starts(with: state.applied) {
                // The same writes again: the answer is derived from the rows the last one showed.
                let appended = writes.count > state.applied.count
                state.current.touched = []
                for write in writes[state.applied.count...] { state.current.apply(write) }
                state.applied = writes
                if appended { state.paths.appended += 1 }
                if let shown = state.shown,
                    let updated = OverlayReadEvaluation(state.current).updatedAnswer(from: shown)
                {
                    if appended { state.paths.updated += 1 }
                    state.shown = updated.shown
                    return updated.answer
                }
            } else {
                state.current = OverlayRows(cached)
                for write in writes { state.current.apply(write) }
                state.applied = writes
                state.paths.rebuilt += 1
            }
            let answered = OverlayReadEvaluation.answer(state.current)
            state.shown = answered.shown
            return answered.answer
        }
    }
}
