import SovariaQueue
import SovariaSync

extension PostgRESTOverlay {
    /// A session answering `read` over `cachedBody` and `related`: the cached answer parsed
    /// once, each write appended later applied alone to the rows the earlier ones left, and the
    /// answer derived from the last one by moving the rows that write touched when it can.
    ///
    /// Without related answers, the parse is the one a change feed's page makes of the same
    /// body, whichever comes first (kept by the overlay): a page does not parse again an answer a
    /// live query shows, nor a live query one a page just parsed.
    public func session(_ read: DataRequest, cachedBody: String?, related: [RelatedAnswer]) -> any OverlaySession {
        switch api.answerShape(of: read) {
        case .rows:
            if related.isEmpty, let cachedBody {
                return PostgRESTOverlaySession(
                    parsedAnswers.answer(to: read, body: cachedBody) {
                        cachedAnswer(of: read, cachedBody: cachedBody, related: [])
                    })
            }
            return PostgRESTOverlaySession(cachedAnswer(of: read, cachedBody: cachedBody, related: related))
        case .singleRow:
            let rows = cachedAnswer(of: read, cachedBody: SingleRowAnswer.rows(of: cachedBody), related: related)
            return SingleRowAnswer.Session(rows: PostgRESTOverlaySession(rows), cachedBody: cachedBody)
        case .other:
            return SingleRowAnswer.NotRowsSession(answer(read, cachedBody: cachedBody, writes: [], related: related))
        }
    }
}
