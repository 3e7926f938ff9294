import Foundation
import SovariaQueue
import SovariaSync
import Testing

@testable import SovariaPostgREST

/// The overlay's rules, one at a time, on hand-written answers; the differential test
/// (``OverlayDifferentialTests``) checks them against PostgreSQL itself.
@Suite struct PostgRESTOverlayTests {
    let overlay = PostgRESTOverlay(
        tables: ["items": .init(primaryKey: "id", defaults: ["qty": "0", "active": "true", "note": "null"])],
        textOrder: .bytes)

    static let cached = #"""
        [{"id":"a","name":"apple","qty":3,"active":true,"note":null},
         {"id":"b","name":"banana","qty":5,"active":false,"note":"ripe"},
         {"id":"c","name":"cherry","qty":1,"active":true,"note":null}]
        """#

    func read(_ query: String) -> DataRequest { DataRequest(method: "GET", path: "/rest/v1/items?" + query) }

    func pending(_ requests: DataRequest...) -> [OverlayWrite] {
        requests.enumerated().map { OverlayWrite(id: "w\($0.offset + 1)", request: $0.element, isPending: true) }
    }

    /// The answer's rows as `id` lists, and the answer.
    func ids(_ answer: OverlayAnswer) throws -> [String] {
        guard case .array(let rows) = try JSONParser.parse(try #require(answer.body)) else { return [] }
        return rows.compactMap { if case .object(let row) = $0, case .string(let id)? = row["id"] { id } else { nil } }
    }

    @Test func aPendingInsertShowsWithTheTableDefaultsAndIsMarkedPending() throws {
        let answer = overlay.answer(
            read("select=id,name,qty,active&order=name"), cachedBody: Self.cached,
            writes: pending(PostgREST.insert(into: "items", json: #"{"id":"n","name":"beet"}"#)))
        #expect(try ids(answer) == ["a", "b", "n", "c"])
        #expect(answer.isExact, "\(answer.inexactReasons)")
        #expect(answer.pendingRows == [PendingRow(key: #""n""#, writeIDs: ["w1"])])
        #expect(answer.body?.contains(#"{"id":"n","name":"beet","qty":0,"active":true}"#) == true)
    }

    @Test func anInsertThatDoesNotMatchTheFiltersIsNotShown() throws {
        let answer = overlay.answer(
            read("select=id&active=eq.true"), cachedBody: #"[{"id":"a"},{"id":"c"}]"#,
            writes: pending(PostgREST.insert(into: "items", json: #"{"id":"n","name":"x","active":false}"#)))
        #expect(try ids(answer) == ["a", "c"] && answer.isExact)
    }

    @Test func aPatchedRowThatNoLongerMatchesLeavesAndOneThatStillDoesChanges() throws {
        let answer = overlay.answer(
            read("select=id,qty&qty=gte.2&order=qty.desc"), cachedBody: #"[{"id":"b","qty":5},{"id":"a","qty":3}]"#,
            writes: pending(
                PostgREST.update("items", where: [.eq("id", "a")], json: #"{"qty":1}"#),
                PostgREST.update("items", where: [.eq("id", "b")], json: #"{"qty":2.0}"#)))
        #expect(try ids(answer) == ["b"])
        #expect(answer.isExact, "\(answer.inexactReasons)")
        #expect(answer.body == #"[{"id":"b","qty":2.0}]"#)
    }

    @Test func aPatchOfAFilterColumnOnRowsTheCacheMayNotHoldIsInexact() throws {
        // Rows with qty < 2 are not in the answer: setting qty on all of them could bring them in.
        let answer = overlay.answer(
            read("select=id,qty&qty=gte.2"), cachedBody: #"[{"id":"b","qty":5},{"id":"a","qty":3}]"#,
            writes: pending(PostgREST.update("items", where: [.lt("qty", "10")], json: #"{"qty":7}"#)))
        #expect(!answer.isExact)
        #expect(answer.inexactReasons.contains(.updateMayBringRowsIn(columns: ["qty"])))
        #expect(answer.body == #"[{"id":"b","qty":7},{"id":"a","qty":7}]"#, "what is known is still shown")
    }

    @Test func upsertsMergeByKeyAndIgnoreDuplicatesSkipsAKnownKey() throws {
        var merge = PostgREST.insert(into: "items", json: #"{"id":"b","name":"blueberry"}"#, upsert: true)
        merge.headers["Prefer"] = "return=minimal,resolution=merge-duplicates"
        var ignore = PostgREST.insert(into: "items", json: #"{"id":"a","name":"avocado"}"#)
        ignore.headers["Prefer"] = "resolution=ignore-duplicates"
        let answer = overlay.answer(read("select=id,name"), cachedBody: Self.cached, writes: pending(merge, ignore))
        #expect(answer.body == #"[{"id":"a","name":"apple"},{"id":"b","name":"blueberry"},{"id":"c","name":"cherry"}]"#)
        #expect(answer.isExact && answer.pendingRows == [PendingRow(key: #""b""#, writeIDs: ["w1"])])
    }

    /// `Prefer` as a person or a proxy writes it: spaces and tabs around each token, the
    /// resolution anywhere in the list; a token that only starts like one is not one.
    @Test(
        arguments: [
            (" return=minimal , \tresolution=merge-duplicates\t", "blueberry"),
            ("resolution=merge-duplicates,return=minimal", "blueberry"),
            ("resolution=merge-duplicates-please", nil),
            ("", nil),
        ] as [(String, String?)])
    func theResolutionIsReadFromAnyTokenOfPrefer(prefer: String, merged: String?) throws {
        var upsert = PostgREST.insert(into: "items", json: #"{"id":"b","name":"blueberry"}"#)
        upsert.headers["Prefer"] = prefer
        let answer = overlay.answer(read("select=id,name"), cachedBody: Self.cached, writes: pending(upsert))
        if let merged {
            #expect(answer.isExact && answer.body?.contains(merged) == true, "\(answer.body ?? "")")
        } else {
            #expect(answer.inexactReasons.contains { if case .insertKeyTaken = $0 { true } else { false } })
        }
    }

    @Test func aDeleteFromAFullPageIsInexactAndFromAPartPageIsExact() throws {
        let delete = PostgREST.delete(from: "items", where: [.eq("id", "a")])
        let full = overlay.answer(
            read("select=id&order=id&limit=3"), cachedBody: #"[{"id":"a"},{"id":"b"},{"id":"c"}]"#,
            writes: pending(delete))
        #expect(try ids(full) == ["b", "c"])
        #expect(full.inexactReasons.contains(.pageMayTakeRowsPastIt(limit: 3)))
        let part = overlay.answer(
            read("select=id&order=id&limit=5"), cachedBody: #"[{"id":"a"},{"id":"b"},{"id":"c"}]"#,
            writes: pending(delete))
        #expect(try ids(part) == ["b", "c"] && part.isExact)
    }

    @Test func anInsertIntoAFullPageKeepsTheLimit() throws {
        let answer = overlay.answer(
            read("select=id&order=id.desc&limit=2"), cachedBody: #"[{"id":"c"},{"id":"b"}]"#,
            writes: pending(PostgREST.insert(into: "items", json: #"{"id":"bb","name":"x"}"#)))
        #expect(try ids(answer) == ["c", "bb"] && answer.isExact)
    }

    @Test func ordersNullsAndSeveralColumnsAsPostgreSQLDoes() throws {
        let cached = #"[{"id":"x","rank":1},{"id":"y","rank":null}]"#
        let insert = PostgREST.insert(
            into: "items", json: #"[{"id":"z","name":"z","rank":null},{"id":"w","name":"w","rank":1}]"#)
        let ascending = overlay.answer(
            read("select=id,rank&order=rank,id"), cachedBody: cached, writes: pending(insert))
        #expect(try ids(ascending) == ["w", "x", "y", "z"], "nulls last ascending")
        let descending = overlay.answer(
            read("select=id,rank&order=rank.desc,id.desc"),
            cachedBody: #"[{"id":"y","rank":null},{"id":"x","rank":1}]"#,
            writes: pending(insert))
        #expect(try ids(descending) == ["z", "y", "x", "w"], "nulls first descending")
        let nullsLast = overlay.answer(
            read("select=id,rank&order=rank.desc.nullslast,id"),
            cachedBody: #"[{"id":"x","rank":1},{"id":"y","rank":null}]"#,
            writes: pending(insert))
        #expect(try ids(nullsLast) == ["w", "x", "y", "z"])
    }

    @Test func filtersCompareLikePostgreSQL() {
        let comparison = PostgRESTComparison(textOrderIsBytes: true)
        func check(_ filter: String, _ value: String) -> Truth {
            let parts = filter.split(separator: "=", maxSplits: 1).map(String.init)
            let condition = PostgRESTQuery.condition(parts[0], parts[1])!
            return comparison.evaluate(condition, on: try? JSONParser.parse(value))
        }
        #expect(check("qty=eq.3", "3.0") == .yes)
        #expect(check("qty=gt.2.5", "3.5") == .yes, "a column that prints 3.5 is not an integer one")
        #expect(check("qty=gt.2.5", "3") == .unknown, "an integer column refuses 2.5; a numeric one takes it")
        #expect(check("qty=eq.003", "3") == .yes && check("qty=eq.1e0", "1") == .unknown)
        #expect(check("qty=eq.\t3\n", "3") == .yes && check("qty=eq.\u{A0}3", "3") == .unknown, "C spaces only")
        #expect(check("qty=eq.x", "3") == .unknown, "PostgreSQL refuses the operand")
        #expect(check("qty=eq.+abc", "3") == .unknown && check("qty=eq.3abc", "3") == .unknown)
        #expect(check("qty=eq.+3", "3") == .yes && check("qty=lt. 4 ", "3") == .yes)
        #expect(check("qty=eq.3", "null") == .null)
        #expect(check("qty=not.eq.3", "null") == .null, "NOT NULL is still NULL")
        #expect(check("note=is.null", "null") == .yes)
        #expect(check("active=is.true", "false") == .no)
        #expect(check("active=eq.t", "true") == .yes)
        #expect(check("name=in.(apple,\"b,c\")", #""b,c""#) == .yes)
        #expect(check("name=like.*pp*", #""apple""#) == .yes)
        #expect(check("name=like.a_p*", #""apple""#) == .yes)
        #expect(check("name=ilike.APP*", #""apple""#) == .yes)
        #expect(check("name=like.A*", #""apple""#) == .no)
        #expect(check("name=gt.B", #""apple""#) == .yes, "byte order: lowercase after uppercase")
        let unknownOrder = PostgRESTComparison(textOrderIsBytes: false)
        let condition = PostgRESTQuery.condition("name", "gt.B")!
        #expect(unknownOrder.evaluate(condition, on: .string("apple")) == .unknown)
    }

    @Test func whatTheOverlayCannotEvaluateIsSaidAndTheCachedAnswerShown() {
        let embedded = overlay.answer(
            read("select=id,lists(name)"), cachedBody: Self.cached,
            writes: pending(PostgREST.insert(into: "items", json: #"{"id":"n","name":"x"}"#)))
        #expect(embedded.body == Self.cached && !embedded.isExact)
        let missing = overlay.answer(
            read("select=id,rank"), cachedBody: #"[{"id":"a","rank":2}]"#,
            writes: pending(PostgREST.insert(into: "items", json: #"{"id":"n","name":"x"}"#)))
        #expect(missing.inexactReasons.contains(.columnsNotSet(["rank"])))
        let unknownText = PostgRESTOverlay().answer(
            read("select=id,name&order=name"), cachedBody: #"[{"id":"a","name":"apple"}]"#,
            writes: pending(PostgREST.insert(into: "items", json: #"{"id":"n","name":"Zed"}"#)))
        #expect(!unknownText.isExact, "text order under an unknown collation is not guessed")
    }

    @Test func withNothingCachedThePendingInsertsAnswer() throws {
        let answer = overlay.answer(
            read("select=id,name&order=id"), cachedBody: nil,
            writes: pending(
                PostgREST.insert(into: "items", json: #"{"id":"n2","name":"two"}"#),
                PostgREST.insert(into: "items", json: #"{"id":"n1","name":"one"}"#)))
        #expect(try ids(answer) == ["n1", "n2"] && !answer.isExact)
        #expect(overlay.answer(read("select=id"), cachedBody: nil, writes: []).body == nil)
    }

    @Test func aSyncedWriteShowsButIsNotPending() throws {
        let answer = overlay.answer(
            read("select=id"), cachedBody: #"[{"id":"a"}]"#,
            writes: [
                OverlayWrite(
                    id: "s", request: PostgREST.insert(into: "items", json: #"{"id":"s","name":"x"}"#), isPending: false
                )
            ])
        #expect(try ids(answer) == ["a", "s"] && answer.pendingRows.isEmpty)
    }

    @Test func jsonRoundTripsEscapesAndNumbersAsWritten() throws {
        let text = #"[{"a":"é\n\"\u0001\ud83d\ude00","b":1.50,"c":[true,false,null],"d":{}}]"#
        let value = try JSONParser.parse(text)
        #expect(value.text == #"[{"a":"é\n\"\u0001😀","b":1.50,"c":[true,false,null],"d":{}}]"#)
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse("[1,]") }
        #expect(throws: JSONParser.Failure.self) { try JSONParser.parse(#"{"a":01}"#) == .null }
    }

    @Test func whatTheReviewFoundIsNeverCalledExact() throws {
        // A write whose filter cannot be evaluated leaves the columns it sets unknown for later ones.
        let cached = #"[{"id":"a","name":"café","tag":null}]"#
        let unknownThenKnown = overlay.answer(
            read("select=id,name,tag"), cachedBody: cached,
            writes: pending(
                PostgREST.update(
                    "items", where: [PostgREST.Filter(column: "name", condition: "ilike.caf*")], json: #"{"tag":"t"}"#),
                PostgREST.update("items", where: [.eq("id", "a"), .eq("tag", "t")], json: #"{"name":"x"}"#)))
        #expect(!unknownThenKnown.isExact)
        // A delete that cannot be evaluated may have removed a row.
        let maybeDeleted = overlay.answer(
            read("select=id"), cachedBody: #"[{"id":"a"}]"#,
            writes: pending(PostgREST.delete(from: "items", where: [.eq("qty", "3")])))
        #expect(!maybeDeleted.isExact)
        // A key changed by a patch is where later writes find the row.
        let moved = overlay.answer(
            read("select=id,name"), cachedBody: #"[{"id":"a","name":"x"}]"#,
            writes: pending(
                PostgREST.update("items", where: [.eq("id", "a")], json: #"{"id":"b"}"#),
                PostgREST.update("items", where: [.eq("id", "b")], json: #"{"name":"y"}"#)))
        #expect(moved.body == #"[{"id":"b","name":"y"}]"#)
        // Limits and orders on writes, writes to other tables or functions, Range headers.
        let limited = overlay.answer(
            read("select=id"), cachedBody: #"[{"id":"a"},{"id":"b"}]"#,
            writes: pending(
                DataRequest(method: "DELETE", path: "/rest/v1/items?order=id&limit=1", headers: [:], body: nil)))
        #expect(!limited.isExact)
        let rpc = overlay.answer(
            read("select=id"), cachedBody: #"[{"id":"a"}]"#,
            writes: pending(DataRequest(method: "POST", path: "/rest/v1/rpc/archive_all", headers: [:], body: "{}")))
        #expect(!rpc.isExact && rpc.body == #"[{"id":"a"}]"#)
        // A Range header is the page it names (issue 61): without an order, a page that fills
        // up is PostgreSQL's pick.
        var ranged = read("select=id")
        ranged.headers["Range"] = "0-0"
        #expect(!overlay.answer(ranged, cachedBody: #"[{"id":"a"}]"#, writes: pending(Self.insertN)).isExact)
        ranged.headers["Range"] = "0-1"
        let page = overlay.answer(ranged, cachedBody: #"[{"id":"a"}]"#, writes: pending(Self.insertN))
        #expect(page.isExact && page.body == #"[{"id":"a"},{"id":"n"}]"#)
        // A timestamp (not text) compares only by equal spellings.
        let timestamps = PostgRESTOverlay(
            tables: ["items": .init(nonTextColumns: ["at"])], textOrder: .bytes)
        let patched = timestamps.answer(
            read("select=id,at"), cachedBody: #"[{"id":"a","at":"2026-01-01T00:00:00+00:00"}]"#,
            writes: pending(
                PostgREST.update(
                    "items", where: [PostgREST.Filter(column: "at", condition: "eq.2026-01-01T00:00:00Z")],
                    json: #"{"id":"z"}"#)))
        #expect(!patched.isExact)
        // LIKE on long text does not recurse.
        let long = String(repeating: "ab", count: 50_000) + "x"
        #expect(PostgRESTComparison.like(Array(long.unicodeScalars), Array("%a%x".unicodeScalars)) == .yes)
        #expect(PostgRESTComparison.like(Array(long.unicodeScalars), Array("%y%".unicodeScalars)) == .no)
    }

    static let insertN = PostgREST.insert(into: "items", json: #"{"id":"n","name":"x"}"#)

    /// A read's query is parsed once per path (``ParsedAnswers/query(of:)``), and two paths that
    /// spell one text two ways (`é` composed, and `e` with a combining accent) are two queries:
    /// PostgreSQL compares their filters' bytes, and so does the overlay.
    @Test func twoSpellingsOfOneFilterAreTwoQueries() throws {
        let composed = read("select=id,name&name=eq.caf\u{E9}")
        let decomposed = read("select=id,name&name=eq.cafe\u{301}")
        #expect(composed.path == decomposed.path, "Swift calls the two paths equal")
        let insert = PostgREST.insert(into: "items", json: #"{"id":"n","name":"caf\#u{E9}"}"#)
        let (composedBody, decomposedBody) = (
            #"[{"id":"a","name":"caf\#u{E9}"}]"#, #"[{"id":"a","name":"cafe\#u{301}"}]"#
        )
        for (read, body, shown) in [
            (composed, composedBody, ["a", "n"]), (decomposed, decomposedBody, ["a"]),
            (composed, composedBody, ["a", "n"]),
        ] {
            let answer = overlay.answer(read, cachedBody: body, writes: pending(insert))
            #expect(try ids(answer) == shown && answer.isExact, "\(read.path.unicodeScalars.map(\.value)) \(answer)")
        }
    }

    /// The parses kept of answers (``ParsedAnswers``) are by read, byte for byte: two paths, two
    /// header values or two bodies Swift calls equal (`é` composed or not) are two reads, and
    /// one set of headers made in another order is one read.
    @Test func keptParsesAreByTheReadsBytes() {
        let answers = ParsedAnswers()
        let body = #"[{"id":"a","name":"x"}]"#
        var parses = 0
        func meet(_ read: DataRequest) {
            _ = answers.answer(to: read, body: body) {
                parses += 1
                return overlay.cachedAnswer(of: read, cachedBody: body, related: [])
            }
        }
        let composed = read("select=id,name&name=eq.caf\u{E9}")
        let decomposed = read("select=id,name&name=eq.cafe\u{301}")
        meet(composed)
        meet(composed)
        #expect(parses == 1, "kept")
        meet(decomposed)
        #expect(parses == 2, "a path of other bytes")
        #expect(answers.kept(composed, body: body) != nil && answers.kept(decomposed, body: body) != nil)

        var headers = composed
        headers.headers = ["Range": "0-9", "Accept": "application/json", "X-Note": "caf\u{E9}"]
        var reordered = composed
        reordered.headers["X-Note"] = "caf\u{E9}"
        reordered.headers["Accept"] = "application/json"
        reordered.headers["Range"] = "0-9"
        meet(headers)
        meet(reordered)
        #expect(parses == 3, "one set of headers, in either order")
        var respelled = headers
        respelled.headers["X-Note"] = "cafe\u{301}"
        meet(respelled)
        #expect(parses == 4, "a header value of other bytes")
        var withBody = composed
        withBody.body = "caf\u{E9}"
        var otherBody = composed
        otherBody.body = "cafe\u{301}"
        var emptyBody = composed
        emptyBody.body = ""
        for read in [withBody, otherBody, emptyBody] { meet(read) }
        #expect(parses == 7, "each body, and an empty one beside none")
        meet(otherBody)
        #expect(parses == 7)
    }

    /// A change that sets a held row's columns to the values they hold, byte for byte, leaves
    /// the row as the server sent it: its text (here an escape the change spells otherwise) and
    /// its place. One column that differs is written in the change's spelling.
    @Test func aChangeWithTheValuesARowHoldsKeepsTheRowsText() throws {
        let cached = #"[{"id":"a","name":"caf\u00e9","qty":3},{"id":"b","name":"pear","qty":5}]"#
        let same = RowChange(
            position: 1, table: "items", key: "a", operation: .upsert(row: #"{"qty":3,"name":"caf\#u{E9}","id":"a"}"#))
        let kept = overlay.answer(
            read("select=id,name,qty&order=qty"), cachedBody: cached, writes: [OverlayWrite(change: same)])
        #expect(kept.body == cached && kept.isExact)
        let renamed = RowChange(
            position: 2, table: "items", key: "a", operation: .upsert(row: #"{"qty":3,"name":"plum","id":"a"}"#))
        let written = overlay.answer(
            read("select=id,name,qty&order=qty"), cachedBody: cached, writes: [OverlayWrite(change: renamed)])
        #expect(written.body == #"[{"id":"a","name":"plum","qty":3},{"id":"b","name":"pear","qty":5}]"#)
    }

    /// A value Swift calls equal but whose bytes differ (`é` composed against `e` and a combining
    /// accent, `1.0` against `1`) is a change: the answer holds the change's bytes, as the
    /// server's next answer would.
    @Test func aValueOfOtherBytesIsAChangeThoughSwiftCallsItEqual() throws {
        let cached = #"[{"id":"a","name":"caf\#u{E9}","qty":1}]"#
        let change = RowChange(
            position: 1, table: "items", key: "a",
            operation: .upsert(row: #"{"id":"a","name":"cafe\#u{301}","qty":1.0}"#))
        #expect(JSONValue.string("caf\u{E9}") == .string("cafe\u{301}"), "Swift calls the two spellings equal")
        let answer = overlay.answer(
            read("select=id,name,qty"), cachedBody: cached, writes: [OverlayWrite(change: change)])
        let body = try #require(answer.body)
        #expect(Array(body.utf8) == Array(#"[{"id":"a","name":"cafe\#u{301}","qty":1.0}]"#.utf8) && answer.isExact)
    }

    /// A value another cached answer lent a row (a column this answer does not select, or a row
    /// this answer left out) is not the server's word for this answer: a write that sets it to
    /// that value still counts as a change, and the read's filters decide again.
    @Test func aValueAnotherAnswerLentIsStillChangedByAWriteOfTheSameValue() throws {
        let open = read("select=id,name&done=eq.false")
        let everyRow = RelatedAnswer(
            read: read("select=id,done"), body: #"[{"id":"a","done":true},{"id":"b","done":false}]"#)
        let finish = PostgREST.update("items", where: [.eq("id", "a")], json: #"{"done":true}"#)
        let finished = overlay.answer(
            open, cachedBody: #"[{"id":"a","name":"apple"}]"#, writes: pending(finish), related: [everyRow])
        #expect(try ids(finished) == [], "the write makes a's done true: it leaves the answer")
        let reopen = PostgREST.update("items", where: [.eq("id", "b")], json: #"{"done":false}"#)
        let reopened = overlay.answer(
            open, cachedBody: #"[{"id":"a","name":"apple"}]"#, writes: pending(reopen), related: [everyRow])
        #expect(try ids(reopened).contains("b"), "the write makes b's done false: it enters the answer")
    }
}
