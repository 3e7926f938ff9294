import SovariaQueue

/// An ``OverlayEvaluator``'s answers to one read over one cached answer, as the writes change:
/// what it read of the cached answer, and what the writes so far left, it may keep between
/// answers.
///
/// ``SovariaOffline`` keeps a session per read while its cached answer stays, and keeps the
/// latest answer beside it: a session is asked only when the writes changed.
///
/// - Important: ``answer(writes:)`` answers exactly what
///   ``OverlayEvaluator/answer(_:cachedBody:writes:related:)`` answers for the same inputs,
///   whichever way it computes it. Called from any task: a session guards its own state.
public protocol OverlaySession: AnyObject, Sendable {
    /// The answer with `writes` (oldest first) applied. A session that keeps state may apply
    /// only the writes after those of its last call when they extend them.
    func answer(writes: [OverlayWrite]) -> OverlayAnswer

    /// About how many bytes the session holds (the cached text, what it parsed of it): its
    /// weight in the controller's bounded set of sessions.
    var estimatedBytes: Int { get }

    /// How the session computed its answers so far, for tests and diagnostics.
    @_spi(Diagnostics) var paths: OverlayPaths { get }
}

extension OverlaySession {
    /// No path counted.
    @_spi(Diagnostics) public var paths: OverlayPaths { OverlayPaths() }
}
