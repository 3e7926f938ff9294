import SovariaQueue
import SovariaSync

/// A session of ``PostgRESTOverlay``, for the benchmark's memory row (`sovaria-bench`, in the
/// Benchmarks package): the bytes a session holds per cached row. SPI, not API: sessions stay
/// package, found by the sync layer through `IncrementalOverlayEvaluator`.
@_spi(Benchmarks) public final class OverlaySessionProbe: Sendable {
    private let session: any OverlaySession

    /// A session of `overlay` answering `read` over `cachedBody`: the cached answer parsed once.
    public init(_ overlay: PostgRESTOverlay, read: DataRequest, cachedBody: String?) {
        session = overlay.session(read, cachedBody: cachedBody, related: [])
    }

    /// The session's answer with `writes` applied.
    @discardableResult
    public func answer(writes: [OverlayWrite]) -> OverlayAnswer { session.answer(writes: writes) }

    /// The session's estimate of the bytes it holds.
    public var estimatedBytes: Int { session.estimatedBytes }
}
