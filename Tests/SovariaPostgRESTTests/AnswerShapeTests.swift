import Foundation
import SovariaQueue
import SovariaSync
import Testing

@testable import SovariaPostgREST

/// What shapes a PostgREST answer besides its path (issue 52): the headers a read's identity
/// keeps, the schema a table belongs to, the shape the overlay answers in (rows, one object, or
/// a shape it leaves alone), and the empty parameters PostgREST reads its own way.
@Suite struct AnswerShapeTests {
    let api = PostgREST()
    let overlay = PostgRESTOverlay(tables: ["items": .init(primaryKey: "id")], textOrder: .bytes)

    static let cached = #"[{"id":"a","name":"apple"},{"id":"b","name":"banana"}]"#

    func read(_ query: String, _ headers: [String: String] = [:]) -> DataRequest {
        DataRequest(method: "GET", path: "/rest/v1/items?" + query, headers: headers)
    }

    func pending(_ requests: DataRequest...) -> [OverlayWrite] {
        requests.enumerated().map { OverlayWrite(id: "w\($0.offset + 1)", request: $0.element, isPending: true) }
    }

    // MARK: - The identity's headers

    @Test func theHeadersThatShapeTheAnswerArePartOfTheIdentityAndNoOthers() {
        let plain = ReadIdentity(read("select=id"), api: api)
        let variants: [[String: String]] = [
            ["Accept": "application/vnd.pgrst.object+json"], ["Accept-Profile": "other"], ["Accept": "text/csv"],
            ["Range": "0-0"], ["Range-Unit": "rows"], ["Prefer": "count=exact"], ["Prefer": "timezone=UTC"],
        ]
        for headers in variants {
            #expect(ReadIdentity(read("select=id", headers), api: api) != plain, "\(headers)")
        }
        // Headers that ask for the plain answer, or do not shape it, share its identity.
        let same: [[String: String]] = [
            ["Accept": "application/json"], ["Accept": "*/*"], ["Accept-Profile": "public"], ["Range-Unit": "items"],
            ["Prefer": "return=minimal"], ["Authorization": "Bearer x"], ["If-None-Match": "\"e\""],
        ]
        for headers in same {
            #expect(ReadIdentity(read("select=id", headers), api: api) == plain, "\(headers)")
        }
    }

    @Test func headerNamesInAnyCaseAndValuesWithSpacesMakeOneIdentity() {
        let a = ReadIdentity(read("select=id", ["Accept-Profile": "other", "Prefer": "count=exact"]), api: api)
        let b = ReadIdentity(
            read("select=id", ["accept-profile": " other ", "PREFER": "return=minimal,  count=exact"]), api: api)
        #expect(a == b && a.cacheKey == b.cacheKey)
    }

    @Test func theCacheKeyGivesBackTheIdentityAndItsRequestWithTheHeaders() throws {
        let request = read("select=id&order=id", ["Accept-Profile": "other", "Range": "0-4", "Prefer": "count=exact"])
        let identity = ReadIdentity(request, api: api)
        let parsed = try #require(ReadIdentity(cacheKey: identity.cacheKey, api: api))
        #expect(parsed == identity)
        #expect(parsed.request.header("Accept-Profile") == "other" && parsed.request.header("Range") == "0-4")
        #expect(parsed.request.header("Prefer") == "count=exact" && parsed.table == "other.items")
        // A read with no shaping header keeps the key earlier versions stored.
        #expect(ReadIdentity(read("select=id"), api: api).cacheKey == "GET /rest/v1/items?select=id")
    }

    @Test func aTableIsItsSchemaAndName() {
        #expect(api.table(of: read("select=id")) == "items")
        #expect(api.table(of: read("select=id", ["Accept-Profile": "public"])) == "items")
        #expect(api.table(of: read("select=id", ["Accept-Profile": "other"])) == "other.items")
        let write = PostgREST.insert(into: "items", json: #"{"id":"x"}"#)
        var other = write
        other.setHeader("Content-Profile", "other")
        #expect(api.table(of: write) == "items" && api.table(of: other) == "other.items")
        // A GET's Content-Profile and a write's Accept-Profile choose nothing.
        #expect(api.table(of: read("select=id", ["Content-Profile": "other"])) == "items")
        var odd = write
        odd.setHeader("Accept-Profile", "other")
        #expect(api.table(of: odd) == "items")
    }

    @Test func aPendingInsertOfAnotherSchemaIsNotAppliedToTheDefaultSchemasRead() throws {
        var elsewhere = PostgREST.insert(into: "items", json: #"{"id":"z","name":"zucchini"}"#)
        elsewhere.setHeader("Content-Profile", "other")
        // The controller gives the overlay the writes of the read's table: none here.
        #expect(api.table(of: elsewhere) != api.table(of: read("select=id,name")))
        #expect(api.table(of: elsewhere) == api.table(of: read("select=id,name", ["Accept-Profile": "other"])))
    }

    // MARK: - Shapes

    @Test func aCharsetOrAWeightLeavesTheShapeAlone() {
        #expect(api.answerShape(of: read("", ["Accept": "application/json; charset=utf-8"])) == .rows)
        #expect(api.answerShape(of: read("", ["Accept": "application/vnd.pgrst.object+json;q=0.9"])) == .singleRow)
        #expect(api.answerShape(of: read("", ["ACCEPT": "Application/Vnd.Pgrst.Object+JSON"])) == .singleRow)
    }

    @Test func aSingularReadIsAnsweredWithOneObject() throws {
        let single = read("select=id,name&id=eq.a", ["Accept": "application/vnd.pgrst.object+json"])
        let answer = overlay.answer(
            single, cachedBody: #"{"id":"a","name":"apple"}"#,
            writes: pending(PostgREST.update("items", where: [.eq("id", "a")], json: #"{"name":"apricot"}"#)))
        #expect(answer.body == #"{"id":"a","name":"apricot"}"# && answer.isExact, "\(answer.inexactReasons)")
        #expect(answer.refusal == nil)
    }

    @Test func withNothingCachedASingularReadOfAnOfflineInsertIsAnObject() throws {
        let single = read("select=id,name&id=eq.n", ["Accept": "application/vnd.pgrst.object+json"])
        let answer = overlay.answer(
            single, cachedBody: nil, writes: pending(PostgREST.insert(into: "items", json: #"{"id":"n","name":"nut"}"#))
        )
        // An object, not an array (with nothing cached the overlay may not know every column).
        #expect(answer.body?.hasPrefix("{") == true && answer.body?.contains(#""name":"nut""#) == true)
    }

    @Test func aSingularReadWhoseRowsAreNotOneIsRefusedAsPostgRESTDoes() throws {
        let single = read("select=id,name&id=eq.a", ["Accept": "application/vnd.pgrst.object+json"])
        let deleted = overlay.answer(
            single, cachedBody: #"{"id":"a","name":"apple"}"#,
            writes: pending(PostgREST.delete(from: "items", where: [.eq("id", "a")])))
        #expect(deleted.body == nil && deleted.isExact)
        #expect(deleted.refusal?.status == 406 && deleted.refusal?.body.contains("PGRST116") == true)
        #expect(deleted.refusal?.body.contains("The result contains 0 rows") == true)
        // The same through the session the controller keeps.
        let session = overlay.session(single, cachedBody: #"{"id":"a","name":"apple"}"#, related: [])
        let sessionAnswer = session.answer(writes: pending(PostgREST.delete(from: "items", where: [.eq("id", "a")])))
        #expect(sessionAnswer == deleted)
        // Two rows: refused too (plurality by Prefer, as a newer PostgREST spells it).
        let both = read("select=id,name&order=id", ["Prefer": "plurality=singular"])
        let two = overlay.answer(
            both, cachedBody: #"{"id":"a","name":"apple"}"#,
            writes: pending(PostgREST.insert(into: "items", json: #"{"id":"x","name":"x"}"#)))
        #expect(two.body == nil && two.refusal?.body.contains("The result contains 2 rows") == true)
    }

    @Test(arguments: [
        "text/csv", "application/vnd.pgrst.array+json;nulls=stripped", "application/geo+json",
        "application/vnd.pgrst.object+json;nulls=stripped",
    ])
    func anAnswerOfAnotherShapeIsNeverEvaluatedAsRows(accept: String) throws {
        let csv = read("select=id,name", ["Accept": accept])
        let answer = overlay.answer(
            csv, cachedBody: "id,name\na,apple", writes: pending(PostgREST.insert(into: "items", json: #"{"id":"n"}"#)))
        #expect(answer.body == "id,name\na,apple")
        #expect(answer.inexactReasons == [.answerNotRows("Accept: " + accept)])
        let session = overlay.session(csv, cachedBody: "id,name\na,apple", related: [])
        #expect(session.answer(writes: pending(PostgREST.insert(into: "items", json: #"{"id":"n"}"#))) == answer)
    }

    // MARK: - Empty parameters

    @Test func anEmptySelectIsEveryColumnAsPostgRESTReadsIt() throws {
        // PostgREST's QuerySpec: "empty root select gives all columns".
        let answer = overlay.answer(
            read("select=&order=id"), cachedBody: Self.cached,
            writes: pending(PostgREST.insert(into: "items", json: #"{"id":"c","name":"cherry"}"#)))
        #expect(answer.isExact, "\(answer.inexactReasons)")
        #expect(answer.body?.contains(#"{"id":"a","name":"apple"}"#) == true)
        #expect(answer.body?.contains(#"{"id":"c","name":"cherry"}"#) == true)
        #expect(answer.body?.contains("{}") == false)
    }

    @Test(arguments: ["order=", "order=id,", "select=id,,name", "limit=", "offset=", "or=()", "name=eq.", "name=gt."])
    func anEmptyValueIsNeverReadSilently(query: String) throws {
        let answer = overlay.answer(
            read(query), cachedBody: Self.cached,
            writes: pending(PostgREST.insert(into: "items", json: #"{"id":"c","name":"cherry"}"#)))
        #expect(!answer.isExact, "\(query) is PostgREST's error or a comparison the overlay cannot type")
        #expect(answer.body == Self.cached)
    }
}

/// The feed's changes of a table of another schema (issue 52): `ChangeFeed.sql` names its feed
/// `schema.table`, and the change applies to that schema's answers only.
@Suite struct ChangeFeedSchemaTests {
    final class NoServer: SyncTransport {
        func send(_ request: DataRequest) async throws -> DataResponse { DataResponse(status: 500) }
    }

    /// A change names its row by the key's text: a number key is found by its digits, a text key
    /// as written, the empty string included.
    @Test func aChangeFindsItsRowByTheKeysTextWhateverTheKeysType() {
        let overlay = PostgRESTOverlay(
            tables: ["notes": .init(primaryKey: "key"), "counts": .init(primaryKey: "id")], textOrder: .bytes)
        func answer(_ table: String, _ cached: String, _ change: RowChange) -> OverlayAnswer {
            overlay.answer(
                DataRequest(method: "GET", path: "/rest/v1/\(table)?select=*"), cachedBody: cached,
                writes: [OverlayWrite(change: change)])
        }
        let blank = answer(
            "notes", #"[{"key":"","title":"blank"},{"key":"k","title":"old"}]"#,
            RowChange(position: 1, table: "notes", key: "", operation: .delete))
        #expect(blank.body == #"[{"key":"k","title":"old"}]"# && blank.isExact)
        let seven = answer(
            "counts", #"[{"id":7,"n":1},{"id":8,"n":2}]"#,
            RowChange(position: 2, table: "counts", key: "7", operation: .upsert(row: #"{"id":7,"n":5}"#)))
        #expect(seven.body == #"[{"id":7,"n":5},{"id":8,"n":2}]"# && seven.isExact)
        let gone = answer(
            "counts", #"[{"id":7,"n":1},{"id":8,"n":2}]"#,
            RowChange(position: 3, table: "counts", key: "8", operation: .delete))
        #expect(gone.body == #"[{"id":7,"n":1}]"# && gone.isExact)
    }

    @Test func aChangeOfAnotherSchemasTableAppliesToThatSchemasAnswersOnly() {
        // Each schema's table keyed by `key`: the overlay finds a change's row by its own table's key.
        let overlay = PostgRESTOverlay(
            tables: ["other.notes": .init(primaryKey: "key"), "notes": .init(primaryKey: "key")], textOrder: .bytes)
        let cached = #"[{"key":"k","title":"old"}]"#
        let plain = DataRequest(method: "GET", path: "/rest/v1/notes?select=key,title")
        var other = plain
        other.setHeader("Accept-Profile", "other")
        func answer(_ read: DataRequest, _ table: String, _ operation: RowChange.Operation) -> OverlayAnswer {
            let change = RowChange(position: 1, table: table, key: "k", operation: operation)
            return overlay.answer(read, cachedBody: cached, writes: [OverlayWrite(change: change)])
        }
        let renamed = RowChange.Operation.upsert(row: #"{"key":"k","title":"new"}"#)
        #expect(answer(other, "other.notes", renamed).body == #"[{"key":"k","title":"new"}]"#)
        #expect(answer(other, "other.notes", .delete).body == "[]")
        // Another table's row cannot touch this table's answer: it stays, and stays exact.
        #expect(answer(plain, "other.notes", renamed).body == cached && answer(plain, "other.notes", renamed).isExact)
        #expect(answer(plain, "other.notes", .delete).body == cached)
        // The default schema's table, named with its schema or without.
        #expect(answer(plain, "notes", .delete).body == "[]")
        #expect(answer(plain, "public.notes", renamed).body == #"[{"key":"k","title":"new"}]"#)
        #expect(answer(other, "notes", .delete).body == cached)
    }
}
