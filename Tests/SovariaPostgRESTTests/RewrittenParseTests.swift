import Foundation
import SovariaQueue
import SovariaSync
import SovariaTestKit
import Testing

@_spi(Benchmarks) @testable import SovariaPostgREST

/// An answer a change feed's page rewrites is kept parsed for the next page, made from the rows
/// the evaluation wrote instead of a parse of the body (issue 62): on generated answers, reads
/// and pages, what is kept is what a parse of the body reads (rows, their text ranges,
/// positions, columns, kinds, order), and the next page's answer from it is the answer from a
/// fresh parse.
@Suite struct RewrittenParseTests {
    static let table = PostgRESTOverlay.Table(
        primaryKey: "id", columns: ["id", "name", "qty", "tags"], nonTextColumns: [])
    static let names = ["a", "b", "caf\u{E9}", "cafe\u{301}", "x\ny", "\"q\"", "", "\u{1F600}", "Z"]
    static let numbers = ["1", "2", "2.0", "10", "-3", "1e2", "0.5"]
    static let reads = [
        "select=id,name,qty&qty=eq.2&order=name", "select=id,name,qty,tags&order=qty.desc,id",
        "select=id,name&order=id", "qty=gt.1&order=name.nullsfirst,id", "select=id,qty", "select=id,name,qty&limit=5",
        "select=name,id,qty&name=neq.a&order=qty,name",
    ]

    /// A value for `column`: a number or `null` for `qty`, a string or `null` for `name`,
    /// anything for `tags`.
    static func value(of column: String, using random: inout SplitMix) -> String {
        let text =
            #""\#(names.randomElement(using: &random)!.replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n"))""#
        switch (column, Int.random(in: 0..<10, using: &random)) {
        case (_, 0): return "null"
        case ("qty", _): return numbers.randomElement(using: &random)!
        case ("name", _): return text
        case (_, 1): return #"["t",1,{"k":null}]"#
        case (_, 2...4): return numbers.randomElement(using: &random)!
        default: return text
        }
    }

    /// The server's rows: key → column → the value's JSON text.
    typealias ServerRows = [Int: [String: String]]

    /// Row `key`'s whole state, as the feed carries it, its columns in any order.
    static func row(_ key: Int, _ rows: ServerRows, numbered: Bool, using random: inout SplitMix) -> String {
        let fields = [#""id":\#(id(key, numbered))"#] + (rows[key] ?? [:]).map { #""\#($0.key)":\#($0.value)"# }
        return "{" + fields.shuffled(using: &random).joined(separator: ",") + "}"
    }

    /// Row `key` given new values in every column.
    static func renew(_ key: Int, in rows: inout ServerRows, using random: inout SplitMix) {
        rows[key] = Dictionary(
            uniqueKeysWithValues: ["name", "qty", "tags"].map { ($0, value(of: $0, using: &random)) })
    }

    /// A page of changes to `rows`: deletes, rows changed in every column, and (half the
    /// changes of a row the server holds) rows changed only in `tags`, which no read orders by.
    /// Row `key`'s id as JSON: a number, or a string (`"k7"`; `"\u{E9}7"` for a few, whose
    /// bytes are not ASCII).
    static func id(_ key: Int, _ numbered: Bool) -> String {
        numbered ? String(key) : key % 4 == 3 ? "\"\u{E9}\(key)\"" : "\"k\(key)\""
    }

    /// The key a change names: the id's text.
    static func keyText(_ key: Int, _ numbered: Bool) -> String {
        numbered ? String(key) : key % 4 == 3 ? "\u{E9}\(key)" : "k\(key)"
    }

    static func page(
        _ number: Int, of rows: inout ServerRows, numbered: Bool, using random: inout SplitMix
    ) -> [OverlayWrite] {
        (0..<Int.random(in: 1...8, using: &random)).map { index in
            let key = Int.random(in: 0..<12, using: &random)
            let operation: RowChange.Operation
            switch Int.random(in: 0..<10, using: &random) {
            case 0, 1:
                rows[key] = nil
                operation = .delete
            case 2...6 where rows[key] != nil:
                rows[key]?["tags"] = value(of: "tags", using: &random)
                operation = .upsert(row: row(key, rows, numbered: numbered, using: &random))
            default:
                renew(key, in: &rows, using: &random)
                operation = .upsert(row: row(key, rows, numbered: numbered, using: &random))
            }
            return OverlayWrite(
                change: RowChange(
                    position: Int64(number * 100 + index), table: "items", key: keyText(key, numbered),
                    operation: operation))
        }
    }

    @Test(arguments: Array(1...20) as [UInt64])
    func aRewrittenAnswerIsKeptAsAParseOfItsBodyWouldRead(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        // Ids that are numbers for odd seeds, strings (some not ASCII) for even ones.
        let numbered = seed % 2 == 1
        let overlay = PostgRESTOverlay(tables: ["items": Self.table], textOrder: .bytes)
        var kept = 0
        for (number, query) in Self.reads.enumerated() {
            let read = DataRequest(method: "GET", path: "/rest/v1/items?" + query)
            // The cached answer: the overlay's own evaluation of a few rows over nothing cached.
            var server: ServerRows = [:]
            let seeds = (0..<Int.random(in: 0...10, using: &random)).map { key in
                Self.renew(key, in: &server, using: &random)
                return OverlayWrite(
                    id: "s\(key)",
                    request: PostgREST.insert(
                        into: "items", json: Self.row(key, server, numbered: numbered, using: &random)),
                    isPending: false)
            }
            var body =
                PostgRESTOverlay(tables: ["items": Self.table], textOrder: .bytes)
                .answer(read, cachedBody: nil, writes: seeds).body ?? "[]"
            for page in 0..<10 {
                let writes = Self.page(number * 10 + page, of: &server, numbered: numbered, using: &random)
                let answer = overlay.answer(read, cachedBody: body, writes: writes)
                // The same page over a parse of the body, with nothing kept.
                let fresh = PostgRESTOverlay(tables: ["items": Self.table], textOrder: .bytes)
                let expected = fresh.cachedAnswer(of: read, cachedBody: body, related: []).answer(writes: writes)
                #expect(
                    answer == expected && answer.body.map { Array($0.utf8) } == expected.body.map { Array($0.utf8) },
                    "seed \(seed), \(query), page \(page)")
                guard answer.isExact, let next = answer.body else { break }
                if let parse = overlay.parsedAnswers.kept(read, body: next) {
                    kept += 1
                    let parsed = fresh.cachedAnswer(of: read, cachedBody: next, related: [])
                    #expect(parse.isSameParse(as: parsed), "seed \(seed), \(query), page \(page)\n\(next)")
                }
                body = next
            }
        }
        #expect(kept > 10, "most pages keep the answer they write")
    }

    /// Off (as the bench measures it), a page keeps nothing it wrote; the answers are the same.
    @Test func aPageKeepsNothingWhenToldNotTo() {
        var overlay = PostgRESTOverlay(tables: ["items": Self.table], textOrder: .bytes)
        overlay.keepsRewrittenParses = false
        let read = DataRequest(method: "GET", path: "/rest/v1/items?select=id,name&order=id")
        let change = RowChange(
            position: 1, table: "items", key: "k1", operation: .upsert(row: #"{"id":"k1","name":"b"}"#))
        let answer = overlay.answer(
            read, cachedBody: #"[{"id":"k1","name":"a"}]"#, writes: [OverlayWrite(change: change)])
        #expect(answer.body == #"[{"id":"k1","name":"b"}]"#)
        #expect(overlay.parsedAnswers.kept(read, body: answer.body ?? "") == nil)
        overlay.keepsRewrittenParses = true
        _ = overlay.answer(read, cachedBody: #"[{"id":"k1","name":"a"}]"#, writes: [OverlayWrite(change: change)])
        #expect(overlay.parsedAnswers.kept(read, body: answer.body ?? "") != nil)
    }
}
