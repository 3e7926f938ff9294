import SovariaQueue
@_spi(Diagnostics) import SovariaSync

/// A read of one row as a JSON object (`Accept: application/vnd.pgrst.object+json`): the
/// overlay evaluates it as the list of rows it selects, then answers the one row as PostgREST
/// does, or refuses it as PostgREST does when the rows are not one.
enum SingleRowAnswer {
    /// The cached object as a list of one row (`nil` and anything else as they are: an answer of
    /// no row, or one the list evaluation calls not rows).
    static func rows(of cachedBody: String?) -> String? {
        guard let cachedBody, cachedBody.utf8.first(where: { !isSpace($0) }) == UInt8(ascii: "{") else {
            return cachedBody
        }
        return "[" + cachedBody + "]"
    }

    /// The answer of the singular read, from the answer of its rows: the one row as an object; a
    /// refusal when the exact rows are not one; the cached object, inexact, when the rows are
    /// not known.
    static func answer(from rows: OverlayAnswer, cachedBody: String?) -> OverlayAnswer {
        var answer = rows
        let elements = rows.body.flatMap { body in (try? JSONParser.elements(of: body)).flatMap { $0 } }
        if let elements, let body = rows.body, elements.count == 1 {
            let utf8 = Array(body.utf8)
            answer.body = String(decoding: utf8[elements[0].range], as: UTF8.self)
        } else if let elements, rows.isExact, !rows.wantsRelatedAnswers {
            answer.body = nil
            answer.refusal = refusal(rowCount: elements.count)
        } else {
            answer.body = cachedBody
            if answer.isExact { answer.inexactReasons = [.cachedAnswerNotRows] }
        }
        return answer
    }

    /// PostgREST's answer to a singular read whose rows are not one (PGRST116).
    static func refusal(rowCount: Int) -> DataResponse {
        DataResponse(
            status: 406, headers: ["Content-Type": "application/json; charset=utf-8"],
            body: #"{"code":"PGRST116","details":"The result contains \#(rowCount) rows","hint":null,"#
                + #""message":"Cannot coerce the result to a single JSON object"}"#)
    }

    private static func isSpace(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\n") || byte == UInt8(ascii: "\t")
            || byte == UInt8(ascii: "\r")
    }

    /// The session of a singular read: its rows' session, each answer made singular.
    final class Session: OverlaySession {
        private let rows: PostgRESTOverlaySession
        private let cachedBody: String?

        init(rows: PostgRESTOverlaySession, cachedBody: String?) {
            self.rows = rows
            self.cachedBody = cachedBody
        }

        var estimatedBytes: Int { rows.estimatedBytes }

        var paths: OverlayPaths { rows.paths }

        func answer(writes: [OverlayWrite]) -> OverlayAnswer {
            SingleRowAnswer.answer(from: rows.answer(writes: writes), cachedBody: cachedBody)
        }
    }

    /// The session of a read of another shape than rows: one answer, whatever the writes.
    final class NotRowsSession: OverlaySession {
        private let fixed: OverlayAnswer

        init(_ answer: OverlayAnswer) { fixed = answer }

        var estimatedBytes: Int { fixed.body?.utf8.count ?? 0 }

        func answer(writes: [OverlayWrite]) -> OverlayAnswer { fixed }
    }
}
