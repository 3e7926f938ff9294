import SovariaQueue

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
