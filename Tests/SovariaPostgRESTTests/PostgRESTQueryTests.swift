import Foundation
import SovariaQueue
import Testing

@testable import SovariaPostgREST

/// Taking a read's query apart: at bytes, as PostgREST does, with the column and whitespace rules
/// Foundation's character walks gave before.
@Suite struct PostgRESTQueryTests {
    @Test func aQueryIsSplitAtItsAmpersandsAndFirstEqualsSign() {
        let query = PostgRESTQuery(path: "/rest/v1/items?select=id,name&qty=eq.a=b&&order=id.desc&limit=3")
        #expect(query.columns == ["id", "name"])
        #expect(query.filters.map(\.column) == ["qty"])
        #expect(query.filters.map(\.operand) == ["a=b"])
        #expect(query.order.map(\.column) == ["id"])
        #expect(query.order.map(\.descending) == [true])
        #expect(query.limit == 3)
        #expect(query.unsupported.isEmpty)
        #expect(PostgRESTQuery(path: "/rest/v1/items").filters.isEmpty)
        // A name without `=` has an empty value: PostgREST's parse error for a filter.
        #expect(!PostgRESTQuery(path: "/rest/v1/items?qty").unsupported.isEmpty)
    }

    /// A `&` followed by a combining mark is one Character to Swift and still a separator to
    /// PostgREST, which splits the query's bytes.
    @Test func anAmpersandACombiningMarkFollowsStillSeparates() {
        let query = PostgRESTQuery(path: "/rest/v1/items?qty=eq.1&\u{301}name=eq.x")
        #expect(query.filters.map(\.column) == ["qty", "\u{301}name"])
        #expect(query.filters.first?.operand == "1")
    }

    /// Every delimiter of a filter, an order, a `select`, a list and a logic tree is still one
    /// when a combining mark follows it: PostgREST reads code points, where Swift's `Character`
    /// joins the two (and walked past the delimiter, or dropped the mark with `not.`).
    @Test func eachDelimiterACombiningMarkFollowsIsStillOne() throws {
        let mark = "\u{301}"
        // `not.` and then an operator PostgREST does not know: its 400, never a negated `eq`.
        #expect(PostgRESTQuery.condition("qty", "not.\(mark)eq.5") == nil)
        #expect(!PostgRESTQuery(path: "/rest/v1/items?qty=not.\(mark)eq.5").unsupported.isEmpty)
        // An operand that begins with the mark keeps it.
        let operand = try #require(PostgRESTQuery.condition("name", "eq.\(mark)x"))
        #expect(operand.op == .eq && operand.operand.unicodeScalars.elementsEqual("\(mark)x".unicodeScalars))
        let negated = try #require(PostgRESTQuery.condition("name", "not.eq.\(mark)x"))
        #expect(negated.negated && negated.operand.unicodeScalars.elementsEqual("\(mark)x".unicodeScalars))
        let quantified = try #require(PostgRESTQuery.condition("name", "eq(any).{a,b}"))
        #expect(quantified.op == .eq && quantified.quantifier == .any && quantified.operand == "{a,b}")
        #expect(PostgRESTQuery.condition("name", "eq(any)(all).{a}") == nil, "one modifier, not two")
        // The operator of a server-only filter ends at the `.`.
        #expect(PostgRESTQuery.serverOnlyReason("body", "fts.\(mark)x") == .fullTextSearch(column: "body"))
        #expect(PostgRESTQuery.serverOnlyReason("body", "not.\(mark)fts.x") == nil)
        // An order term's modifier after `.` and a mark: not one PostgREST knows (its 400).
        #expect(
            PostgRESTQuery(path: "/rest/v1/items?order=id.\(mark)desc").unsupported.contains {
                if case .refusedRead = $0 { true } else { false }
            })
        let twoTerms = PostgRESTQuery(path: "/rest/v1/items?order=id,\(mark)name")
        #expect(twoTerms.order.map { Array($0.column.utf8) } == [Array("id".utf8), Array("\(mark)name".utf8)])
        // Two `select` columns, an alias and a JSON path.
        let columns = PostgRESTQuery(path: "/rest/v1/items?select=id,\(mark)name").columns
        #expect(columns?.map { Array($0.utf8) } == [Array("id".utf8), Array("\(mark)name".utf8)])
        let items = try #require(PostgRESTQuery.selectItems(["a:\(mark)id", "data->\(mark)key"]))
        #expect(Array(items[0].column.utf8) == Array("\(mark)id".utf8) && items[0].name == "a")
        #expect(items[1].column == "data" && items[1].path.map { Array($0.key.utf8) } == [Array("\(mark)key".utf8)])
        // A list's items.
        let list = PostgRESTQuery.Condition(
            column: "id", negated: false, op: .in, operand: "(a,\(mark)b)", condition: "")
        #expect(list.listItems?.map { Array($0.utf8) } == [Array("a".utf8), Array("\(mark)b".utf8)])
        let quoted = PostgRESTQuery.Condition(
            column: "id", negated: false, op: .in, operand: "(\"\(mark)a,b\")", condition: "")
        #expect(quoted.listItems?.map { Array($0.utf8) } == [Array("\(mark)a,b".utf8)])
        // A logic tree's condition and its quoted operand.
        for (value, expected) in [("(name.eq.\(mark)x)", "\(mark)x"), ("(name.eq.\"\(mark)a,b\")", "\(mark)a,b")] {
            guard case .any(let trees, _)? = LogicTreeParser.parse("or", value),
                case .condition(let condition)? = trees.first
            else {
                Issue.record("\(value) is not one condition")
                continue
            }
            #expect(condition.column == "name" && Array(condition.operand.utf8) == Array(expected.utf8), "\(value)")
        }
        #expect(LogicTreeParser.parse("or", "(name.\(mark)eq.x)") == nil)
    }

    /// A write's filters are read as a read's are: split at bytes, `+` a space.
    @Test func aWritesFiltersAreReadAsAReadsAre() {
        let api = PostgREST()
        #expect(api.equalValue(of: "id", in: "/rest/v1/items?id=eq.a+b%2Bc") == "a b+c")
        #expect(api.equalValue(of: "id", in: "/rest/v1/items?qty=eq.1&\u{301}id=eq.2") == nil)
        #expect(api.filters(on: "\u{301}id", in: "/rest/v1/items?qty=eq.1&\u{301}id=eq.2"))
        #expect(api.equalValue(of: "\u{301}id", in: "/rest/v1/items?qty=eq.1&\u{301}id=eq.2") == "2")
        #expect(api.pagesRows(DataRequest(method: "GET", path: "/rest/v1/items?id=eq.1&limit=1")))
        #expect(api.pagesRows(DataRequest(method: "GET", path: "/rest/v1/items?films.offset=1")))
        #expect(!api.pagesRows(DataRequest(method: "GET", path: "/rest/v1/items?id=eq.limit&x=offset")))
        // An `=` a combining mark follows still ends the name `limit`; `+` in a name is a space.
        #expect(api.pagesRows(DataRequest(method: "GET", path: "/rest/v1/items?limit=\u{301}1")))
        #expect(api.filters(on: "a b", in: "/rest/v1/items?a+b=eq.1"))
        #expect(api.removingFilters(on: "a b", from: "/rest/v1/items?a+b=eq.1&id=eq.2") == "/rest/v1/items?id=eq.2")
    }

    @Test func aPlainColumnHasNoAliasCastPathOrEmbedding() {
        for plain in ["id", "field-with_sep", "a-b-c", "é", "x>y", "-", ">"] {
            #expect(PostgRESTQuery.isPlainColumn(plain), "\(plain)")
        }
        for notPlain in ["", "a:b", "a::text", "f(x)", "a!inner", "*", "data->key", "data->>key", "or", "and", "not"] {
            #expect(!PostgRESTQuery.isPlainColumn(notPlain), "\(notPlain)")
        }
    }

    /// The fast path answers as Foundation's `trimmingCharacters(in: .whitespaces)` does, for
    /// ASCII ends and for the Unicode spaces it asks Foundation about.
    @Test func whitespaceIsTrimmedAsFoundationTrimsIt() {
        let texts = [
            "id", " id", "id ", "\tid\t", "  ", "", "\u{A0}id", "id\u{3000}", "é", "\u{301}", "a b", "\nid\n",
            "id\u{2003}",
        ]
        for text in texts {
            #expect(
                PostgRESTQuery.trimmingWhitespace(Substring(text)) == text.trimmingCharacters(in: .whitespaces),
                "\(text.debugDescription)")
        }
        #expect(PostgRESTQuery(path: "/rest/v1/items?select=%20id%20,name").columns == ["id", "name"])
    }
}
