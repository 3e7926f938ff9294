import Foundation
import SovariaQueue
import SovariaSync
import SovariaTestKit
import Testing

@testable import SovariaPostgREST

/// A change feed's page rewrites the rows an answer holds in place where it can (issue 62): the
/// answer and the parse kept of it are the ones the evaluation gives, byte for byte, and every
/// page it cannot answer that way goes to the evaluation.
@Suite struct AnswerInPlaceTests {
    static let table = PostgRESTOverlay.Table(primaryKey: "id", columns: ["id", "name", "qty", "note"])

    /// The read `query` of `items` over `body`, parsed as a page finds it.
    static func cached(_ query: String, _ body: String, headers: [String: String] = [:]) -> OverlayCachedAnswer {
        let overlay = PostgRESTOverlay(tables: ["items": table], textOrder: .bytes)
        let read = DataRequest(method: "GET", path: "/rest/v1/items?" + query, headers: headers)
        return overlay.cachedAnswer(of: read, cachedBody: body, related: [])
    }

    /// Upserts of `rows` (JSON objects) as a page's changes.
    static func changes(_ rows: String...) -> [OverlayWrite] {
        rows.enumerated().map { index, row in
            OverlayWrite(
                change: RowChange(position: Int64(index + 1), table: "items", key: "?", operation: .upsert(row: row)))
        }
    }

    static let body = #"[{"id":"a","name":"x","qty":1,"note":null},{"id":"b","name":"y","qty":1,"note":"n"}]"#

    @Test func aChangeOfAColumnNoFilterOrOrderNamesIsWrittenInPlace() throws {
        let cached = Self.cached("qty=eq.1&order=id", Self.body)
        let writes = Self.changes(
            #"{"id":"b","name":"y2","qty":1,"note":"n"}"#, #"{"id":"a","name":"x","qty":1,"note":"m"}"#)
        let inPlace = try #require(cached.answerInPlace(writes: writes, pageRows: [:]))
        #expect(
            inPlace.answer.body
                == #"[{"id":"a","name":"x","qty":1,"note":"m"},{"id":"b","name":"y2","qty":1,"note":"n"}]"#)
        #expect(inPlace.answer.isExact && inPlace.parse != nil)
        #expect(OverlayCachedAnswer.same(inPlace, cached.evaluatedAnswerAndParse(writes: writes, pageRows: [:])))
        // The next page starts from the kept parse: its rows where the body holds them.
        let parse = try #require(inPlace.parse)
        let body = try #require(inPlace.answer.body)
        for row in parse.rows {
            let text = Array(body.utf8)[try #require(row.cachedRange)]
            #expect(try JSONParser.parse(String(decoding: text, as: UTF8.self)) == .object(row.values))
        }
    }

    /// The parse a rewrite makes keeps the columns' facts it learned, and the next page's rewrite
    /// from it is still the evaluation's: a name, then a kind the parse learned of another column
    /// (refused: a string where the parse learned a number), then an order column.
    @Test func theNextPageFromARewrittenParseIsTheEvaluations() throws {
        let cached = Self.cached("qty=eq.1", Self.body)
        let first = try #require(
            cached.answerInPlace(writes: Self.changes(#"{"id":"a","name":"x2","qty":1,"note":null}"#), pageRows: [:]))
        let parse = try #require(first.parse)
        #expect(parse.columnFacts?.count == 4, "the facts learned are kept")
        for row in [
            #"{"id":"b","name":"y2","qty":1,"note":"n"}"#, #"{"id":"a","name":"x3","qty":1,"note":"m"}"#,
            #"{"id":"b","name":"y","qty":"1","note":"n"}"#, #"{"id":"a","name":"x2","qty":1,"note":7}"#,
        ] {
            let writes = Self.changes(row)
            let evaluated = parse.evaluatedAnswerAndParse(writes: writes, pageRows: [:])
            if let next = parse.answerInPlace(writes: writes, pageRows: [:]) {
                #expect(OverlayCachedAnswer.same(next, evaluated), "\(row)")
            } else {
                #expect(parse.answerAndParse(writes: writes).answer == evaluated.answer, "\(row)")
            }
        }
        #expect(
            parse.answerInPlace(writes: Self.changes(#"{"id":"b","name":"y","qty":"1","note":"n"}"#), pageRows: [:])
                == nil)
        let ordered = try #require(
            Self.cached("qty=eq.1&order=name", Self.body).answerInPlace(
                writes: Self.changes(#"{"id":"a","name":"x","qty":1,"note":"m"}"#), pageRows: [:])?.parse)
        #expect(
            ordered.answerInPlace(writes: Self.changes(#"{"id":"a","name":"z","qty":1,"note":"m"}"#), pageRows: [:])
                == nil)
    }

    @Test func aFilterColumnChangedWhereTheFiltersStillKeepTheRowIsWrittenInPlace() throws {
        let cached = Self.cached("qty=in.(1,2)&order=id", Self.body)
        let writes = Self.changes(#"{"id":"a","name":"x","qty":2,"note":null}"#)
        let inPlace = try #require(cached.answerInPlace(writes: writes, pageRows: [:]))
        #expect(
            inPlace.answer.body
                == #"[{"id":"a","name":"x","qty":2,"note":null},{"id":"b","name":"y","qty":1,"note":"n"}]"#)
        #expect(OverlayCachedAnswer.same(inPlace, cached.evaluatedAnswerAndParse(writes: writes, pageRows: [:])))
    }

    @Test func anEchoOfTheRowsHeldWritesTheBodyAsTheEvaluationDoes() throws {
        // A body as PostgreSQL's json_agg writes it, with space between the rows.
        let spaced = #"[{"id":"a","name":"x","qty":1,"note":null}, {"id":"b","name":"y","qty":1,"note":"n"}]"#
        let cached = Self.cached("qty=eq.1", spaced)
        let writes = Self.changes(#"{"id":"a","name":"x","qty":1,"note":null}"#)
        let inPlace = try #require(cached.answerInPlace(writes: writes, pageRows: [:]))
        #expect(OverlayCachedAnswer.same(inPlace, cached.evaluatedAnswerAndParse(writes: writes, pageRows: [:])))
        // A change of another table leaves the body as it came.
        let elsewhere = [
            OverlayWrite(change: RowChange(position: 1, table: "other", key: "a", operation: .upsert(row: "{}")))
        ]
        let untouched = try #require(cached.answerInPlace(writes: elsewhere, pageRows: [:]))
        #expect(untouched.answer.body.map { Array($0.utf8) } == Array(spaced.utf8) && untouched.parse == nil)
    }

    /// Each page the rows cannot be rewritten in place for: the evaluation answers it.
    @Test(arguments: [
        ("qty=eq.1", #"{"id":"c","name":"z","qty":1,"note":null}"#, "a row not held"),
        ("qty=eq.1", #"{"id":"a","name":"x","qty":2,"note":null}"#, "a row the filters no longer keep"),
        ("name=ilike.caf*", #"{"id":"a","name":"caf\u00c9","qty":1,"note":null}"#, "a row the filters may not keep"),
        ("qty=eq.1&order=name", #"{"id":"a","name":"w","qty":1,"note":null}"#, "an order's column"),
        ("qty=eq.1", #"{"id":"a","name":"x","qty":"1","note":null}"#, "a string in a column of numbers"),
        ("qty=eq.1", #"{"id":"a","name":"x","qty":1,"note":7}"#, "a shown value of another kind"),
        ("qty=eq.1&limit=5", #"{"id":"a","name":"x2","qty":1,"note":null}"#, "a page with a limit"),
        ("qty=eq.1&offset=1", #"{"id":"a","name":"x2","qty":1,"note":null}"#, "a page past an offset"),
        ("select=id,label:name&qty=eq.1", #"{"id":"a","name":"x2","qty":1,"note":null}"#, "an alias"),
        ("qty=eq.1", "[1]", "a row that is not an object"),
    ])
    func aPageItCannotRewriteInPlaceIsEvaluated(query: String, row: String, why: String) throws {
        let cached = Self.cached(query, Self.body)
        let writes = Self.changes(row)
        #expect(cached.answerInPlace(writes: writes, pageRows: [:]) == nil, "\(why)")
        let (answer, _) = cached.answerAndParse(writes: writes)
        #expect(answer == cached.evaluatedAnswerAndParse(writes: writes, pageRows: [:]).answer, "\(why)")
    }

    /// Two changes of one row in a page, the first with a column the answer does not show: the
    /// second meets the row with that column too, and goes by name, as the evaluation does (here
    /// its string may be a number to the server: the evaluation answers).
    @Test func aRowAnEarlierChangeGaveAColumnIsMetByName() throws {
        let cached = Self.cached("select=id,name,qty,note&qty=eq.1", Self.body)
        let first = #"{"id":"a","name":"x","qty":1,"note":null,"extra":1}"#
        let inPlace = try #require(cached.answerInPlace(writes: Self.changes(first), pageRows: [:]))
        #expect(
            OverlayCachedAnswer.same(
                inPlace, cached.evaluatedAnswerAndParse(writes: Self.changes(first), pageRows: [:])))
        // The second change names the columns shown, the row now one more: it goes by name too.
        let shown = Self.changes(first, #"{"id":"a","name":"x2","qty":1,"note":null}"#)
        let rewritten = try #require(cached.answerInPlace(writes: shown, pageRows: [:]))
        #expect(OverlayCachedAnswer.same(rewritten, cached.evaluatedAnswerAndParse(writes: shown, pageRows: [:])))
        let writes = Self.changes(first, #"{"id":"a","name":"x2","qty":1,"note":null,"extra":"7"}"#)
        #expect(cached.answerInPlace(writes: writes, pageRows: [:]) == nil)
        #expect(
            cached.answerAndParse(writes: writes).answer
                == cached.evaluatedAnswerAndParse(writes: writes, pageRows: [:]).answer)
    }

    /// A string the server may hold as a number, in a column whose first value told a number, is
    /// left to the evaluation even where the change repeats it (a row whose columns are the held
    /// row's, compared by place).
    @Test func aStringInAColumnOfNumbersIsEvaluatedEvenAsAnEcho() throws {
        let mixed = #"[{"id":"a","name":"x","qty":1,"note":5},{"id":"b","name":"y","qty":1,"note":"5"}]"#
        let cached = Self.cached("qty=eq.1", mixed)
        for row in [#"{"id":"b","name":"y","qty":1,"note":"5"}"#, #"{"id":"b","name":"y2","qty":1,"note":"5"}"#] {
            let writes = Self.changes(row)
            #expect(cached.answerInPlace(writes: writes, pageRows: [:]) == nil, "\(row)")
            #expect(
                cached.answerAndParse(writes: writes).answer
                    == cached.evaluatedAnswerAndParse(writes: writes, pageRows: [:]).answer, "\(row)")
        }
    }

    /// A key spelled another way (`1.0` for `1`) finds its row, and changes the row's key text:
    /// the evaluation writes it, and keeps none of the old parse's places.
    @Test func aKeySpelledAnotherWayIsEvaluated() throws {
        let cached = Self.cached("qty=eq.1", #"[{"id":1,"name":"x","qty":1,"note":null}]"#)
        let writes = Self.changes(#"{"id":1.0,"name":"x2","qty":1,"note":null}"#)
        #expect(cached.answerInPlace(writes: writes, pageRows: [:]) == nil)
        let (answer, _) = cached.answerAndParse(writes: writes)
        #expect(answer.body == #"[{"id":1.0,"name":"x2","qty":1,"note":null}]"#)
    }

    @Test func aDeleteOrACountedReadIsEvaluated() {
        let delete = [OverlayWrite(change: RowChange(position: 1, table: "items", key: "a", operation: .delete))]
        #expect(Self.cached("qty=eq.1", Self.body).answerInPlace(writes: delete, pageRows: [:]) == nil)
        let counted = Self.cached("qty=eq.1", Self.body, headers: ["Prefer": "count=exact"])
        let writes = Self.changes(#"{"id":"a","name":"x2","qty":1,"note":null}"#)
        #expect(counted.answerInPlace(writes: writes, pageRows: [:]) == nil)
    }

    /// On generated answers and pages, every answer written in place is the evaluation's, and
    /// so is the parse kept of it; each seed writes some in place (about a quarter of its pages:
    /// half change whole rows, and most reads filter or order by `name`).
    @Test(arguments: Array(1...12) as [UInt64])
    func everyAnswerWrittenInPlaceIsTheEvaluations(seed: UInt64) throws {
        var random = SplitMix(seed: seed)
        let numbered = seed % 2 == 1
        let reads = RewrittenParseTests.reads + ["select=id,tags&order=id", "qty=in.(1,2,10)&select=tags,id,name"]
        var (inPlace, asked) = (0, 0)
        for (number, query) in reads.enumerated() {
            let overlay = PostgRESTOverlay(tables: ["items": RewrittenParseTests.table], textOrder: .bytes)
            let read = DataRequest(method: "GET", path: "/rest/v1/items?" + query)
            var server: RewrittenParseTests.ServerRows = [:]
            let seeds = (0..<Int.random(in: 1...10, using: &random)).map { key in
                RewrittenParseTests.renew(key, in: &server, using: &random)
                let row = RewrittenParseTests.row(key, server, numbered: numbered, using: &random)
                return OverlayWrite(
                    id: "s\(key)", request: PostgREST.insert(into: "items", json: row), isPending: false)
            }
            var body = overlay.answer(read, cachedBody: nil, writes: seeds).body ?? "[]"
            for page in 0..<8 {
                let writes =
                    Bool.random(using: &random)
                    ? Self.kindKeepingPage(number * 10 + page, of: &server, numbered: numbered, using: &random)
                    : RewrittenParseTests.page(number * 10 + page, of: &server, numbered: numbered, using: &random)
                let cached = overlay.cachedAnswer(of: read, cachedBody: body, related: [])
                // Half the pages with their rows parsed once, as a page's search for what its
                // changes reach parses them (rows in turn sharing their keys).
                let pageRows = page % 2 == 0 ? [:] : Self.pageRows(of: writes)
                let evaluated = cached.evaluatedAnswerAndParse(writes: writes, pageRows: pageRows)
                asked += 1
                if let rewritten = cached.answerInPlace(writes: writes, pageRows: pageRows) {
                    inPlace += 1
                    #expect(
                        OverlayCachedAnswer.same(rewritten, evaluated),
                        "seed \(seed), \(query), page \(page)\n\(body)\n\(rewritten.answer.body ?? "")")
                }
                guard evaluated.answer.isExact, let next = evaluated.answer.body else { break }
                body = next
            }
        }
        #expect(inPlace >= 5, "\(inPlace) of \(asked) pages written in place")
    }

    /// The rows `writes` upsert, parsed in turn as `PostgRESTOverlay`'s page parses them, by
    /// position.
    static func pageRows(of writes: [OverlayWrite]) -> TableReach.PageRows {
        var rows: TableReach.PageRows = [:]
        var keys: [String] = []
        for write in writes {
            guard case .change(let change) = write.effect, case .upsert(let text) = change.operation,
                let (row, isWrittenAsIs) = JSONParser.pageRow(text, sharingKeys: &keys)
            else { continue }
            rows[change.position] = (text, row, isWrittenAsIs)
        }
        return rows
    }

    /// A page of changes to `name` or `tags` of rows the server holds, mostly to a value of the
    /// kind the column held (a string for a string, a number for a number; a string or `null`
    /// for `null`).
    static func kindKeepingPage(
        _ number: Int, of rows: inout RewrittenParseTests.ServerRows, numbered: Bool, using random: inout SplitMix
    ) -> [OverlayWrite] {
        let keys = rows.keys.sorted()
        guard !keys.isEmpty else { return [] }
        return (0..<Int.random(in: 1...6, using: &random)).map { index in
            let key = keys.randomElement(using: &random)!
            let column = Bool.random(using: &random) ? "name" : "tags"
            let held = rows[key]?[column] ?? "null"
            let value: String
            switch held.first {
            case "\"", nil,
                "n" where Bool.random(using: &random):
                value = RewrittenParseTests.value(of: "name", using: &random)
            case "[": value = #"["u",\#(index)]"#
            case "n": value = "null"
            default: value = RewrittenParseTests.numbers.randomElement(using: &random)!
            }
            rows[key]?[column] = value
            var row = RewrittenParseTests.row(key, rows, numbered: numbered, using: &random)
            // Now and then as a server may write it: a space, an escape, a member repeated.
            switch Int.random(in: 0..<8, using: &random) {
            case 0: row = "{ " + row.dropFirst()
            case 1: row = row.replacingOccurrences(of: #""id":"#, with: #""\u0069d":"#)
            case 2: row = String(row.dropLast()) + #","\#(column)":\#(value)}"#
            default: break
            }
            return OverlayWrite(
                change: RowChange(
                    position: Int64(number * 100 + index), table: "items",
                    key: RewrittenParseTests.keyText(key, numbered), operation: .upsert(row: row)))
        }
    }

    /// Rows parsed one after another share their array of keys where their keys are the same,
    /// in the same order; an object among a row's values, or a row with other keys, keeps its own.
    @Test func rowsParsedInTurnShareTheirKeysOnlyWhereTheyAreTheSame() throws {
        var keys: [String] = []
        let texts = [
            #"{"a":1,"b":{"x":1,"y":2}}"#, #"{"a":2,"b":{"x":3}}"#, #"{"a":3}"#, #"{"b":4,"a":5}"#,
            #"{"a":6,"a":7,"b":8}"#, #"{"a":9,"b":10,"c":11}"#,
        ]
        var parsed: [JSONObject] = []
        for text in texts {
            guard case .object(let object) = try JSONParser.parse(text, sharingKeys: &keys) else {
                Issue.record("\(text) is not an object")
                return
            }
            // The same as a parse on its own.
            #expect(JSONValue.object(object).isIdentical(to: try JSONParser.parse(text)), "\(text)")
            parsed.append(object)
        }
        #expect(parsed.map(\.keys) == [["a", "b"], ["a", "b"], ["a"], ["b", "a"], ["a", "b"], ["a", "b", "c"]])
        #expect(parsed[4]["a"] == .number("7"))
        #expect(parsed[1]["b"] == .object(try #require(JSONParser.parse(#"{"x":3}"#).objectValue)))
    }

    /// A row whose keys are the last row's, one written with an escape, shares them as when
    /// written plainly; a key with an unescaped control character is refused in its place.
    @Test func aKeyWrittenWithAnEscapeIsStillTheLastRowsKey() throws {
        var keys: [String] = []
        var parsed: [JSONObject] = []
        for text in [#"{"id":1,"name":"a"}"#, #"{"\u0069d":2,"name":"b"}"#, #"{"id":3,"name":"c"}"#] {
            parsed.append(try #require(JSONParser.parse(text, sharingKeys: &keys).objectValue))
        }
        #expect(parsed.map(\.keys) == [["id", "name"], ["id", "name"], ["id", "name"]])
        #expect(parsed.map { $0["id"] } == [.number("1"), .number("2"), .number("3")])
        // The last row's key holds a control character (escaped there): written raw it is no JSON.
        _ = try JSONParser.parse(#"{"a\u0001":1}"#, sharingKeys: &keys)
        #expect(keys == ["a\u{1}"])
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse("{\"a\u{1}\":2}", sharingKeys: &keys) }
    }

    /// A changed row the body takes as its text is the row the evaluation writes; one written
    /// another way (a space, an escape, a member repeated) is written from its values.
    @Test func aRowTakenAsWrittenIsTheRowTheEvaluationWrites() throws {
        let cached = Self.cached("qty=eq.1", Self.body)
        for row in [
            #"{"id":"a","name":"x2","qty":1,"note":null}"#, #"{"id":"a","name": "x2","qty":1,"note":null}"#,
            #"{"id":"a","name":"x\u0032","qty":1,"note":null}"#,
            #"{"id":"a","name":"x2","qty":1,"note":null,"note":null}"#,
        ] {
            let writes = Self.changes(row)
            let inPlace = try #require(cached.answerInPlace(writes: writes, pageRows: Self.pageRows(of: writes)))
            #expect(
                OverlayCachedAnswer.same(inPlace, cached.evaluatedAnswerAndParse(writes: writes, pageRows: [:])),
                "\(row)")
            #expect(inPlace.answer.body?.contains(#"{"id":"a","name":"x2","qty":1,"note":null}"#) == true, "\(row)")
        }
    }

    /// A page's row is taken as written only where writing its parse gives its text back: no
    /// space between tokens, no escape, no key repeated at any depth; and then it does.
    @Test(arguments: [
        (#"{"id":"a","n":1.50,"t":["x",{"y":null}],"b":true}"#, true), (#"{"id":"a","s":"a b, c: d"}"#, true),
        (#"{"id":"é","s":"\#u{301}"}"#, true), (#"{ "id":"a"}"#, false), (#"{"id": "a"}"#, false),
        (#"{"id":"a","t":[1, 2]}"#, false), (#"{"id":"caf\u00e9"}"#, false), (#"{"i\u0064":"a"}"#, false),
        (#"{"id":"a","id":"a"}"#, false), (#"{"id":"a","o":{"x":1,"x":1}}"#, false), ("{\"id\":\"a\"}\n", false),
    ])
    func aPageRowIsTakenAsWrittenOnlyWhereWritingItGivesItBack(text: String, isWrittenAsIs: Bool) throws {
        var keys: [String] = []
        let (row, asIs) = try #require(JSONParser.pageRow(text, sharingKeys: &keys))
        #expect(asIs == isWrittenAsIs)
        #expect(try JSONValue.object(row).isIdentical(to: JSONParser.parse(text)))
        if asIs { #expect(Array(JSONValue.object(row).text.utf8) == Array(text.utf8)) }
    }

    /// A key spelled another way than the last row's (`é` decomposed after composed) keeps its
    /// own bytes: PostgreSQL's jsonb tells the two keys apart.
    @Test func aKeySpelledAnotherWayKeepsItsBytes() throws {
        var keys: [String] = []
        let composed = #"{"caf\#u{E9}":1,"b":2}"#
        let decomposed = #"{"cafe\#u{301}":1,"b":2}"#
        for text in [composed, decomposed, composed] {
            guard case .object(let object) = try JSONParser.parse(text, sharingKeys: &keys) else {
                Issue.record("\(text) is not an object")
                return
            }
            let expected = try #require(JSONParser.parse(text).objectValue)
            #expect(object.keys.map { Array($0.utf8) } == expected.keys.map { Array($0.utf8) }, "\(text)")
        }
        // One object after another within a row, too.
        let body = #"[{"id":1,"m":{"caf\#u{E9}":1},"n":{"cafe\#u{301}":2,"z":0}}]"#
        guard case .array(let rows) = try JSONParser.parse(body), case .object(let row) = rows[0],
            case .object(let nested)? = row["n"]
        else { throw Failure("not rows of objects") }
        #expect(nested.keys.map { Array($0.utf8) } == [Array("cafe\u{301}".utf8), Array("z".utf8)])
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
        init(_ description: String) { self.description = description }
    }
}

extension JSONValue {
    /// The object this value is, if it is one.
    fileprivate var objectValue: JSONObject? {
        if case .object(let object) = self { object } else { nil }
    }
}
