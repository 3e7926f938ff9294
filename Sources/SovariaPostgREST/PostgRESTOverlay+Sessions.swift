import SovariaQueue
import SovariaSync

extension PostgRESTOverlay: IncrementalOverlayEvaluator {
    /// A session answering `read` over `cachedBody` and `related`: the cached answer parsed once,
    /// each write appended later applied alone.
    package func session(_ read: DataRequest, cachedBody: String?, related: [RelatedAnswer]) -> any OverlaySession {
        PostgRESTOverlaySession(evaluation(of: read), cachedBody: cachedBody, related: related)
    }
}
