import Foundation
import SovariaQueue
import SovariaSync

extension PostgRESTOverlay {
    /// For each answer, the changes that can alter it (`OverlayEvaluator`'s contract): a change
    /// of a row the answer holds (by primary key), or an upsert of a row it does not hold whose
    /// new values match the read's filters (or may: a filter the overlay cannot decide counts as a
    /// match). Each change's row is parsed once for every answer.
    ///
    /// Every change counts for a read whose answer is not a list of rows, a page past an `offset`
    /// (a row before it moves the page), an answer that does not show the primary key, or one
    /// whose read the overlay leaves to the server.
    ///
    /// - Complexity: O(answers × changes) filter evaluations, plus one parse of each change's
    ///   row and of each answer whose body is not the one the last page parsed (kept in
    ///   `ParsedAnswers`, up to 8 MiB of bodies).
    public func changesThatCanAlter(
        _ answers: [(read: DataRequest, cachedBody: String)], among changes: [RowChange]
    ) -> [[Int]] {
        let everyChange = Array(changes.indices)
        let rows: [JSONObject?] = changes.map { change in
            guard case .upsert(let text) = change.operation, case .object(let row)? = try? JSONParser.parse(text)
            else { return nil }
            return row
        }
        // An upsert whose row cannot be read counts for every answer.
        let unreadable = Set(changes.indices.filter { changes[$0].operation != .delete && rows[$0] == nil })
        return answers.map { answer in
            guard api.answerShape(of: answer.read) == .rows else { return everyChange }
            let cached = parsedAnswers.answer(to: answer.read, body: answer.cachedBody) {
                cachedAnswer(of: answer.read, cachedBody: answer.cachedBody, related: [])
            }
            let primaryKey = cached.table.primaryKey
            guard cached.settled == nil, (cached.query.offset ?? 0) == 0,
                cached.cachedColumns.map({ $0.contains(primaryKey) }) ?? true
            else { return everyChange }
            return changes.indices.filter { index in
                if unreadable.contains(index) { return true }
                guard let row = rows[index] else {
                    // A delete (or a row that is no object) alters the answer only if it holds the key.
                    return Self.keyTexts(of: changes[index].key).contains { cached.positions[$0] != nil }
                }
                if let key = row[primaryKey], cached.positions[OverlayRows.keyText(key)] != nil { return true }
                // Not held: an upsert alters the answer only if its row matches the read.
                switch cached.readTruth(on: OverlayRows.Row(values: row, cachedIndex: nil, ordinal: 0)) {
                case .no, .null: return false
                case .yes, .unknown: return true
                }
            }
        }
    }

    /// The ways a key given as text can be held: as a string, and as a number when it reads as one
    /// (`7` may be a text key or an integer one).
    private static func keyTexts(of key: String) -> [String] {
        var texts = [OverlayRows.keyText(.string(key))]
        if Double(key) != nil { texts.append(OverlayRows.keyText(.number(key))) }
        return texts
    }
}
