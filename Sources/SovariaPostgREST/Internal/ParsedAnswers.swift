import SovariaQueue
import Synchronization

/// The cached answers a change feed's page parsed to decide which changes can alter them, kept
/// so the next page parses only the answers that changed since: each read's
/// ``OverlayCachedAnswer`` with the body it was parsed from. A page of one change among 1,000
/// cached answers then costs a lookup and a filter evaluation per answer, not a parse.
///
/// Bounded by the bytes of the bodies it holds: past ``byteLimit`` it is emptied (the next
/// page parses again). Shared by the copies of one ``PostgRESTOverlay`` configuration.
final class ParsedAnswers: Sendable {
    /// The most body bytes kept: a few thousand typical answers.
    static let byteLimit = 8 << 20

    private struct State {
        var answers: [DataRequest: OverlayCachedAnswer] = [:]
        var bytes = 0
    }

    private let state = Mutex(State())

    /// The answer to `read` parsed from `body`: the kept one when it was parsed from the same
    /// body, else `parse()`'s, kept.
    func answer(to read: DataRequest, body: String, parse: () -> OverlayCachedAnswer) -> OverlayCachedAnswer {
        if let kept = kept(read, body: body) { return kept }
        let parsed = parse()
        let size = body.utf8.count
        state.withLock { state in
            if let old = state.answers[read] { state.bytes -= old.cachedBody?.utf8.count ?? 0 }
            if state.bytes + size > Self.byteLimit { state = State() }
            state.answers[read] = parsed
            state.bytes += size
        }
        return parsed
    }

    /// The kept answer to `read` when it was parsed from `body`; keeps nothing new.
    func kept(_ read: DataRequest, body: String) -> OverlayCachedAnswer? {
        guard let kept = state.withLock({ $0.answers[read] }), kept.cachedBody == body else { return nil }
        return kept
    }

    /// Forgets every kept answer.
    func removeAll() { state.withLock { $0 = State() } }

    /// How many answers are kept (for tests).
    var count: Int { state.withLock { $0.answers.count } }
}
