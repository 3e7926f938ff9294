import Foundation
import SovariaQueue
import SovariaSync
import SovariaTestKit
import Testing

@testable import SovariaPostgREST

/// `or=`/`and=` (issue 61): evaluated as PostgreSQL's three-valued logic, and anything PostgREST
/// refuses is a typed reason, never a crash.
@Suite struct LogicTreeTests {
    let overlay = PostgRESTOverlay(
        tables: ["items": .init(primaryKey: "id", columns: ["id", "name", "qty"])], textOrder: .bytes)

    static let everyRow =
        #"[{"id":1,"name":"a","qty":1},{"id":2,"name":"b","qty":null},{"id":3,"name":null,"qty":3}]"#

    func answer(_ query: String) -> OverlayAnswer {
        overlay.answer(
            DataRequest(method: "GET", path: "/rest/v1/items?" + query), cachedBody: nil, writes: [],
            related: [
                RelatedAnswer(read: DataRequest(method: "GET", path: "/rest/v1/items?select=*"), body: Self.everyRow)
            ])
    }

    func ids(_ answer: OverlayAnswer) throws -> [Int] {
        let rows = try #require(
            try JSONSerialization.jsonObject(with: Data((answer.body ?? "").utf8)) as? [[String: Any]])
        return rows.compactMap { $0["id"] as? Int }
    }

    @Test func nestedTreesWithNotAreEvaluatedAsPostgreSQLDoes() throws {
        let either = answer("select=id&or=(id.eq.1,qty.gt.2)&order=id")
        #expect(try either.isExact && ids(either) == [1, 3])
        let nested = answer("select=id&and=(id.gte.1,not.or(name.eq.a,qty.eq.3))&order=id")
        // Row 2: name.eq.a is false, qty.eq.3 null (qty is null): NOT (false OR null) is null.
        #expect(try nested.isExact && ids(nested) == [])
        let withName = answer("select=id&and=(id.gte.1,not.or(name.eq.a,name.eq.c))&order=id")
        #expect(try withName.isExact && ids(withName) == [2])
        // NOT of a null stays null: row 2 (qty null) is in neither answer.
        let negated = answer("select=id&not.or=(qty.lt.2)&order=id")
        #expect(try negated.isExact && ids(negated) == [3])
        let spaced = answer("select=id&or=( and ( id.in.( 1, 2 ) , name.eq.b ) , id.eq.3 )&order=id")
        #expect(try spaced.isExact && ids(spaced) == [2, 3])
    }

    @Test func whatPostgRESTRefusesIsATypedReason() {
        for malformed in [
            "or=()", "or=(id.eq.1", "or=id.eq.1", "or=(id.foo.1)", "and=(id)",
            "or=(and(id.eq.1),)", "or=(name.eq.\"a)", "or=(not.and())",
        ] {
            let answer = answer("select=id&" + malformed)
            #expect(!answer.isExact, "\(malformed)")
            #expect(
                answer.inexactReasons.contains { if case .refusedRead = $0 { true } else { false } }, "\(malformed)")
        }
    }

    @Test func serverOnlyOperatorsInsideATreeAreNamed() {
        let search = answer("select=id&or=(id.eq.1,name.fts.foo)")
        #expect(search.inexactReasons == [.fullTextSearch(column: "name")])
        let regex = answer("select=id&and=(id.eq.1,or(name.imatch.^a))")
        #expect(regex.inexactReasons == [.regularExpression(column: "name")])
    }

    /// Random text made of the tree's own characters never crashes the parser, and what it
    /// accepts answers as an exact list or names a reason.
    @Test func randomTreesNeverCrash() {
        var seeded = SplitMix(seed: 61)
        let pieces = ["(", ")", ",", ".", "not.", "and", "or", "id", "name", "eq", "in", "1", "\"", "{", "}", " "]
        for _ in 0..<3000 {
            let length = Int(seeded.next() % 12) + 1
            let value = (0..<length).map { _ in pieces[Int(seeded.next() % UInt64(pieces.count))] }.joined()
            let key = seeded.next() % 2 == 0 ? "or" : "not.and"
            let answer = answer("select=id&" + key + "=" + value)
            #expect(answer.isExact || !answer.inexactReasons.isEmpty)
        }
    }

}
